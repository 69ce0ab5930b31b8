"""kafkagroup.assignors.server (UniformAssignor / RangeAssignor over a consumer group's own inputs) and the
racks option of the server assignors (beyond Kafka, off by default).

- the classes (and the coordinator, which calls them) answer what kafkagroup.assign with names answers on the same group (topic ids,
  static members, sets of topic names, previous targets on deleted topics);
- racks off (the default): the output is Kafka's whatever racks are given (the same as with no racks);
- racks on: members get partitions with a replica in their rack where balance allows, with the balance of
  the default (homogeneous: loads within one), and a group without racks gets the default's output.
"""
from __future__ import annotations

import random
import uuid

import pytest

import kafkagroup
from kafkagroup.assignors.server import RangeAssignor, ServerMember, UniformAssignor, server_assignor
from kafkagroup.coordinator.consumer.target import compute_target
from kafkagroup.errors import InvalidGroupError


def _random_group(rng: random.Random):
    names = [f"t{i}" for i in range(rng.randint(1, 6))]
    topics = {n: (uuid.UUID(int=rng.getrandbits(128)), rng.randint(0, 9)) for n in names}
    members = {}
    for i in range(rng.randint(1, 8)):
        subs = tuple(sorted(rng.sample(names + ["missing"], rng.randint(0, len(names)))))
        members[f"m{i:02d}"] = (subs, rng.choice([None, f"inst-{i}"]), rng.choice([None, "r0", "r1"]))
    return topics, members


def _by_names(name, topics, members, previous):
    """The target through kafkagroup.assign with names (what the coordinator computed before it called the
    class): subscriptions filtered to existing topics, previous targets on gone topic ids left out."""
    name_of = {tid: n for n, (tid, _) in topics.items()}
    specs = {m: {"topics": [t for t in subs if t in topics], "instance": inst,
                 "owned": [(name_of[tid], p) for tid, ps in previous.get(m, {}).items() if tid in name_of for p in ps]}
             for m, (subs, inst, _) in members.items()}
    result = kafkagroup.assign(f"server-{name}", {n: c for n, (_, c) in topics.items()}, specs, strict=False)
    out = {}
    for m, tps in result.assignment.items():
        by_id = {}
        for tp in tps:
            by_id.setdefault(topics[tp.topic][0], set()).add(tp.partition)
        out[m] = {tid: frozenset(ps) for tid, ps in by_id.items()}
    return out


@pytest.mark.parametrize("name", ["uniform", "range"])
def test_class_answers_what_assign_with_names_answers(name):
    rng = random.Random(7)
    for _ in range(150):
        topics, members = _random_group(rng)
        previous = server_assignor(name).assign({m: ServerMember(*v) for m, v in members.items()}, topics)
        assert previous == _by_names(name, topics, members, {})
        # churn: a member leaves, one joins, a topic is deleted (its previous targets point at a gone id)
        members.pop(next(iter(members)))
        members["new"] = (tuple(topics), None, None)
        del topics[rng.choice(list(topics))]
        expected = _by_names(name, topics, members, previous)
        assert server_assignor(name).assign({m: ServerMember(*v) for m, v in members.items()}, topics, previous) == expected
        assert compute_target(name, topics, members, previous) == expected   # the coordinator's call


def test_class_takes_sets_counts_and_names_what_it_drops():
    a = UniformAssignor()
    members = {"C0": ServerMember(frozenset({"b", "a"}), "i0"), "C1": ServerMember({"a", "b"})}
    previous = {"C0": {"a": {0, 5}, "deleted": {0}}}
    result = a.assign_result(members, {"a": 2, "b": 1}, previous)
    assert {(d.member, d.topic, d.partition) for d in result.dropped} == {("C0", "a", 5), ("C0", "deleted", 0)}
    target = a.assign(members, {"a": 2, "b": 1}, previous)
    assert 0 in target["C0"]["a"] and sum(len(p) for t in target.values() for p in t.values()) == 3
    assert RangeAssignor().assign(members, {"a": 2}) == {"C0": {"a": frozenset({0})}, "C1": {"a": frozenset({1})}}
    with pytest.raises(InvalidGroupError, match="unknown server assignor"):
        server_assignor("sticky")
    with pytest.raises(InvalidGroupError, match="C0"):
        a.assign({"C0": ("a",)}, {"a": 1})


def _racked_group(rng: random.Random, members: int, topics: int, homogeneous: bool):
    racks = ["r0", "r1", "r2"]
    metadata = {f"t{t}": [rng.sample(racks, 2) for _ in range(rng.randint(1, 12))] for t in range(topics)}
    names = list(metadata)
    group = {}
    for i in range(members):
        subs = names if homogeneous else rng.sample(names, rng.randint(1, len(names)))
        group[f"m{i:02d}"] = {"topics": subs, "rack": rng.choice(racks), "instance": rng.choice([None, f"i{i}"])}
    return metadata, group


def _rack_misses(result, metadata, group):
    return sum(1 for m, tps in result.assignment.items() for tp in tps
               if group[m]["rack"] not in metadata[tp.topic][tp.partition])


@pytest.mark.parametrize("strategy", ["server-uniform", "server-range"])
def test_racks_are_off_by_default(strategy):
    """Racks given, option off: exactly the output with no racks at all (Kafka 4.4.0 ignores them)."""
    rng = random.Random(3)
    for _ in range(60):
        metadata, group = _racked_group(rng, rng.randint(1, 9), rng.randint(1, 4), rng.random() < 0.5)
        plain = kafkagroup.assign(strategy, {t: len(r) for t, r in metadata.items()},
                                  {m: {k: v for k, v in s.items() if k != "rack"} for m, s in group.items()})
        racked = kafkagroup.assign(strategy, metadata, group)
        assert racked.owner.tolist() == plain.owner.tolist()


@pytest.mark.parametrize("strategy", ["server-uniform", "server-range"])
def test_racks_on_prefer_rack_local_partitions_where_balance_allows(strategy):
    rng = random.Random(11)
    fewer = 0
    for _ in range(80):
        homogeneous = rng.random() < 0.6
        metadata, group = _racked_group(rng, rng.randint(2, 9), rng.randint(1, 4), homogeneous)
        default = kafkagroup.assign(strategy, metadata, group)
        aware = kafkagroup.assign(strategy, metadata, group, rack_aware=True)
        assert aware.metrics.unassigned == 0 and aware.metrics.assigned == default.metrics.assigned
        if strategy == "server-uniform":
            assert aware.metrics.balance_gap == 0          # as balanced as the default
            if homogeneous:
                assert aware.metrics.max_load - aware.metrics.min_load <= 1
        fewer += _rack_misses(aware, metadata, group) < _rack_misses(default, metadata, group)
        assert _rack_misses(aware, metadata, group) <= _rack_misses(default, metadata, group) or strategy == "server-uniform"
    assert fewer > 20


def test_racks_on_give_every_member_its_own_rack_when_the_replicas_allow():
    """Two racks, every partition replicated in one of them, as many partitions per rack as members there."""
    metadata = {"t0": [["a"], ["b"], ["a"], ["b"], ["a"], ["b"]]}
    group = {f"m{i}": {"topics": ["t0"], "rack": "a" if i < 3 else "b"} for i in range(6)}
    for strategy in ("server-uniform", "server-range"):
        default = kafkagroup.assign(strategy, metadata, group)
        aware = kafkagroup.assign(strategy, metadata, group, rack_aware=True)
        assert _rack_misses(default, metadata, group) > 0
        assert _rack_misses(aware, metadata, group) == 0
        assert sorted(aware.assignment.counts().values()) == [1] * 6
    # the previous target is kept where it is already rack-local
    owned = {m: {**s, "owned": [(tp.topic, tp.partition) for tp in aware.assignment[m]]} for m, s in group.items()}
    again = kafkagroup.assign("server-uniform", metadata, owned, rack_aware=True)
    assert again.metrics.moved == 0


def test_rack_option_is_the_server_assignors_own():
    with pytest.raises(InvalidGroupError, match="rack_aware"):
        kafkagroup.assign("range", {"t0": 1}, {"C0": ["t0"]}, rack_aware=True)
    # no racks given: the option changes nothing
    members = {f"C{i}": {"topics": ["t0", "t1"], "owned": [("t0", i)]} for i in range(3)}
    for strategy in ("server-uniform", "server-range"):
        assert (kafkagroup.assign(strategy, {"t0": 5, "t1": 4}, members, rack_aware=True).owner.tolist()
                == kafkagroup.assign(strategy, {"t0": 5, "t1": 4}, members).owner.tolist())
