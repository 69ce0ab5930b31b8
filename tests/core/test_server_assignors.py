"""Kafka 4's server-side assignors (KIP-848) on the native engine: "server-range" and "server-uniform".

Known cases worked by hand from Kafka's RangeAssignor / UniformAssignor rules, and seeded property checks:
every partition of a subscribed topic assigned once to a subscriber, range equal to a small Python model of
Kafka's RangeAssignor, uniform balanced (homogeneous: loads within one, with the fewest moves) and stable.
The comparison with Kafka's own classes is tests/core/test_server_assignors_kafka.py.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

import kafkagroup
from kafkagroup.errors import InvalidGroupError
from kafkagroup.structs import TopicPartition as TP


def parts(result, member):
    return [(tp.topic, tp.partition) for tp in result.assignment[member]]


def test_readme_example_runs_as_written():
    from pathlib import Path
    import doctest
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    start = readme.index("### Kafka 4's server-side assignors")
    section = readme[start:readme.index("\n#", start + 4)]
    blocks = [b.split("```")[0] for b in section.split("```pycon")[1:]]   # every example of the section, in turn
    assert len(blocks) >= 2
    globs: dict = {}
    for block in blocks:
        test = doctest.DocTestParser().get_doctest(block, globs, "README server assignors", "README.md", 0)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
        runner.run(test, clear_globs=False)
        assert test.examples and runner.failures == 0


def test_server_names_are_registered():
    assert {"server-range", "server-uniform"} <= set(kafkagroup.strategies())


def test_server_range_static_members_first_then_member_id():
    members = {"a": {"topics": ["t0"]}, "b": {"topics": ["t0"], "instance": "z"}, "c": {"topics": ["t0"], "instance": "y"}}
    r = kafkagroup.assign("server-range", {"t0": 7}, members)
    # order: c (instance y), b (instance z), a (dynamic): 3, 2, 2
    assert parts(r, "c") == [("t0", 0), ("t0", 1), ("t0", 2)]
    assert parts(r, "b") == [("t0", 3), ("t0", 4)]
    assert parts(r, "a") == [("t0", 5), ("t0", 6)]


def test_server_range_ignores_the_previous_assignment_and_racks():
    members = {"C0": {"topics": ["t0"], "owned": [("t0", 2)], "rack": "r1"},
               "C1": {"topics": ["t0"], "owned": [("t0", 0)], "rack": "r0"}}
    r = kafkagroup.assign("server-range", {"t0": [["r0"], ["r0"], ["r1"]]}, members)
    assert parts(r, "C0") == [("t0", 0), ("t0", 1)] and parts(r, "C1") == [("t0", 2)]


def test_server_range_fewer_partitions_than_members():
    members = {f"C{i}": {"topics": ["t0", "t1"]} for i in range(3)}
    r = kafkagroup.assign("server-range", {"t0": 2, "t1": 1}, members)
    assert parts(r, "C0") == [("t0", 0), ("t1", 0)] and parts(r, "C1") == [("t0", 1)] and parts(r, "C2") == []


def test_server_uniform_homogeneous_keeps_the_larger_quota_where_it_saves_a_move():
    # 7 partitions over 3 members: quotas 3, 2, 2. C2 held 3: it keeps them all (Kafka's HashMap order may cut
    # it to 2 and give the third quota to C0, moving a partition for nothing).
    members = {"C0": {"topics": ["t0"], "owned": [("t0", 0), ("t0", 1)]},
               "C1": {"topics": ["t0"], "owned": [("t0", 2), ("t0", 3)]},
               "C2": {"topics": ["t0"], "owned": [("t0", 4), ("t0", 5), ("t0", 6)]}}
    r = kafkagroup.assign("server-uniform", {"t0": 7}, members)
    assert r.metrics.moved == 0 and r.metrics.max_load - r.metrics.min_load <= 1
    assert parts(r, "C2") == [("t0", 4), ("t0", 5), ("t0", 6)]


def test_server_uniform_new_member_takes_from_the_most_loaded():
    owned = {"C0": [("t0", p) for p in range(0, 5)], "C1": [("t0", p) for p in range(5, 10)]}
    members = {m: {"topics": ["t0"], "owned": o} for m, o in owned.items()}
    members["C2"] = {"topics": ["t0"]}
    r = kafkagroup.assign("server-uniform", {"t0": 10}, members)
    counts = r.assignment.counts()
    assert sorted(counts.values()) == [3, 3, 4]
    assert r.metrics.moved == r.metrics.moved_lower_bound == 3


def test_server_uniform_heterogeneous_worked_example():
    # C0: t0 (4 partitions), C1: t0 + t1 (2 partitions), fresh: t1 is filled first (2 per subscriber beats 4/2=2
    # by fewer subscribers), then t0 goes to the least loaded: C0 gets 3, C1 1 + 2 = 3.
    members = {"C0": {"topics": ["t0"]}, "C1": {"topics": ["t0", "t1"]}}
    r = kafkagroup.assign("server-uniform", {"t0": 4, "t1": 2}, members)
    assert r.assignment.counts() == {"C0": 3, "C1": 3}
    assert set(parts(r, "C1")) >= {("t1", 0), ("t1", 1)}


def test_server_uniform_members_subscribed_to_nothing_or_missing_topics():
    members = {"C0": {"topics": []}, "C1": {"topics": ["t0", "gone"]}, "C2": {"topics": ["gone"]}}
    r = kafkagroup.assign("server-uniform", {"t0": 3}, members)
    assert r.assignment.counts() == {"C0": 0, "C1": 3, "C2": 0}
    assert r.unknown_topics == ["gone"]


def test_empty_group():
    for name in ("server-range", "server-uniform"):
        r = kafkagroup.assign(name, {"t0": 3}, {})
        assert len(r.assignment) == 0 and not (r.owner >= 0).any()


def test_server_uniform_refuses_a_partition_held_by_two_members():
    members = {"C0": {"topics": ["t0"], "owned": [("t0", 1)]}, "C1": {"topics": ["t0"], "owned": [("t0", 1)]}}
    with pytest.raises(InvalidGroupError, match=r"members 'C0' and 'C1' both hold partition t0-1"):
        kafkagroup.assign("server-uniform", {"t0": 3}, members)
    with pytest.raises(InvalidGroupError, match="both hold partition 1 of topic 0"):
        kafkagroup.assign_arrays("server-uniform", [3], [0, 1, 2], [0, 0], owned_offsets=[0, 1, 2], owned_partitions=[1, 1])


def test_owned_partition_beyond_the_count_names_the_member():
    members = {"C0": {"topics": ["t0"], "owned": [("t0", 5)]}}
    with pytest.raises(InvalidGroupError, match=r"member 'C0' claims partition t0-5 of a topic with 3 partitions"):
        kafkagroup.assign("server-uniform", {"t0": 3}, members)


def test_claims_on_a_deleted_topic_are_dropped_when_not_strict():
    members = {"C0": {"topics": ["t0", "old"], "owned": [("old", 0), ("t0", 0)]}, "C1": {"topics": ["t0"]}}
    r = kafkagroup.assign("server-uniform", {"t0": 2}, members, strict=False)
    assert parts(r, "C0") == [("t0", 0)] and parts(r, "C1") == [("t0", 1)] and r.dropped_claims == 1


# ---- seeded properties ---------------------------------------------------------------------------------

def kafka_range_model(topics: dict[str, int], members: dict[str, dict]) -> dict[str, set[tuple[str, int]]]:
    """Kafka's server RangeAssignor as a few lines of Python: static members first by instance id, then by
    member id; each topic split into contiguous ranges over its subscribers in that order."""
    order = sorted(members, key=lambda m: (members[m].get("instance") is None, members[m].get("instance") or m))
    out: dict[str, set[tuple[str, int]]] = {m: set() for m in members}
    for topic, count in topics.items():
        subs = [m for m in order if topic in members[m]["topics"]]
        if not subs:
            continue
        per, extra = divmod(count, len(subs))
        start = 0
        for i, m in enumerate(subs):
            n = per + (1 if i < extra else 0)
            out[m].update((topic, p) for p in range(start, start + n))
            start += n
    return out


def random_group(rng: random.Random, heterogeneous: bool) -> tuple[dict[str, int], dict[str, dict]]:
    topics = {f"t{i}": rng.randint(0, 12) for i in range(rng.randint(1, 6))}
    names = list(topics)
    members = {}
    common = rng.sample(names, rng.randint(1, len(names)))
    for i in range(rng.randint(1, 9)):
        subs = rng.sample(names, rng.randint(0, len(names))) if heterogeneous else list(common)
        spec = {"topics": subs}
        if rng.random() < 0.3:
            spec["instance"] = f"i{rng.randint(0, 10**6)}"
        members[f"m{rng.randint(0, 10**6)}-{i}"] = spec
    return topics, members


def with_previous(members: dict[str, dict], result, rng: random.Random) -> dict[str, dict]:
    """The next round's group: the result as each member's owned, one member gone, one new."""
    nxt = {m: dict(spec, owned=[(tp.topic, tp.partition) for tp in result.assignment[m]]) for m, spec in members.items()}
    if nxt and rng.random() < 0.5:
        del nxt[rng.choice(list(nxt))]
    if rng.random() < 0.5 and members:
        nxt[f"new{rng.randint(0, 10**6)}"] = {"topics": list(rng.choice(list(members.values()))["topics"])}
    return nxt


def check_valid(topics, members, result):
    seen = set()
    for m, tps in result.assignment.items():
        for tp in tps:
            assert tp.topic in members[m]["topics"] and tp not in seen, (m, tp)
            seen.add(tp)
    expected = {TP(t, p) for t, n in topics.items() for p in range(n) if any(t in s["topics"] for s in members.values())}
    assert seen == expected


@pytest.mark.parametrize("seed", range(40))
def test_server_range_equals_the_model(seed):
    rng = random.Random(seed)
    topics, members = random_group(rng, heterogeneous=seed % 2 == 1)
    r = kafkagroup.assign("server-range", topics, members)
    assert {m: {(tp.topic, tp.partition) for tp in r.assignment[m]} for m in members} == kafka_range_model(topics, members)


@pytest.mark.parametrize("seed", range(60))
def test_server_uniform_valid_balanced_sticky(seed):
    rng = random.Random(seed)
    heterogeneous = seed % 2 == 1
    topics, members = random_group(rng, heterogeneous)
    result = kafkagroup.assign("server-uniform", topics, members)
    for _ in range(4):
        check_valid(topics, members, result)
        if not heterogeneous:
            assert result.metrics.max_load - result.metrics.min_load <= 1
            assert result.metrics.moved == result.metrics.moved_lower_bound
        # the same group again: nothing moves
        same = {m: dict(spec, owned=[(tp.topic, tp.partition) for tp in result.assignment[m]]) for m, spec in members.items()}
        again = kafkagroup.assign("server-uniform", topics, same)
        assert again.metrics.moved == 0 and np.array_equal(again.owner, result.owner)
        members = with_previous(members, result, rng)
        result = kafkagroup.assign("server-uniform", topics, members)


def test_strict_false_names_every_claim_it_drops():
    """strict=False used to drop claims past a topic's count (and on unknown or unsubscribed topics) with only
    a count; the result now names each one: member, topic, partition, why."""
    members = {"C0": {"topics": ["t0", "gone"], "owned": [("t0", 0), ("t0", 7), ("gone", 1)]},
               "C1": {"topics": ["t0"], "owned": [("t1", 0), ("t0", -1), ("t0", 1)]}}
    r = kafkagroup.assign("server-uniform", {"t0": 2, "t1": 1}, members, strict=False)
    assert r.dropped_claims == 4
    assert [tuple(d) for d in r.dropped] == [
        ("C0", "t0", 7, "past the topic's 2 partitions"),
        ("C0", "gone", 1, "unknown topic"),
        ("C1", "t1", 0, "topic nobody subscribes to"),
        ("C1", "t0", -1, "past the topic's 2 partitions"),
    ]
    assert r.assignment["C0"] == [TP("t0", 0)] and r.assignment["C1"] == [TP("t0", 1)]
