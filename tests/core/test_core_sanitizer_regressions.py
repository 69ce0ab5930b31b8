"""Inputs found by running the engine under ASan/UBSan with tools/engine_garbage.py (tools/sanitize.sh).

Rack ids index lookup tables in the rack-aware sticky code (sized by the largest id). A single stray id
such as 2^31-1 made a two-partition sticky group allocate ~12 GB (MemoryError, or the OOM killer);
300,000,000 took 10 s and 4.6 GB. Rack ids are dense, so prepare() now rejects any id above
M + (replica rack entries), the most distinct racks a group can name.
"""
from __future__ import annotations

import pytest

import kafkagroup
from kafkagroup.errors import InvalidGroupError

STRATEGIES = ["range", "roundrobin", "sticky", "cooperative-sticky"]


def two_members(member_rack, replica_racks):
    # t0 with 2 partitions, one replica each: M + replica entries = 4 is the largest dense id.
    return dict(partition_count=[2], sub_offsets=[0, 1, 2], sub_topics=[0, 0], member_rack=member_rack,
                replica_offsets=[0, 1, 2], replica_racks=replica_racks)


@pytest.mark.parametrize("strategy", STRATEGIES)
@pytest.mark.parametrize("rack", [5, 300_000_000, 2**31 - 1])
def test_member_rack_id_beyond_dense_range_is_rejected(strategy, rack):
    with pytest.raises(InvalidGroupError, match=f"member 1: rack id {rack} is not dense \\(at most 4,"):
        kafkagroup.assign_arrays(strategy, **two_members([1, rack], [1, 1]))


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_replica_rack_id_beyond_dense_range_is_rejected(strategy):
    with pytest.raises(InvalidGroupError, match="replica_racks: rack id 2147483647 is not dense .*entry 1\\)"):
        kafkagroup.assign_arrays(strategy, **two_members([1, 2], [1, 2**31 - 1]))


def test_member_racks_alone_bound_is_member_count():
    args = dict(partition_count=[2], sub_offsets=[0, 1, 2], sub_topics=[0, 0])
    assert kafkagroup.assign_arrays("sticky", **args, member_rack=[2, 1]).metrics.unassigned == 0
    with pytest.raises(InvalidGroupError, match="member 0: rack id 3 is not dense \\(at most 2,"):
        kafkagroup.assign_arrays("sticky", **args, member_rack=[3, 1])


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_largest_dense_rack_id_is_accepted_and_matched(strategy):
    # Members on racks 4 and 3; partition 0 only on rack 3, partition 1 only on rack 4: every strategy
    # that is rack aware puts each partition on its rack (range and the sticky assignors do; roundrobin
    # ignores racks and deals 0 -> member 0).
    r = kafkagroup.assign_arrays(strategy, **two_members([4, 3], [3, 4]))
    assert r.metrics.unassigned == 0
    expected = [0, 1] if strategy == "roundrobin" else [1, 0]
    assert r.owner.tolist() == expected


def test_group_api_rack_names_stay_valid():
    # kafkagroup.model interns rack names densely: every id is within the bound.
    topics = {"t": [["r9"], ["r8"], ["r7"]]}
    members = {"C0": {"topics": ["t"], "rack": "r1"}, "C1": {"topics": ["t"], "rack": "r7"}}
    r = kafkagroup.assign("sticky", topics, members)
    assert sorted(p for parts in r.assignment.values() for _, p in parts) == [0, 1, 2]
