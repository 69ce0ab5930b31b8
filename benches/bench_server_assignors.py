"""Kafka 4's server-side assignors: kafkagroup's server-uniform / server-range vs Apache Kafka 4.4.0's own
UniformAssignor / RangeAssignor (kafka-group-coordinator, called in-process by
kafkagroup/bench/java/ServerAssignorDriver.java in one warm JVM, which times the assign() call itself).

The grid follows Kafka's ServerSideAssignorBenchmark axes: members x partitions per member x topics,
homogeneous / heterogeneous subscriptions, full / incremental assignment. Heterogeneous: member i subscribes
to the topics t with t % 4 != i % 4 (three quarters of the topics, overlapping). Incremental: the previous
target assignment is kafkagroup's full result for the same group, and one new member joins (both sides get that
same input). Partitions are spread evenly over the topics.

Incremental rows also time the whole call with the previous targets in Kafka's compact form ("x py {}":
``{"owned": {topic: set of partitions}}``, what Kafka's coordinator keeps) beside the (topic, partition) pairs.
Each row reports our engine call (assign_arrays, pytest-benchmark median; a homogeneous group passes its one
subscription row, ``arrays(shared=True)``, as Kafka's homogeneous builder reads one member's), the whole call from Python with
names (kafkagroup.assign, median), Kafka's assign() median, the ratios, and spread / moves of both results.
Two calls of ours are timed: the default one ("engine", "python": with the result's metrics, so server-range reads and
checks every previous claim to count moves) and the lean one ("lean", "py lean": ``metrics=False``, what Kafka's
interface answers and what kafkagroup's coordinator calls through ServerAssignor.assign; server-range then never
reads the previous target, as Kafka's RangeAssignor never does). "x" columns are Kafka's time over ours.
Each side is timed while the other is idle: ours after the JVM has gone quiet (kafkagroup.bench.idle: it
compiles and collects for seconds after a call), Kafka's while this process waits on its answer.
The full grid (members 100-10,000; 5, 10, 50 partitions per member; 10, 100, 1,000 topics) is
KAFKAGROUP_SERVER_GRID=full; the default is a reduced grid for a shared machine (members 100, 1,000, 10,000;
10 partitions per member; 10, 100, 1,000 topics). Rows whose topics outnumber the partitions are skipped.
"""
from __future__ import annotations

import itertools
import os
import statistics
import time

import pytest

import kafkagroup
from kafkagroup.bench.java_peer import JavaUnavailable
from kafkagroup.bench.server_java import KafkaServerAssignors

FULL = os.environ.get("KAFKAGROUP_SERVER_GRID") == "full"
MEMBERS = (100, 500, 1000, 5000, 10000) if FULL else (100, 1000, 10000)
RATIOS = (5, 10, 50) if FULL else (10,)
TOPICS = (10, 100, 1000)
GRID = [(m, r, t, sub, kind) for m, r, t in itertools.product(MEMBERS, RATIOS, TOPICS)
        for sub in ("homogeneous", "heterogeneous") for kind in ("full", "incremental")
        if m * r >= t and m * r <= 500_000]
ROWS: list[dict] = []


@pytest.fixture(scope="module")
def kafka():
    try:
        driver = KafkaServerAssignors()
    except JavaUnavailable as e:
        pytest.skip(f"Kafka 4's assignors {e}")
    with driver:
        yield driver
    print_table()


def make_group(members: int, ratio: int, topics: int, sub: str) -> tuple[dict[str, int], dict[str, dict]]:
    total = members * ratio
    names = [f"topic-{t:04d}" for t in range(topics)]
    counts = {name: total // topics + (1 if t < total % topics else 0) for t, name in enumerate(names)}
    group = {}
    for i in range(members):
        subs = names if sub == "homogeneous" else [n for t, n in enumerate(names) if t % 4 != i % 4]
        group[f"member-{i:05d}"] = {"topics": subs}
    return counts, group


def kafka_measures(assignment: dict[str, list], members: dict[str, dict]) -> tuple[int, int]:
    loads = [len(assignment.get(m, ())) for m in members]
    new_owner = {tuple(tp): m for m, tps in assignment.items() for tp in tps}
    moves = sum(1 for m, s in members.items() for tp in s.get("owned", ()) if new_owner.get(tuple(tp)) != m)
    return max(loads) - min(loads), moves


def _by_topic(pairs: list[tuple[str, int]]) -> dict[str, set[int]]:
    owned: dict[str, set[int]] = {}
    for topic, partition in pairs:
        owned.setdefault(topic, set()).add(partition)
    return owned


def python_call_ms(strategy, topics, members, rounds=7, **options) -> float:
    kafkagroup.assign(strategy, topics, members, **options)   # warm-up, as Kafka's side has
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        kafkagroup.assign(strategy, topics, members, **options)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def engine_call_ms(strategy, arrays, rounds=7) -> float:
    """The lean engine call (assign_arrays with metrics=False), median of `rounds` after a warm-up."""
    kafkagroup.assign_arrays(strategy, **arrays, metrics=False)
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        kafkagroup.assign_arrays(strategy, **arrays, metrics=False)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


@pytest.mark.parametrize("strategy", ["server-uniform", "server-range"])
@pytest.mark.parametrize("members,ratio,topics,sub,kind", GRID)
def test_server_assignor(benchmark, kafka, strategy, members, ratio, topics, sub, kind):
    counts, group = make_group(members, ratio, topics, sub)
    if kind == "incremental":
        first = kafkagroup.assign(strategy, counts, group)
        group = {m: dict(spec, owned=[(tp.topic, tp.partition) for tp in first.assignment[m]]) for m, spec in group.items()}
        template = next(iter(group.values()))["topics"]
        group["member-new"] = {"topics": list(template)}
    compact = None
    if kind == "incremental":   # the same previous targets in Kafka's own form, topic -> set of partitions
        compact = {m: dict(spec, owned=_by_topic(spec["owned"])) if "owned" in spec else spec for m, spec in group.items()}
    arrays = kafkagroup.build_group(counts, group).arrays(shared=True)   # a homogeneous group: its row once
    kafka.settle()   # the JVM's JIT and collector finish the last row's work before ours is timed
    result = benchmark.pedantic(kafkagroup.assign_arrays, args=(strategy,), kwargs=arrays, rounds=5, warmup_rounds=1)
    ours_ms = benchmark.stats.stats.median * 1000
    lean_ms = engine_call_ms(strategy, arrays)
    py_ms = python_call_ms(strategy, counts, group)
    lean_py_ms = python_call_ms(strategy, counts, group, metrics=False)
    compact_ms = python_call_ms(strategy, counts, compact) if compact is not None else None
    reply = kafka.assign(strategy, counts, group, warmup=2, rounds=3)
    kafka_ms = statistics.median(reply.nanos) / 1e6
    k_spread, k_moves = kafka_measures(reply.assignment, group)
    m = result.metrics
    ROWS.append(dict(strategy=strategy, members=members, partitions=members * ratio, topics=topics, sub=sub, kind=kind,
                     ours_ms=ours_ms, lean_ms=lean_ms, py_ms=py_ms, lean_py_ms=lean_py_ms, compact_ms=compact_ms, kafka_ms=kafka_ms, ours_spread=m.max_load - m.min_load,
                     kafka_spread=k_spread, ours_moves=m.moved, kafka_moves=k_moves))


def print_table() -> None:
    if not ROWS:
        return
    lines = ["", "Kafka 4 server assignors: kafkagroup vs Kafka 4.4.0 (same run, medians; ms)",
             f"{'strategy':15} {'members':>7} {'parts':>7} {'topics':>6} {'subs':13} {'kind':11} {'engine':>8} "
             f"{'lean':>8} {'python':>8} {'py lean':>8} {'kafka':>9} {'x engine':>9} {'x lean':>8} {'x python':>9} "
             f"{'x py lean':>9} {'x py {}':>8} {'spread us/k':>11} {'moves us/k':>13}"]
    for r in ROWS:
        compact = f"{r['kafka_ms'] / r['compact_ms']:>7.1f}x" if r.get("compact_ms") else f"{'-':>8}"
        lines.append(f"{r['strategy']:15} {r['members']:>7,} {r['partitions']:>7,} {r['topics']:>6,} {r['sub']:13} "
                     f"{r['kind']:11} {r['ours_ms']:>8.3f} {r['lean_ms']:>8.3f} {r['py_ms']:>8.2f} {r['lean_py_ms']:>8.2f} "
                     f"{r['kafka_ms']:>9.3f} {r['kafka_ms'] / r['ours_ms']:>8.1f}x {r['kafka_ms'] / r['lean_ms']:>7.1f}x "
                     f"{r['kafka_ms'] / r['py_ms']:>8.1f}x {r['kafka_ms'] / r['lean_py_ms']:>8.1f}x {compact} "
                     f"{r['ours_spread']:>5}/{r['kafka_spread']:<5} {r['ours_moves']:>6}/{r['kafka_moves']:<6}")
    text = "\n".join(lines)
    print(text)
    out = os.environ.get("KAFKAGROUP_SERVER_BENCH_OUT")
    if out:
        with open(out, "w") as f:
            f.write(text + "\n")
