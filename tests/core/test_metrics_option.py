"""``metrics=False`` (kafkagroup.assign / assign_arrays): the same assignment without the metrics.

Every strategy gives the same owner[] and withheld[] with and without metrics, on random groups with previous
claims (churned, some claims on topics a member left, some duplicated), racks or not; the result's metrics is
then None. server-range without metrics never reads the previous assignment (Kafka's RangeAssignor ignores it):
claims the default call refuses (out of range, held twice, on a topic that does not exist, malformed arrays) are
not even looked at, and the answer is Kafka's (tests/core/test_server_assignors_kafka.py checks it against Kafka's
own class). ServerAssignor.assign -- what kafkagroup's KIP-848 coordinator calls -- makes the lean call and
answers the same target as the default call.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kafkagroup
from kafkagroup.assignors.server import RangeAssignor, ServerMember, UniformAssignor
from kafkagroup.scenarios import next_generation, random_group, to_names

STRATEGIES = tuple(kafkagroup.strategies())


def _racks(rng: np.random.Generator, members: int, partitions: int) -> dict[str, np.ndarray]:
    """Member racks 1..3 (some 0: none) and 1-2 replica racks per partition."""
    per = rng.integers(1, 3, size=partitions)
    offsets = np.zeros(partitions + 1, dtype=np.int64)
    np.cumsum(per, out=offsets[1:])
    return dict(member_rack=rng.integers(0, 4, size=members).astype(np.int32), replica_offsets=offsets,
                replica_racks=rng.integers(1, 4, size=int(offsets[-1])).astype(np.int32))


def _with_stray_claims(arrays: dict, rng: np.random.Generator) -> dict:
    """The arrays with a few claims added: copies of other members' claims (a partition claimed twice) and
    claims on any partition (often on a topic the member does not subscribe to)."""
    offsets, claims = arrays.get("owned_offsets"), arrays.get("owned_partitions")
    members = len(arrays["sub_offsets"]) - 1
    partitions = int(np.sum(arrays["partition_count"]))
    if offsets is None:
        offsets, claims = np.zeros(members + 1, dtype=np.int64), np.zeros(0, dtype=np.int32)
    rows = [list(claims[offsets[m]:offsets[m + 1]]) for m in range(members)]
    for _ in range(int(rng.integers(0, 4))):
        if partitions and members:
            rows[int(rng.integers(0, members))].append(int(rng.integers(0, partitions)))
    lengths = [len(r) for r in rows]
    out = dict(arrays)
    out["owned_offsets"] = np.concatenate(([0], np.cumsum(lengths))).astype(np.int64)
    out["owned_partitions"] = np.array([p for r in rows for p in r], dtype=np.int32)
    return out


@settings(max_examples=150, deadline=None)
@given(topics=st.integers(1, 6), partitions=st.integers(1, 12), members=st.integers(1, 10),
       fraction=st.floats(0.2, 1.0), seed=st.integers(0, 2**31 - 1), rounds=st.integers(0, 2),
       racks=st.booleans(), stray=st.booleans())
def test_same_assignment_without_metrics(topics, partitions, members, fraction, seed, rounds, racks, stray):
    rng = np.random.default_rng(seed)
    for strategy in STRATEGIES:
        group = random_group(topics, partitions, members, fraction=fraction, seed=seed)
        for r in range(rounds + 1):
            arrays = group.arrays()
            if stray:
                arrays = _with_stray_claims(arrays, rng)
            if racks:
                arrays.update(_racks(rng, len(group.members), int(group.partition_count.sum())))
            rack_aware = [False, True] if strategy.startswith("server-") else [False]
            for aware in rack_aware:
                try:
                    full = kafkagroup.assign_arrays(strategy, **arrays, rack_aware=aware)
                except kafkagroup.InvalidGroupError:
                    # (server-uniform refuses a partition held twice; server-range without metrics never looks)
                    if strategy == "server-range":
                        raise
                    with pytest.raises(kafkagroup.InvalidGroupError):
                        kafkagroup.assign_arrays(strategy, **arrays, rack_aware=aware, metrics=False)
                    continue
                lean = kafkagroup.assign_arrays(strategy, **arrays, rack_aware=aware, metrics=False)
                assert lean.metrics is None and full.metrics is not None
                assert lean.owner.tolist() == full.owner.tolist(), (strategy, aware, r)
                assert lean.withheld.tolist() == full.withheld.tolist(), (strategy, aware, r)
            owner = kafkagroup.assign_arrays(strategy, **group.arrays()).owner
            group = next_generation(group, owner, remove=int(rng.integers(0, 2)) if len(group.members) > 1 else 0,
                                    add=int(rng.integers(0, 2)), generation=r + 1, seed=seed + r)


@settings(max_examples=40, deadline=None)
@given(topics=st.integers(1, 5), partitions=st.integers(1, 10), members=st.integers(1, 8), seed=st.integers(0, 10**6))
def test_object_api_same_assignment_without_metrics(topics, partitions, members, seed):
    group = random_group(topics, partitions, members, seed=seed)
    group = next_generation(group, kafkagroup.assign_arrays("range", **group.arrays()).owner, add=1, seed=seed)
    counts, specs = to_names(group)
    for strategy in STRATEGIES:
        full = kafkagroup.assign(strategy, counts, specs)
        lean = kafkagroup.assign(strategy, counts, specs, metrics=False)
        assert lean.metrics is None and full.metrics is not None
        assert dict(lean.assignment) == dict(full.assignment), strategy
        assert lean.withheld == full.withheld


# ---- server-range without metrics ignores the previous assignment -------------------------------------------

GARBAGE = {   # claims the default call refuses, each for its own reason
    "beyond the count": {"A": {"topics": ["t0"], "owned": [("t0", 5)]}, "B": {"topics": ["t0", "t1"]}},
    "held twice": {"A": {"topics": ["t0"], "owned": [("t0", 0), ("t0", 1)]},
                   "B": {"topics": ["t0"], "owned": [("t0", 1)]}},
    "unknown topic": {"A": {"topics": ["t0"], "owned": [("gone", 0)]}, "B": {"topics": ["t0", "t1"]}},
    "negative partition": {"A": {"topics": ["t0", "t1"], "owned": [("t1", -3)]}, "B": {"topics": ["t0"]}},
}


@pytest.mark.parametrize("case", sorted(GARBAGE))
def test_server_range_without_metrics_ignores_garbage_claims(case):
    topics = {"t0": 2, "t1": 2}
    members = GARBAGE[case]
    plain = {m: {"topics": s["topics"]} for m, s in members.items()}   # the same group without any claim
    expected = dict(kafkagroup.assign("server-range", topics, plain).assignment)
    if case != "held twice":   # (range's metrics count a doubly-held partition as the ownership rules say)
        with pytest.raises(kafkagroup.InvalidGroupError):
            kafkagroup.assign("server-range", topics, members)   # strict: the default call refuses the claim
    lean = kafkagroup.assign("server-range", topics, members, metrics=False)
    assert dict(lean.assignment) == expected and lean.metrics is None
    assert lean.dropped == [] and lean.dropped_claims == 0
    # strict=False (a coordinator's call) drops them with metrics; without, there is nothing to drop
    assert dict(kafkagroup.assign("server-range", topics, members, strict=False, metrics=False).assignment) == expected


def test_server_range_arrays_without_metrics_never_read_the_claims():
    arrays = dict(partition_count=np.array([3, 2], dtype=np.int32), sub_offsets=np.array([0, 2, 3], dtype=np.int64),
                  sub_topics=np.array([0, 1, 0], dtype=np.int32))
    expected = kafkagroup.assign_arrays("server-range", **arrays).owner.tolist()
    bad_claims = [
        dict(owned_offsets=np.array([0, 1, 2], dtype=np.int64), owned_partitions=np.array([9, -1], dtype=np.int32)),
        dict(owned_offsets=np.array([0, 5], dtype=np.int64), owned_partitions=np.array([0], dtype=np.int32)),
        dict(owned_offsets=np.array([0, 1, 1], dtype=np.int64), owned_partitions=np.array([0], dtype=np.int32),
             generation=np.array([1, 2, 3, 4], dtype=np.int32)),
    ]
    for claims in bad_claims:
        with pytest.raises(kafkagroup.InvalidGroupError):
            kafkagroup.assign_arrays("server-range", **arrays, **claims)
        lean = kafkagroup.assign_arrays("server-range", **arrays, **claims, metrics=False)
        assert lean.owner.tolist() == expected and lean.metrics is None
        # the homogeneous form too
        shared = kafkagroup.assign_arrays("server-range", partition_count=arrays["partition_count"], sub_offsets=None,
                                          sub_topics=np.array([0, 1], dtype=np.int32), num_members=2, **claims,
                                          metrics=False)
        assert shared.owner.tolist() == [0, 0, 1, 0, 1]


# ---- ServerAssignor.assign: the lean call, the same target ---------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(topics=st.integers(1, 5), partitions=st.integers(1, 10), members=st.integers(1, 8), seed=st.integers(0, 10**6),
       rounds=st.integers(1, 3))
def test_server_assignor_target_unchanged(topics, partitions, members, seed, rounds):
    group = random_group(topics, partitions, members, seed=seed)
    counts, specs = to_names(group)
    members_ = {m: ServerMember(tuple(s["topics"])) for m, s in specs.items()}
    for assignor in (RangeAssignor(), UniformAssignor()):
        previous = None
        for r in range(rounds):
            target = assignor.assign(members_, counts, previous)
            full = assignor.assign_result(members_, counts, previous)
            assert full.metrics is not None
            assert target == assignor._target(full, counts)
            previous = target
            if r == 0:   # a member joins
                members_ = {**members_, "new-member": next(iter(members_.values()))}


def test_range_assignor_ignores_a_previous_target_it_cannot_use():
    topics = {"t0": 4}
    members = {"A": ServerMember(("t0",)), "B": ServerMember(("t0",))}
    previous = {"A": {"t0": {0, 1}}, "B": {"t0": {1, 9}}}   # t0-1 held twice, t0-9 beyond the count
    with pytest.raises(kafkagroup.InvalidGroupError):
        UniformAssignor().assign(members, topics, previous)
    assert RangeAssignor().assign(members, topics, previous) == RangeAssignor().assign(members, topics)
    assert RangeAssignor().assign(members, topics) == {"A": {"t0": frozenset({0, 1})}, "B": {"t0": frozenset({2, 3})}}


class _Unreadable(dict):
    """A previous target that fails the test when anything reads it."""

    def get(self, *args):
        raise AssertionError("the previous target was read")

    __getitem__ = get

    def items(self):
        raise AssertionError("the previous target was read")


def test_range_assignor_target_never_reads_the_previous_target():
    topics = {"t0": 4, "t1": 1}
    members = {"A": ServerMember(("t0", "t1")), "B": ServerMember(("t0",))}
    previous = _Unreadable(A={"t0": {0}})
    assert RangeAssignor().assign(members, topics, previous) == \
        {"A": {"t0": frozenset({0, 1}), "t1": frozenset({0})}, "B": {"t0": frozenset({2, 3})}}
    with pytest.raises(AssertionError, match="the previous target was read"):
        UniformAssignor().assign(members, topics, previous)   # uniform keeps previous targets: it reads them


def test_the_engine_registry_names_the_strategies_that_ignore_claims():
    # one home for the rule (engine.cpp's Entry::ignores_claims): api.py and the server assignors read it from there
    from kafkagroup import engine
    assert engine.IGNORES_PREVIOUS == frozenset({"server-range"})
    assert engine.IGNORES_PREVIOUS <= set(engine.strategies())
