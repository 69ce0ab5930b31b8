"""The fixed cost of a small kafkagroup.assign call (issue 21): what build_group keeps between calls and the lean
form of the native builder's answer must never be visible. build_group's answer equals what the full builder
dict says, and a call answers what a first call (nothing kept) answers, whatever the calls before it were."""
from __future__ import annotations

import random

import numpy as np
import pytest

import kafkagroup
import kafkagroup.model as model
from kafkagroup import _core
from kafkagroup.errors import InvalidGroupError
from kafkagroup.model import build_group

BITS = {"owned": 1, "generation": 2, "member_rack": 4, "replica": 8}


def random_group(rng: random.Random) -> tuple[dict, dict]:
    """Metadata and members of every shape build_group reads: shuffled and static members, claims (some past a
    topic's count or on a topic nobody subscribes to), unknown topics, generations, member and replica racks."""
    topics: dict = {f"t{i}": rng.randint(0, 6) for i in range(rng.randint(1, 6))}
    if rng.random() < 0.3:
        name = rng.choice(list(topics))
        topics[name] = [[f"r{rng.randint(0, 2)}"] for _ in range(topics[name])]
    names = list(topics) + (["ghost"] if rng.random() < 0.3 else [])
    shared = rng.random() < 0.5
    common = rng.sample(names, rng.randint(1, len(names)))
    members = {}
    for i in rng.sample(range(40), rng.randint(1, 12)):
        spec: dict = {"topics": list(common) if shared else rng.sample(names, rng.randint(0, len(names)))}
        if rng.random() < 0.5:
            spec["owned"] = [(t, rng.randint(0, 7)) for t in rng.sample(names, rng.randint(0, len(names)))]
        if rng.random() < 0.2:
            spec["instance"] = f"i-{rng.randint(0, 30)}"
        if rng.random() < 0.2:
            spec["generation"] = rng.randint(-1, 4)
        if rng.random() < 0.2:
            spec["rack"] = f"r{rng.randint(0, 2)}"
        members[f"m-{i:02d}"] = spec
    return topics, members


def fields(group: model.CompactGroup) -> tuple:
    """Everything a CompactGroup holds, arrays by dtype and contents."""
    def norm(v):
        return ("array", str(v.dtype), v.tolist()) if isinstance(v, np.ndarray) else v
    names = ("topics", "members", "racks", "partition_count", "topic_base", "sub_offsets", "sub_topics",
             "owned_offsets", "owned_partitions", "generation", "member_rack", "replica_offsets", "replica_racks",
             "unknown_topics", "dropped_claims", "dropped", "shared_topics")
    return tuple(norm(getattr(group, n)) for n in names)


def outcome(call):
    try:
        return fields(call())
    except InvalidGroupError as exc:
        return str(exc)


def forget():
    """Nothing kept from earlier calls, as in a fresh process."""
    model._last_metadata = ((), None)
    model._last_ids = ([], model.utf8_strings([]))
    model._last_offsets = (None, None, None)


@pytest.mark.parametrize("seed", range(6))
def test_the_lean_answer_says_what_the_full_dict_says(monkeypatch, seed):
    full_build = _core.build_groups
    seen = []

    def both(*args, lean=False):
        # (build_group passes every argument positionally: the 15th is sub_same, the 16th lean)
        if len(args) == 16:
            *args, lean = args
        lean_answer = full_build(*args, lean=True)
        d = full_build(*args)
        (errors, inputs, dropped, rows_up, perm, rows, count, part_offsets, sub_offsets, sub_topics, owned_offsets,
         owned_partitions, generation, member_rack, replica_offsets, replica_racks, unknown, rack_codes) = lean_answer
        assert errors == d["errors"]
        assert inputs == int(d["group_inputs"][0]) and dropped == int(d["dropped_claims"][0])
        if errors:
            return lean_answer
        assert rows_up == (d["topic_row"].tolist() == list(range(d["topic_row"].size)))
        identity = d["member_perm"].tolist() == list(range(d["member_perm"].size))
        assert (perm is None) == identity and (identity or perm.tolist() == d["member_perm"].tolist())
        for mine, key in ((rows, "topic_row"), (count, "partition_count"), (part_offsets, "part_offsets"),
                          (sub_offsets, "sub_offsets"), (sub_topics, "sub_topics")):
            assert mine.dtype == d[key].dtype and mine.tolist() == d[key].tolist(), key
        for mine, key, bit in ((owned_offsets, "owned_offsets", "owned"), (owned_partitions, "owned_partitions", "owned"),
                               (generation, "generation", "generation"), (member_rack, "member_rack", "member_rack"),
                               (replica_offsets, "replica_offsets", "replica"), (replica_racks, "replica_racks", "replica")):
            if inputs & BITS[bit]:
                assert mine.dtype == d[key].dtype and mine.tolist() == d[key].tolist(), key
            else:
                assert mine is None, key
        assert unknown == d["unknown_entries"].tolist() and rack_codes == d["rack_codes"].tolist()
        seen.append((perm is None, inputs))
        return lean_answer

    monkeypatch.setattr(_core, "build_groups", both)
    rng = random.Random(seed)
    for _ in range(40):
        topics, members = random_group(rng)
        for strict in (True, False):
            outcome(lambda: build_group(topics, members, strict=strict))
    assert {p for p, _ in seen} == {True, False}   # both orders met
    assert {i & 1 for _, i in seen} == {0, 1}


def test_the_lean_answer_is_for_one_group():
    names = model.utf8_strings(["t0"])
    catalog = model.topic_catalog({"t0": (1, None)}, names)[0]
    ids = model.utf8_strings(["a", "b"])
    with pytest.raises(ValueError, match="one group"):
        _core.build_groups(catalog, np.array([0, 1, 2]), ids, None, np.array([0, 1, 2]), None,
                           (*names, np.zeros(2, dtype=np.int32)), None, None, None, None, None, None, True, lean=True)


@pytest.mark.parametrize("seed", range(4))
def test_a_call_answers_what_a_first_call_answers(seed):
    rng = random.Random(seed)
    calls = [random_group(rng) for _ in range(30)]
    calls += [calls[i] for i in rng.choices(range(30), k=30)]   # the same groups again: ids and metadata kept
    for topics, members in calls:
        kept = outcome(lambda: build_group(topics, members))
        forget()
        assert kept == outcome(lambda: build_group(topics, members))


def test_kept_member_ids_are_a_copy_of_our_own():
    # The ids list build_group kept for its next call must not be the caller's: result.members changed in place
    # to other (interned, hence the very same) str objects must not make those objects read as the old ids.
    # (the ids' order tells: a, b is MemberInfo order, y, x is not)
    first = kafkagroup.assign("server-range", {"t0": 4}, {"a": {"topics": ["t0"]}, "b": {"topics": ["t0"]}})
    first.members[:] = ["y", "x"]
    second = kafkagroup.assign("server-range", {"t0": 4}, {"y": {"topics": ["t0"]}, "x": {"topics": ["t0"]}})
    assert second.members == ["x", "y"]
    assert {m: [str(tp) for tp in tps] for m, tps in second.assignment.items()} == {"x": ["t0-0", "t0-1"],
                                                                                   "y": ["t0-2", "t0-3"]}


def test_the_same_ids_in_another_order_are_laid_out_again():
    a, b = "member-" + "a" * 20, "member-" + "b" * 20
    assert build_group({"t0": 2}, {a: ["t0"], b: ["t0"]}).members == [a, b]
    group = build_group({"t0": 2}, {b: ["t0"], a: ["t0"], "c": ["t0"]})
    assert group.members == ["c", a, b]
    assert build_group({"t0": 2}, {b: ["t0"], a: ["t0"]}).members == [a, b]
    with pytest.raises(InvalidGroupError, match="non-empty string, got ''"):
        build_group({"t0": 2}, {"": ["t0"], a: ["t0"]})


def test_the_kept_offsets_follow_the_group_size():
    for members in (3, 5, 3, 1, 5):
        group = build_group({"t0": 7, "t1": 2}, {f"m{i}": ["t0", "t1"] for i in range(members)})
        assert group.shared_topics.tolist() == [0, 1]
        assert group.sub_offsets.tolist() == [2 * i for i in range(members + 1)]
        result = kafkagroup.assign("server-range", {"t0": 7, "t1": 2}, {f"m{i}": ["t0", "t1"] for i in range(members)})
        assert sum(result.assignment.counts().values()) == 9


def test_one_id_beyond_the_bmp_anywhere_in_the_group_orders_members_as_java_does():
    # The builder scans the group's id bytes once for a character beyond U+FFFF (byte order and Java's UTF-16
    # order differ only then: U+10000 sorts before U+E000 in Java). One such id among many, in any place.
    from kafkagroup.java_order import java_string_key
    rng = random.Random(5)
    for place in (0, 25, 51):
        ids = [f"m{i:03d}" for i in range(50)] + ["\ue000"]
        ids.insert(place, "\U00010000")
        rng.shuffle(ids)
        group = build_group({"t0": 3}, {i: ["t0"] for i in ids})
        assert group.members == sorted(ids, key=java_string_key)
        assert group.members.index("\U00010000") < group.members.index("\ue000")
    # static members by instance id, the character beyond U+FFFF only in an instance id
    members = {f"m{i:03d}": {"topics": ["t0"]} for i in range(20)}
    members["m005"]["instance"] = "\ue000"
    members["m017"]["instance"] = "\U00010000"
    assert build_group({"t0": 3}, members).members[:2] == ["m017", "m005"]
