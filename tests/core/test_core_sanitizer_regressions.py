"""Inputs found by running the engine under ASan/UBSan with tools/engine_garbage.py (tools/sanitize.sh).

Rack ids index lookup tables in the rack-aware sticky code (sized by the largest id). One member on rack
2^31-1 made a two-partition sticky group allocate ~12 GB (MemoryError, or the OOM killer); rack
300,000,000 took 10 s and 4.6 GB. Such ids are legitimate input (the array API takes any id >= 1, and
kafkagroup.spark.change keeps the ids of the members it does not remove), so the engine renumbers ids
that no dense interning would produce, keeping their order: the assignment must not change.
"""
from __future__ import annotations

import resource

import numpy as np
import pytest

import kafkagroup

STRATEGIES = ["range", "roundrobin", "sticky", "cooperative-sticky"]


def max_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rack_group(seed: int, uniform: bool) -> dict:
    """8 members on racks 1..3 (some without rack), 3 topics, every partition on 1-2 racks, half the
    partitions claimed by their previous owner."""
    rng = np.random.default_rng(seed)
    counts = np.array([5, 7, 4], np.int32)
    P, M = int(counts.sum()), 8
    subs = [np.arange(3) if uniform else np.sort(rng.permutation(3)[: rng.integers(1, 4)]) for _ in range(M)]
    base = np.concatenate([[0], np.cumsum(counts)])
    owned = [[] for _ in range(M)]
    for part in range(P):
        t = int(np.searchsorted(base, part, side="right") - 1)
        holders = [m for m in range(M) if t in subs[m]]
        if holders and rng.random() < 0.5:
            owned[int(rng.choice(holders))].append(part)
    replica_len = rng.integers(1, 3, size=P)
    return dict(partition_count=counts, sub_offsets=np.concatenate([[0], np.cumsum([len(s) for s in subs])]),
                sub_topics=np.concatenate(subs).astype(np.int32),
                owned_offsets=np.concatenate([[0], np.cumsum([len(o) for o in owned])]),
                owned_partitions=np.array([p for o in owned for p in o], np.int32),
                generation=np.ones(M, np.int32), member_rack=rng.integers(0, 4, size=M).astype(np.int32),
                replica_offsets=np.concatenate([[0], np.cumsum(replica_len)]),
                replica_racks=rng.integers(1, 4, size=int(replica_len.sum())).astype(np.int32))


# Order-preserving maps of racks 1, 2, 3 onto ids no dense interning produces (0 stays "no rack").
SPREADS = [(5, 6, 7), (1000, 300_000_000, 2**31 - 1), (2**31 - 3, 2**31 - 2, 2**31 - 1)]


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("uniform", [True, False])
@pytest.mark.parametrize("spread", SPREADS)
@pytest.mark.parametrize("seed", range(4))
def test_sparse_rack_ids_assign_like_dense_ones(strategy, uniform, spread, seed):
    dense = rack_group(seed, uniform)
    lookup = np.array([0, *spread], np.int64)
    sparse = dict(dense, member_rack=lookup[dense["member_rack"]], replica_racks=lookup[dense["replica_racks"]])
    rss_before = max_rss_mb()
    got, want = kafkagroup.assign_arrays(strategy, **sparse), kafkagroup.assign_arrays(strategy, **dense)
    assert got.owner.tolist() == want.owner.tolist()
    assert got.withheld.tolist() == want.withheld.tolist()
    assert got.metrics == want.metrics
    assert max_rss_mb() - rss_before < 256  # the tables stay sized by the input, not by the ids


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_one_member_on_rack_2_pow_31_minus_1(strategy):
    # The minimal input the garbage driver reduced to: 2 partitions, 2 members, one replica each.
    rss_before = max_rss_mb()
    r = kafkagroup.assign_arrays(strategy, partition_count=[2], sub_offsets=[0, 1, 2], sub_topics=[0, 0],
                                 member_rack=[1, 2**31 - 1], replica_offsets=[0, 1, 2], replica_racks=[1, 2**31 - 1])
    # partition 0 lives on rack 1 (member 0), partition 1 on rack 2^31-1 (member 1); roundrobin ignores racks
    assert r.owner.tolist() == [0, 1]
    assert max_rss_mb() - rss_before < 256


def test_removed_members_keep_their_rack_ids():
    # What kafkagroup.spark.change builds after removing members: the survivor keeps rack id 2.
    r = kafkagroup.assign_arrays("sticky", partition_count=[3], sub_offsets=[0, 1], sub_topics=[0],
                                 member_rack=[2], replica_offsets=[0, 1, 2, 3], replica_racks=[1, 2, 2])
    assert r.owner.tolist() == [0, 0, 0]
