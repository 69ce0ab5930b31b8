"""kafkagroup.assign_many (one native call for many groups) equals assign_arrays group by group.

Random fleets of mixed sizes (static and dynamic members, racks on some groups, owned claims with
generations) are assigned round after round: each round's batch result becomes the next round's
owned claims after seeded churn (members leave, join, change subscriptions), so sticky and
cooperative-sticky run on their own output. Every group must come out exactly as a separate
assign_arrays call gives it (owner, withheld, every metric), and a group with bad arrays must be
reported with assign_arrays' own message while the others are assigned.
"""
from __future__ import annotations

import random
from collections.abc import Mapping

import numpy as np
import pytest

import kafkagroup
from kafkagroup.batch import SKIP_GROUP, GroupBatch, assign_many
from kafkagroup.errors import InvalidGroupError

STRATEGIES = kafkagroup.strategies()


def random_spec(rng: random.Random, g: int) -> tuple[dict, dict]:
    """(partitions_per_topic, members) of one group: mostly small, now and then large."""
    big = rng.random() < 0.08
    topics: dict = {}
    for t in range(rng.randint(1, 6)):
        count = rng.randint(0, 400 if big else 12)
        if rng.random() < 0.3:
            topics[f"g{g}-t{t}"] = [[rng.choice(["r0", "r1", "r2", None]) for _ in range(rng.randint(0, 3))]
                                    for _ in range(count)]
        else:
            topics[f"g{g}-t{t}"] = count
    members: dict = {}
    names = list(topics)
    uniform = rng.random() < 0.5
    for i in range(rng.randint(0, 60 if big else 8)):
        spec: dict = {"topics": names if uniform else rng.sample(names, rng.randint(1, len(names)))}
        if rng.random() < 0.4:
            spec["rack"] = rng.choice(["r0", "r1", "r3"])
        if rng.random() < 0.2:
            spec["instance"] = f"i-{g}-{i}"
        members[f"m{rng.randrange(10**6)}-{i}"] = spec
    return topics, members


def churn(rng: random.Random, topics: dict, members: dict, owner_names: Mapping[str, list], generation: int) -> dict:
    """The next round's members: previous assignment as owned claims, some members gone, some new."""
    out: dict = {}
    names = list(topics)
    for member, spec in members.items():
        if rng.random() < 0.1:
            continue                                   # left the group
        spec = dict(spec)
        if rng.random() < 0.1:
            spec["topics"] = rng.sample(names, rng.randint(1, len(names)))
        spec["owned"] = [(tp.topic, tp.partition) for tp in owner_names.get(member, [])]
        spec["generation"] = generation if rng.random() < 0.9 else generation - 1
        out[member] = spec
    for i in range(rng.randint(0, 2)):
        out[f"new{generation}-{i}-{rng.randrange(10**6)}"] = {"topics": rng.sample(names, rng.randint(1, len(names)))}
    return out


def broken(rng: random.Random, arrays: dict) -> dict:
    """A copy of a group's arrays with one thing the engine refuses."""
    arrays = {k: (None if v is None else np.array(v)) for k, v in arrays.items()}
    choice = rng.randrange(3)
    if choice == 0 and len(arrays["sub_topics"]):
        arrays["sub_topics"][0] = len(arrays["partition_count"]) + 5          # unknown topic id
    elif choice == 1 and len(arrays["partition_count"]) and arrays["replica_offsets"] is None:
        arrays["partition_count"][0] = -3                                     # negative count
    elif len(arrays["sub_offsets"]) > 1:
        members = len(arrays["sub_offsets"]) - 1
        arrays["owned_offsets"] = np.array([0] * members + [1], np.int64)    # a claim past the end
        arrays["owned_partitions"] = np.array([int(np.sum(np.maximum(arrays["partition_count"], 0))) + 7], np.int32)
    return arrays


def assert_same(batch_result, g: int, expected) -> None:
    got = batch_result.result(g)
    assert got.owner.tolist() == expected.owner.tolist(), g
    assert got.withheld.tolist() == expected.withheld.tolist(), g
    assert got.metrics == expected.metrics, g


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_assign_many_equals_assign_arrays_over_rounds(strategy):
    rng = random.Random(f"batch-{strategy}")
    groups = [random_spec(rng, g) for g in range(60)]
    state = [(topics, members) for topics, members in groups]
    for round_ in range(4):
        problems, compact = [], []
        for g, (topics, members) in enumerate(state):
            group = kafkagroup.build_group(topics, members, strict=False)
            arrays = group.arrays()
            if rng.random() < 0.07:                     # a bad group in the middle of good ones
                arrays = broken(rng, arrays)
            problems.append(arrays)
            compact.append(group)
        results = {threads: assign_many(strategy, problems, threads=threads, on_error="record") for threads in (1, 3)}
        for g, arrays in enumerate(problems):
            try:
                expected = kafkagroup.assign_arrays(strategy, **arrays)
            except InvalidGroupError as e:
                for r in results.values():
                    assert str(r.errors[g]) == f"group {g}: {e}"
                    assert isinstance(r.errors[g], InvalidGroupError)
                    p0, p1 = r.part_offsets[g], r.part_offsets[g + 1]
                    assert (r.owner[p0:p1] == -1).all()
                    assert all(int(r.metrics[name][g]) == 0 for name in r.metrics)
                continue
            for r in results.values():
                assert g not in r.errors
                assert_same(r, g, expected)
        # next round: every group's result fed back as owned claims, with churn
        r = results[1]
        next_state = []
        for g, (topics, members) in enumerate(state):
            if g in r.errors:
                next_state.append((topics, members))
                continue
            group = compact[g]
            owner = r.result(g).owner
            by_member = kafkagroup.api.MemberAssignment(group, owner)
            next_state.append((topics, churn(rng, topics, members, by_member, round_ + 2)))
        state = next_state


def test_threads_do_not_change_the_result():
    rng = random.Random(5)
    problems = [kafkagroup.build_group(*random_spec(rng, g)).arrays() for g in range(200)]
    one = assign_many("cooperative-sticky", problems, threads=1)
    for threads in (2, 7, 500):
        other = assign_many("cooperative-sticky", problems, threads=threads)
        assert np.array_equal(one.owner, other.owner)
        assert np.array_equal(one.part_offsets, other.part_offsets)
        assert all(np.array_equal(one.metrics[k], other.metrics[k]) for k in one.metrics)


def test_raise_names_the_first_bad_group():
    good = {"partition_count": [2], "sub_offsets": [0, 1], "sub_topics": [0]}
    bad = {"partition_count": [2], "sub_offsets": [0, 1], "sub_topics": [3]}
    with pytest.raises(InvalidGroupError, match=r"^group 1: member 0: subscribed topic id 3"):
        assign_many("range", [good, bad, bad])
    r = assign_many("range", [good, bad, good], on_error="record")
    assert list(r.errors) == [1]
    assert r.owner.tolist() == [0, 0, -1, -1, 0, 0]
    with pytest.raises(InvalidGroupError, match="group 1"):
        r.result(1)


def test_empty_batch_and_empty_groups():
    r = assign_many("sticky", [])
    assert r.num_groups == 0 and len(r.owner) == 0
    r = assign_many("range", [{"partition_count": [], "sub_offsets": [0], "sub_topics": []},
                              {"partition_count": [4], "sub_offsets": [0], "sub_topics": []}])
    assert r.part_offsets.tolist() == [0, 0, 4]
    assert r.owner.tolist() == [-1] * 4
    assert r.metrics["unassigned"].tolist() == [0, 0]   # nobody subscribes: nothing is owed


def test_group_inputs_switch_optional_arrays_per_group():
    """A batch carrying member racks for one group assigns the other as if it had none."""
    racked = {"partition_count": [2], "sub_offsets": [0, 1, 2], "sub_topics": [0, 0],
              "member_rack": [1, 2], "replica_offsets": [0, 1, 2], "replica_racks": [2, 1]}
    plain = {"partition_count": [2], "sub_offsets": [0, 1, 2], "sub_topics": [0, 0]}
    batch = GroupBatch.concat([racked, plain])
    assert batch.group_inputs.tolist() == [4 | 8, 0]
    r = assign_many("range", batch)
    assert r.result(0).owner.tolist() == kafkagroup.assign_arrays("range", **racked).owner.tolist() == [1, 0]
    assert r.result(1).owner.tolist() == kafkagroup.assign_arrays("range", **plain).owner.tolist() == [0, 1]
    skipped = GroupBatch(**{**batch.__dict__, "group_inputs": np.array([SKIP_GROUP, 0], np.uint8)})
    r = assign_many("range", skipped)
    assert r.owner.tolist() == [-1, -1, 0, 1] and not r.errors


@pytest.mark.parametrize("field, value, message", [
    ("topic_offsets", [0, 5], "batch topic_offsets: last offset 5 != 1 entries"),
    ("member_offsets", [0, 2], "batch sub_offsets: expected 3 offsets, got 2"),
    ("sub_offsets", [0, 0], "batch sub_offsets: last offset 0 != 1 entries"),
    ("group_inputs", [1, 1], "batch group_inputs: expected 1 entries, got 2"),
])
def test_malformed_batch_layout_raises(field, value, message):
    batch = GroupBatch.concat([{"partition_count": [2], "sub_offsets": [0, 1], "sub_topics": [0]}])
    arrays = dict(batch.__dict__)
    dtype = np.uint8 if field == "group_inputs" else np.int64
    arrays[field] = np.array(value, dtype)
    with pytest.raises(InvalidGroupError, match=message):
        assign_many("range", GroupBatch(**arrays))


@pytest.mark.parametrize("problem, message", [
    ({"partition_count": [2], "sub_offsets": [0, 2], "sub_topics": [0]}, "group 0: sub_offsets: offsets must rise"),
    ({"partition_count": [2], "sub_offsets": [0, 1], "sub_topics": [0], "owned_offsets": [0, 1]},
     "group 0: owned_offsets given without owned_partitions"),
    ({"partition_count": [2], "sub_offsets": [0, 1], "sub_topics": [0], "generation": [1, 2]},
     "group 0: generation: expected 1 entries, got 2"),
    ({"partition_count": [2], "sub_offsets": [0, 1], "sub_topics": [0], "racks": [1]}, "unknown argument"),
    ({"partition_count": [2.5], "sub_offsets": [0, 1], "sub_topics": [0]}, "expected integers"),
])
def test_concat_names_the_group_with_a_malformed_layout(problem, message):
    with pytest.raises(InvalidGroupError, match=message):
        assign_many("range", [problem])


def test_unknown_strategy_and_bad_thread_count():
    problem = {"partition_count": [1], "sub_offsets": [0, 1], "sub_topics": [0]}
    with pytest.raises(InvalidGroupError, match="unknown assignment strategy 'nope'"):
        assign_many("nope", [problem])
    with pytest.raises(InvalidGroupError, match="threads must be >= 1"):
        assign_many("range", [problem], threads=0)


def test_group_over_the_partition_bound_is_refused_without_room():
    """A group whose counts pass kafkagroup.engine.MAX_PARTITIONS gets no room in owner[] (nothing is
    allocated for it) and assign_arrays' own error; the group next to it is assigned."""
    huge = {"partition_count": [2**31 - 1, 5], "sub_offsets": [0, 1], "sub_topics": [0]}
    small = {"partition_count": [3], "sub_offsets": [0, 1], "sub_topics": [0]}
    with pytest.raises(InvalidGroupError) as expected:
        kafkagroup.assign_arrays("range", **huge)
    r = assign_many("range", [huge, small], on_error="record")
    assert str(r.errors[0]) == f"group 0: {expected.value}"
    assert r.part_offsets.tolist() == [0, 0, 3]
    assert r.result(1).owner.tolist() == [0, 0, 0]
