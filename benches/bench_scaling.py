"""Sticky and cooperative-sticky from 10k to 16M partitions, each next to the memory floor and franz-go.

The floor ("memory pass"): read P int32 (the claims, or any P-entry input) and write P int32 owners into a
newly allocated array, in this process, with numpy (``conftest.memory_pass``: the engine's allocator, so
pages are reused or faulted in as for the engine's own arrays); no assignor can return owner[P] for less. Every row prints "x floor" = our median / the floor's median at the same P, measured in the
same run.

Shapes (uniform subscriptions, every member on every topic; ANCHORS.md's rows where they exist):
100 = 10 topics x 10 partitions, 10 members (most real groups: the per-call fixed cost); 1k = 10 x 100,
20 members; 10k = 100 topics x 100 partitions, 100 members; 100k = 100 x 1,000, 1,000 members; 1M = 500 x 2,000,
2,000 members; 4M = 2,000 x 2,000, 8,000 members; 16M = 8,000 x 2,000, 8,000 members (16M only with
KAFKAGROUP_BENCH_16M=1: ~1.5 GB of inputs). "fresh": nobody owns anything; "churn": 10% of the members
left after a settled sticky generation, the rest claim what they were given (generation 1).

Input size, to compare like with like: the floor reads P int32. The CSR rows hand the engine every
member's subscription as well, M x topics int32 (4M: 8,000 x 2,000 = 16M entries, 64 MB, four times the
floor's input; prepare() must read them all to validate them), plus the claims after churn. The "one
shared row" rows pass the same group in the homogeneous form (``num_members``, one subscription row,
Kafka's HOMOGENEOUS subscription type), whose input is the floor's: P claims at most and T topic ids.
So only the shared-row rows can come within 2x the floor at 4M-16M; the CSR rows pay for reading their
larger input (at 4M fresh, prepare()'s read of the 64 MB of subscriptions is ~1M of the call's ~1.26M
cache misses in callgrind with a 4 MB last-level cache).

After churn, with clean claims (no partition named twice, every topic subscribed, no racks: what this bench's
churn and a settled group send), the call reads the claims once and writes owner[] once into fresh memory, the
floor's two streams: the claims, read forward as they lie in memory, become a list of runs of consecutive
partitions (sticky/claim_runs.cpp: ~16,000 runs at 4M), sorted, which the keep-and-hand-out walk takes run by
run (sticky/clean_claims.cpp; interleaved claims, runs shorter than 32 on average, go through cache-resident
windows of 16,384 partitions instead). prepare() leaves the claims' range check to it. The shared-row rows
come within 1.1-1.6x the floor there; the CSR rows also read M x topics subscriptions (4x the floor's input at
4M), which no order of passes avoids: each CSR row also prints "x input pass", its time over one pass that
reads those subscription ids besides the floor's P claims and writes P owners (``conftest.input_pass_ms``). Claims that are not clean take the general path: previous_owners()
records them in prev_owner[], the uniform builder reads it back and writes owner[] over it
(sticky/stretch_writer.hpp), three P-sized streams besides the claims' reads.

Peers, in the same run:
- franz-go's sticky balancer (pkg/kgo/internal/sticky, ``Balance``), when KAFKAGROUP_FRANZ_BENCH names the
  driver built by ``tools/franz_peer/build.sh`` (a temp copy of the module from the Go module proxy, outside
  the repository). The driver times ``Balance`` alone (input decoded before, one warm-up, then as many rounds as ours).
  Without it the row says so and uses ANCHORS.md's figure, marked as such.
- kafka-python 3.0.12's StickyPartitionAssignor at 10k only (capped, KAFKAGROUP_PEER_CAP_S, default 20 s;
  it takes > 60 s from 100k on, ANCHORS.md); Java's figures are ANCHORS.md's, not this run.
"""
from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest
from conftest import input_pass_ms, memory_pass_ms, time_peer

import kafkagroup
from kafkagroup.scenarios import next_generation, uniform_group

CAP_S = float(os.environ.get("KAFKAGROUP_PEER_CAP_S", "20"))
FRANZ = os.environ.get("KAFKAGROUP_FRANZ_BENCH")
# name -> (topics, partitions per topic, members)
SHAPES = {"100": (10, 10, 10), "1k": (10, 100, 20), "10k": (100, 100, 100), "100k": (100, 1000, 1000), "1M": (500, 2000, 2000), "4M": (2000, 2000, 8000)}
if os.environ.get("KAFKAGROUP_BENCH_16M") == "1":
    SHAPES["16M"] = (8000, 2000, 8000)
# ANCHORS.md (2026-11-23, sticky): (franz-go ms, Java ms) per (shape, kind); None where it has no row
ANCHOR = {("10k", "fresh"): ("0.84", "1.46"), ("1M", "fresh"): ("157", "150"), ("4M", "fresh"): ("1,963", "2,191"),
          ("4M", "churn"): ("14,781", "5,570")}
ROUNDS = {"100": 501, "1k": 201, "10k": 51, "100k": 21, "1M": 7, "4M": 5, "16M": 3}


def _group(shape: str, kind: str):
    topics, partitions, members = SHAPES[shape]
    group = uniform_group(topics=topics, partitions=partitions, members=members)
    if kind == "churn":
        settled = kafkagroup.assign_arrays("sticky", **group.arrays())
        group = next_generation(group, settled.owner, remove=members // 10, generation=1, seed=3)
    return group


def franz_go_ms(group, rounds: int) -> float | str:
    """Median ms of franz-go's sticky Balance on `group` (cooperative members: owned partitions with their
    generation), through the driver named by KAFKAGROUP_FRANZ_BENCH; a string when not available."""
    if not FRANZ:
        return "not run (KAFKAGROUP_FRANZ_BENCH unset)"
    base = group.topic_base
    members = []
    for i, mid in enumerate(group.members):
        subs = group.sub_topics[group.sub_offsets[i]:group.sub_offsets[i + 1]].tolist()
        owned = np.zeros((0, 2), dtype=np.int64)
        if group.owned_offsets is not None:
            parts = group.owned_partitions[group.owned_offsets[i]:group.owned_offsets[i + 1]].astype(np.int64)
            t = np.searchsorted(base, parts, side="right") - 1
            owned = np.stack([t, parts - base[t]], axis=1)
        gen = int(group.generation[i]) if group.generation is not None else -1
        members.append({"id": mid, "topics": subs, "owned": owned.tolist(), "gen": gen})
    payload = json.dumps({"topics": group.topics, "counts": group.partition_count.tolist(), "members": members,
                          "rounds": rounds})
    out = subprocess.run([FRANZ], input=payload, capture_output=True, text=True, check=True)
    answer = json.loads(out.stdout)
    assert answer["assigned"] == int(group.partition_count.sum()), "franz-go left partitions unassigned"
    return float(answer["median_ms"])


CASES = [(s, k) for s in SHAPES for k in ("fresh", "churn")]


@pytest.mark.parametrize("shape,kind", CASES, ids=[f"{s}-{k}" for s, k in CASES])
@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
def test_sticky_scaling(benchmark, report, strategy, shape, kind):
    group = _group(shape, kind)
    arrays = group.arrays()
    partitions = int(group.partition_count.sum())
    result = benchmark.pedantic(lambda: kafkagroup.assign_arrays(strategy, **arrays), rounds=ROUNDS[shape],
                                warmup_rounds=1)
    assert result.metrics.unassigned == 0 and result.metrics.balance_gap == 0
    name = f"{strategy} {shape} x {len(group.members)} {kind}"
    floor = memory_pass_ms(partitions)
    ours = benchmark.stats.stats.median * 1000
    input_floor = f"x input pass {ours / input_pass_ms(arrays['sub_topics'], partitions):.2f}"
    franz, java = ANCHOR.get((shape, kind), ("-", "-"))
    if strategy == "sticky":
        peer = franz_go_ms(group, rounds=ROUNDS[shape])
        note = f"{input_floor}; Java {java} ms (ANCHORS)"
        if isinstance(peer, str):
            note += f"; franz-go {franz} ms (ANCHORS), {peer}"
        report.add(name, benchmark, "franz-go sticky (same run)", peer, 0, note, partitions=partitions)
        if shape == "10k":
            from bench_sticky import KpSticky, kafka_python_inputs

            cluster, kp_members = kafka_python_inputs(group)
            kp = time_peer(lambda: KpSticky().assign(cluster, kp_members), rounds=1, cap_s=CAP_S)
            report.add(name, benchmark, "kafka-python 3.0.12", kp, CAP_S, partitions=partitions)
    else:
        report.add(name, benchmark, "-", "n/a", 0, f"{input_floor}; floor {floor:.3f} ms", partitions=partitions)


@pytest.mark.parametrize("shape,kind", CASES, ids=[f"{s}-{k}" for s, k in CASES])
@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
def test_sticky_scaling_shared_row(benchmark, report, strategy, shape, kind):
    """The same groups in the homogeneous form: one subscription row for every member (see the docstring)."""
    group = _group(shape, kind)
    arrays = group.arrays()
    row = arrays["sub_topics"][arrays["sub_offsets"][0]:arrays["sub_offsets"][1]]
    arrays.update(sub_offsets=None, sub_topics=row, num_members=len(group.members))
    partitions = int(group.partition_count.sum())
    result = benchmark.pedantic(lambda: kafkagroup.assign_arrays(strategy, **arrays), rounds=ROUNDS[shape],
                                warmup_rounds=1)
    assert result.metrics.unassigned == 0 and result.metrics.balance_gap == 0
    report.add(f"{strategy} {shape} x {len(group.members)} {kind}, one shared row", benchmark, "-", "n/a", 0,
               partitions=partitions)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_memory_pass(benchmark, report, shape):
    """The floor itself, as a row of its own (read P int32, write P int32 into a fresh array)."""
    topics, partitions, _ = SHAPES[shape]
    claims = np.arange(topics * partitions, dtype=np.int32)
    benchmark.pedantic(lambda: _pass(claims), rounds=ROUNDS[shape] * 3, warmup_rounds=1)
    report.add(f"memory pass {shape} (read P claims, write P owners, fresh array)", benchmark, "-", "n/a", 0,
               partitions=topics * partitions)


def _pass(claims):
    from conftest import memory_pass

    return memory_pass(claims)
