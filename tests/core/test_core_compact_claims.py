"""Owned claims in Kafka's compact form, ``{"owned": {topic: partitions}}`` (what Kafka's coordinator keeps,
Map<Uuid, Set<Integer>>), are a representation of the pairs they stand for, never a change of result:
build_group gives the group, the dropped claims, or the error word for word, that the pairs
``[(topic, p) for topic, ps in owned.items() for p in ps]`` give, on both readers (the one-pass dict reader
and the general path through Member objects), for every container the partitions may come in. Partitions
that are not a collection (None, a number, a str, an iterator that could be read only once) are an error
naming the member and the topic.

The server assignor classes hand their previous targets (topic id -> frozenset) to the builder in this form
and build their answer by runs; they are held here to the plain procedure they replaced (pairs in, one
Python step per partition out), restated as the oracle.
"""
from __future__ import annotations

import types

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafkagroup
from kafkagroup.assignors.server import RangeAssignor, ServerMember, UniformAssignor
from kafkagroup.errors import InvalidGroupError
from kafkagroup.model import build_group, normalize_member
from kafkagroup.protocol.codec_harness import outcome

NAMES = ["t0", "t1", "t2", "gone"]
CONTAINERS = ["list", "tuple", "set", "frozenset", "range", "int64", "int32", "uint8", "dict_keys", "np_list"]


def _container(kind, parts):
    """``parts`` (a list of ints) in one of the containers a caller may use; a range only when it is one."""
    if kind == "tuple":
        return tuple(parts)
    if kind in ("set", "frozenset"):
        return (set if kind == "set" else frozenset)(parts)
    if kind == "range":
        start = min(parts, default=0)
        if sorted(parts) == list(range(start, start + len(parts))):
            return range(start, start + len(parts))   # (a range's order: ascending)
        return list(parts)
    if kind in ("int64", "int32", "uint8") and all(p >= 0 for p in parts):
        return np.array(parts, dtype=kind)
    if kind == "dict_keys":
        return dict.fromkeys(parts).keys()
    if kind == "np_list":
        return [np.int64(p) for p in parts]
    return list(parts)


@st.composite
def compact_groups(draw):
    """Dict specs whose owned claims are compact mappings (or, for some members, pairs or nothing)."""
    specs = {}
    for member_id in draw(st.lists(st.sampled_from(["C0", "C1", "c", "\U0001F600", "C10"]), max_size=5, unique=True)):
        spec: dict = {"topics": draw(st.lists(st.sampled_from(NAMES), max_size=4, unique=True))}
        form = draw(st.sampled_from(["compact", "compact", "pairs", "none", "empty"]))
        if form == "compact":
            owned = {}
            for topic in draw(st.lists(st.sampled_from(NAMES), max_size=3, unique=True)):
                parts = draw(st.lists(st.integers(-1, 5), max_size=4, unique=True))
                owned[topic] = _container(draw(st.sampled_from(CONTAINERS)), parts)
            spec[draw(st.sampled_from(["owned", "owned_partitions"]))] = owned
        elif form == "pairs":
            spec["owned"] = draw(st.lists(st.tuples(st.sampled_from(NAMES), st.integers(-1, 5)), max_size=3))
        elif form == "empty":
            spec["owned"] = {}
        specs[member_id] = spec
    metadata = draw(st.dictionaries(st.sampled_from(NAMES[:-1]), st.integers(0, 4)))
    return metadata, specs


def as_pairs(specs):
    """The same specs with every compact mapping written out as the pairs it stands for."""
    out = {}
    for member_id, spec in specs.items():
        spec = dict(spec)
        for key in ("owned", "owned_partitions"):
            if isinstance(spec.get(key), dict):
                spec[key] = [(topic, p) for topic, parts in spec[key].items() for p in parts]
        out[member_id] = spec
    return out


def _general(metadata, specs, strict):
    return build_group(metadata, [normalize_member(m, s, check_elements=False) for m, s in specs.items()],
                       strict=strict)


def _checked(metadata, specs, strict):
    return build_group(metadata, [normalize_member(m, s) for m, s in specs.items()], strict=strict)


def _named(build):
    """outcome() plus the dropped claims' names (outcome leaves them out)."""
    value, group = outcome(build)
    return value, None if group is None else group.dropped


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(compact_groups(), st.booleans())
def test_compact_claims_equal_the_pairs_they_stand_for(case, strict):
    metadata, specs = case
    pairs = as_pairs(specs)
    expected = _named(lambda: build_group(metadata, pairs, strict=strict))
    assert _named(lambda: build_group(metadata, specs, strict=strict)) == expected
    assert _named(lambda: _general(metadata, specs, strict)) == expected
    assert _named(lambda: _checked(metadata, specs, strict)) == expected


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(compact_groups(), st.sampled_from(["server-uniform", "server-range", "range", "cooperative-sticky"]))
def test_compact_claims_assign_as_the_pairs_do(case, strategy):
    metadata, specs = case
    a, _ = outcome(lambda: build_group(metadata, specs, strict=False))
    if a[0] != "ok":
        return
    try:
        expected = kafkagroup.assign(strategy, metadata, as_pairs(specs), strict=False)
    except InvalidGroupError as e:   # e.g. a partition held twice (server-uniform refuses it)
        with pytest.raises(InvalidGroupError, match=None) as got:
            kafkagroup.assign(strategy, metadata, specs, strict=False)
        assert str(got.value) == str(e)
        return
    got = kafkagroup.assign(strategy, metadata, specs, strict=False)
    assert got.owner.tolist() == expected.owner.tolist()
    assert got.metrics == expected.metrics and got.dropped == expected.dropped


@pytest.mark.parametrize("parts,reader", [
    (None, "fast"), (3, "fast"), ("012", "fast"), (b"\x00", "fast"), (np.int64(2), "fast"), (np.array(2), "fast"),
    (iter([0, 1]), "fast"), ((p for p in [0]), "fast"),
    (None, "general"), (3, "general"), ("012", "general"), (iter([0, 1]), "general"),
])
def test_partitions_that_are_not_a_collection_name_the_member_and_topic(parts, reader):
    specs = {"C0": {"topics": ["t0"], "owned": {"t0": [0]}}, "C1": {"topics": ["t0"], "owned": {"t0": parts}}}
    build = (lambda: build_group({"t0": 3}, specs)) if reader == "fast" else (lambda: _general({"t0": 3}, specs, True))
    with pytest.raises(InvalidGroupError) as e:
        build()
    assert str(e.value) == (f"member 'C1': owned partitions of topic 't0' must be a collection of partition numbers, "
                            f"got {parts!r}")


@pytest.mark.parametrize("owned,message", [
    ({"t0": [0, True]}, "member 'C0': owned partition ('t0', True) is not (topic, partition)"),
    ({"t0": [0.0]}, "member 'C0': owned partition ('t0', 0.0) is not (topic, partition)"),
    ({7: [0]}, "member 'C0': owned partition (7, 0) is not (topic, partition)"),
    ({"t0": [1], "t1": [0]}, "member 'C0' claims partition t1-0 of an unknown topic"),
    ({"t0": range(2, 4)}, "member 'C0' claims partition t0-3 of a topic with 3 partitions"),
    ({"t0": np.array([-1])}, "member 'C0' claims partition t0--1 of a topic with 3 partitions"),
])
def test_bad_compact_claims_are_worded_as_the_pairs_are(owned, message):
    for build in (lambda s: build_group({"t0": 3}, s), lambda s: _general({"t0": 3}, s, True)):
        with pytest.raises(InvalidGroupError) as e:
            build({"C0": {"topics": ["t0"], "owned": owned}})
        assert str(e.value) == message


def test_an_empty_compact_topic_is_no_claim_whatever_its_name():
    g = build_group({"t0": 3}, {"C0": {"topics": ["t0"], "owned": {7: [], "t0": {2}}}})
    assert g.owned_partitions.tolist() == [2]


def test_a_read_only_mapping_is_read_in_its_order():
    owned = types.MappingProxyType({"t1": [1], "t0": (0, 2)})
    g = build_group({"t0": 3, "t1": 2}, {"C0": {"topics": ["t0", "t1"], "owned": owned}})
    assert g.owned_partitions.tolist() == [4, 0, 2]   # t1-1 (global 3 + 1), t0-0, t0-2: the claims' order


# ---- the server assignor classes against the procedure they replaced ----

def oracle_target(assignor, members, topics, previous):
    """Pairs in (one per partition), one Python step per partition out: the classes before this change."""
    counts = {n: (s[1] if isinstance(s, tuple) else s) for n, s in topics.items()}
    name_of = {(s[0] if isinstance(s, tuple) else n): n for n, s in topics.items()}
    ids = {n: (s[0] if isinstance(s, tuple) else n) for n, s in topics.items()}
    specs = {}
    for member_id, member in members.items():
        names = member.subscribed_topic_names
        spec = {"topics": tuple(names) if isinstance(names, (list, tuple)) else tuple(sorted(names)),
                "instance": member.instance_id}
        before = (previous or {}).get(member_id)
        if before:
            spec["owned"] = [(name_of.get(tid) or str(tid), p) for tid, parts in before.items() for p in parts]
        specs[member_id] = spec
    result = kafkagroup.assign(assignor.strategy, counts, specs, strict=False)
    group = result.assignment._group
    target = {m: {} for m in group.members}
    for g, owner in enumerate(result.owner.tolist()):
        if owner >= 0:
            t = int(np.searchsorted(group.topic_base, g, side="right")) - 1
            target[group.members[owner]].setdefault(ids[group.topics[t]], set()).add(g - int(group.topic_base[t]))
    return {m: {tid: frozenset(ps) for tid, ps in by.items()} for m, by in target.items()}, result


@st.composite
def server_groups(draw):
    names = draw(st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), min_size=1, max_size=4, unique=True))
    topics = {n: (f"id-{n}", draw(st.integers(0, 6))) for n in names}
    members = {}
    for i in range(draw(st.integers(0, 6))):
        subs = draw(st.lists(st.sampled_from(names + ["missing"]), max_size=3, unique=True))
        members[f"m{i}"] = ServerMember(tuple(subs), draw(st.sampled_from([None, None, f"i{i}"])))
    # previous targets: partitions of live topics (each owned once), deleted topic ids, an unknown id whose
    # string is a live topic's name (the pairs form keeps both claims; so must the compact one)
    owner = {}
    for n, (_, count) in topics.items():
        for p in range(count):
            if members and draw(st.booleans()):
                owner[(n, p)] = draw(st.sampled_from(sorted(members)))
    previous = {m: {} for m in members}
    for (n, p), m in owner.items():
        previous[m].setdefault(topics[n][0], set()).add(p)
    for m in members:
        if draw(st.booleans()):
            previous[m]["id-deleted"] = {0, 1}
        if draw(st.integers(0, 5)) == 0 and names:
            previous[m][names[0]] = {99}    # an unknown id spelled as a live topic's name, past its count
        kind = draw(st.sampled_from([frozenset, set, sorted]))
        previous[m] = {tid: kind(ps) for tid, ps in previous[m].items()}
    return topics, members, previous


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(server_groups(), st.sampled_from([UniformAssignor, RangeAssignor]))
def test_server_classes_answer_what_the_per_partition_procedure_answers(case, cls):
    topics, members, previous = case
    assignor = cls()
    expected, expected_result = oracle_target(assignor, members, topics, previous)
    got = assignor.assign(members, topics, previous)
    assert got == expected and list(got) == list(expected)
    assert [list(by) for by in got.values()] == [list(by) for by in expected.values()]   # topic order too
    result = assignor.assign_result(members, topics, previous)
    assert result.owner.tolist() == expected_result.owner.tolist()
    assert result.dropped == expected_result.dropped
    assert result.metrics == expected_result.metrics


def test_claims_changed_by_user_code_while_read_are_refused_not_overrun():
    """A Mapping's items() runs user code in the middle of the claims' first pass. Here it grows an earlier
    member's list of pairs by 10,000 claims after that list was counted: the call must refuse the group with
    an error, not copy the grown list into arrays sized for the count (a heap overrun)."""
    from collections.abc import Mapping

    from kafkagroup import _claims

    first: list = [("t", 0)]

    class Growing(Mapping):
        def __init__(self) -> None:
            self._d = {"t": [1]}

        def __getitem__(self, key):
            return self._d[key]

        def __iter__(self):
            return iter(self._d)

        def __len__(self):
            return len(self._d)

        def items(self):
            first.extend([("t", 0)] * 10_000)
            return self._d.items()

    with pytest.raises(RuntimeError, match="member #0's owned claims changed while they were read"):
        _claims.intern_claims([first, Growing()], {"t": 0})
    offsets, slots, parts, bad = _claims.intern_claims([[("t", 0)], {"t": [1]}], {"t": 0})
    assert offsets.tolist() == [0, 1, 2] and parts.tolist() == [0, 1] and bad == -1


# ---- the one-walk reader of plain compact members (kafkagroup._claims._CompactReader) ----

class SubStr(str):
    pass


class SubSet(set):
    pass


class SubDict(dict):
    pass


def _with_dummy(parts):
    """A set holding `parts` that lost an item (its table keeps a deleted entry): read by the general scan."""
    s = set(parts) | {10**6}
    s.discard(10**6)
    return s


ODD_PARTITIONS = st.one_of(st.integers(-3, 40), st.sampled_from([2**30 - 1, 2**30, -2**30, 2**31, 2**40, 2**63 - 1,
                                                                 2**63, 2**70, -2**64, True, False]))
ODD_CONTAINERS = ["set", "frozenset", "dummy", "subset", "list", "tuple", "big", "np"]


def _odd_container(kind, parts):
    if kind == "set":
        return set(parts)
    if kind == "frozenset":
        return frozenset(parts)
    if kind == "dummy":
        return _with_dummy(parts)
    if kind == "subset":
        return SubSet(parts)
    if kind == "tuple":
        return tuple(parts)
    if kind == "big":   # more than a small set's 5 items: a table of its own
        return set(parts) | set(range(100, 120))
    if kind == "np" and all(type(p) is int and -2**63 <= p < 2**63 for p in parts):
        return {np.int64(p) for p in parts}
    return list(parts)


@st.composite
def odd_compact_groups(draw):
    """Groups mixing compact members of every odd shape with pairs members: empty containers, partitions huge,
    negative, bool, past int64; set subclasses, frozensets, sets with deleted entries, numpy integers; a dict
    subclass; str-subclass and unknown topics (a non-str topic only with no partitions, else it is an error);
    the same partition claimed by several members."""
    names = ["t0", "t1", "t2", "gone"]
    specs = {}
    for i in range(draw(st.integers(0, 6))):
        spec: dict = {"topics": draw(st.lists(st.sampled_from(names[:3]), max_size=3, unique=True))}
        form = draw(st.sampled_from(["compact", "compact", "compact", "pairs", "none"]))
        if form == "compact":
            owned = {}
            for topic in draw(st.lists(st.sampled_from(names + ["sub", "int"]), max_size=4, unique=True)):
                parts = draw(st.lists(ODD_PARTITIONS, max_size=4, unique_by=lambda p: (type(p), p)))
                key = SubStr("t1") if topic == "sub" else 7 if topic == "int" else topic
                if key == 7 and draw(st.booleans()):
                    parts = []
                owned[key] = _odd_container(draw(st.sampled_from(ODD_CONTAINERS)), parts)
            spec["owned"] = SubDict(owned) if draw(st.integers(0, 4)) == 0 else owned
        elif form == "pairs":
            spec["owned"] = draw(st.lists(st.tuples(st.sampled_from(names), st.integers(-1, 5)), max_size=4))
        specs[f"m{i}"] = spec
    return {"t0": 3, "t1": 40, "t2": 1}, specs


def _pairs_of(specs):
    out = {}
    for member_id, spec in specs.items():
        spec = dict(spec)
        if isinstance(spec.get("owned"), dict):
            spec["owned"] = [(topic, p) for topic, parts in spec["owned"].items() for p in parts]
        out[member_id] = spec
    return out


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(odd_compact_groups(), st.booleans())
def test_odd_compact_claims_build_what_their_pairs_build(case, strict):
    metadata, specs = case
    expected = _named(lambda: build_group(metadata, _pairs_of(specs), strict=strict))
    assert _named(lambda: build_group(metadata, specs, strict=strict)) == expected
    assert _named(lambda: _general(metadata, specs, strict)) == expected


@pytest.mark.parametrize("kind", ["set", "frozenset", "dummy", "list", "tuple"])
def test_a_one_item_set_is_read_wherever_its_item_sits(kind):
    """A one-item set's item sits in the slot its hash picks (p & 7 in a small set): every slot read."""
    metadata = {"t": 64}
    specs = {f"m{p:02d}": {"topics": ["t"], "owned": {"t": _odd_container(kind, [p])}} for p in range(64)}
    group = build_group(metadata, specs)
    assert group.owned_partitions.tolist() == list(range(64))
    assert group.owned_offsets.tolist() == list(range(65))


def test_many_members_mixing_forms_read_as_pairs():
    """Compact members beside pairs members (the pairs read from their lists, the compact ones copied from the
    reader's buffers, member by member), more topics than the reader remembers by position (64), containers
    growing from member to member (the buffers' growth)."""
    metadata = {f"t{k:03d}": 50 for k in range(80)}
    names = list(metadata)
    specs = {}
    for i in range(300):
        topics = names[i % 7:] if i % 3 else names[::-1]
        owned = {t: {(i + k) % 50, (3 * i + k) % 50} for k, t in enumerate(topics[: 1 + i % 80])}
        specs[f"m{i:03d}"] = {"topics": names, "owned": owned if i % 4 else [(t, p) for t, ps in owned.items() for p in ps]}
    assert _named(lambda: build_group(metadata, specs, strict=False)) == \
        _named(lambda: build_group(metadata, _pairs_of(specs), strict=False))


def test_a_str_subclass_names_a_topic_in_claims_and_subscriptions():
    """A str subclass is a topic name (isinstance(topic, str), as owned_pairs and check_topics say), read by
    name: it used to stop the native readers and fail an internal check (AssertionError)."""
    plain = build_group({"t0": 3, "t1": 2}, {"C0": {"topics": ["t0", "t1"], "owned": [("t0", 1), ("t1", 0)]}})
    for owned in ([(SubStr("t0"), 1), ("t1", 0)], {SubStr("t0"): {1}, "t1": [0]}, {SubStr("t0"): [1], SubStr("t1"): (0,)}):
        for topics in (["t0", "t1"], [SubStr("t0"), "t1"]):
            group = build_group({"t0": 3, "t1": 2}, {"C0": {"topics": topics, "owned": owned}})
            assert group.topics == plain.topics
            assert group.owned_partitions.tolist() == plain.owned_partitions.tolist()


class _Mutating(np.int64):
    """A partition number whose int() runs user code: `then()` once, when first read."""

    def __new__(cls, value, then):
        self = super().__new__(cls, value)
        self.then = then
        return self

    def __int__(self):
        then, self.then = self.then, None
        if then is not None:
            then()
        return int(np.int64(self))


def test_a_set_grown_while_read_is_refused_not_overrun():
    parts: set = set()
    parts.add(_Mutating(1, lambda: parts.update(range(100, 5000))))
    with pytest.raises(RuntimeError, match="owned partitions of topic 't' changed while they were read"):
        build_group({"t": 10}, {"C0": {"topics": ["t"], "owned": {"t": parts}}})


def test_a_list_shortened_while_read_is_refused_not_read_past_its_end():
    parts: list = []
    parts.extend([_Mutating(0, lambda: parts.clear()), 1, 2])
    with pytest.raises(RuntimeError, match="owned partitions of topic 't' changed while they were read"):
        build_group({"t": 10}, {"C0": {"topics": ["t"], "owned": {"t": parts}}})
