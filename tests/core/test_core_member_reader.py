"""kafkagroup._members reads a group's dict specs and topic lists by object address where it can (a spec key's
column, a topic name's code, a member's list equal to the one before); these tests hold it to the plain
per-member procedure, restated here, on inputs built to defeat each shortcut: keys and names made afresh
per member (equal strings, distinct objects), more distinct key objects than the reader remembers, lists
equal to an earlier member's but not the previous one's, long groups whose codes outgrow any first buffer.
The result of kafkagroup.assign's MemberAssignment, whose member index is built on first lookup, is held
to what a dict gives."""
from __future__ import annotations

import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafkagroup
from kafkagroup._members import code_topic_lists, read_specs
from kafkagroup.model import _SPEC_ALIASES, _SPEC_COLUMNS, build_group, normalize_member
from kafkagroup.protocol.codec_harness import outcome

NAMES = ["t0", "t1", "t2", "t3", "gone"]


def fresh(s: str) -> str:
    """An equal str that is a different object (what json, a network decoder or a database hands out)."""
    return "".join(list(s))


def plain_codes(lists, code):
    """The procedure code_topic_lists stands for: each member's names coded in order, a new name taking the
    next code (dict.setdefault); (offsets, codes) as CSR, or (None, row) when every list codes the same."""
    rows = [[code.setdefault(name, len(code)) for name in lst] for lst in lists]
    if rows and all(r == rows[0] for r in rows):
        return None, rows[0]
    return np.cumsum([0] + [len(r) for r in rows]).tolist(), [c for r in rows for c in r]


@st.composite
def topic_lists(draw):
    """Lists as members send them: shared objects, copies, tuples, names made afresh, distinct lists."""
    members = draw(st.integers(0, 60))
    pool = [draw(st.lists(st.sampled_from(NAMES), max_size=5, unique=True)) for _ in range(draw(st.integers(1, 4)))]
    lists = []
    for _ in range(members):
        base = draw(st.sampled_from(pool))
        how = draw(st.sampled_from(["same", "copy", "tuple", "fresh", "previous"]))
        if how == "previous" and lists:
            lists.append(lists[-1])
        elif how == "copy":
            lists.append(list(base))
        elif how == "tuple":
            lists.append(tuple(base))
        elif how == "fresh":
            lists.append([fresh(n) for n in base])
        else:
            lists.append(base)
    return lists


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(topic_lists(), st.lists(st.sampled_from(NAMES), max_size=3, unique=True))
def test_code_topic_lists_equals_the_plain_procedure(lists, known):
    code = {name: i for i, name in enumerate(known)}
    expected_code = dict(code)
    want = plain_codes(lists, expected_code)
    offsets, codes, bad = code_topic_lists(lists, code)
    assert bad == -1
    got = (None if offsets is None else offsets.tolist(), codes.tolist())
    if not lists:
        assert got == (None, [])
    else:
        assert got == want
    assert code == expected_code   # the same names gained, with the same codes, in the same order
    assert codes.dtype == np.int32 and (offsets is None or offsets.dtype == np.int64)


def test_long_groups_outgrow_the_first_buffer():
    lists = [NAMES[: 1 + i % 5] if i % 3 else [fresh(n) for n in reversed(NAMES)] for i in range(5000)]
    code: dict[str, int] = {}
    offsets, codes, bad = code_topic_lists(lists, code)
    want_offsets, want_codes = plain_codes(lists, {})
    assert bad == -1 and offsets.tolist() == want_offsets and codes.tolist() == want_codes


@pytest.mark.parametrize("bad_list,index", [(["t0", 3], 2), ({"t0"}, 2), (("t0", None), 2), ("t0", 2)])
def test_a_list_that_is_not_names_is_reported_by_member(bad_list, index):
    lists = [["t0"], ["t0", "t1"], bad_list, ["t0"]]
    assert code_topic_lists(lists, {})[2] == index


def specs_with_fresh_keys(members: int, aliases: bool):
    """Dict specs whose keys are distinct str objects in every member (past any cache of key addresses)."""
    specs = {}
    for i in range(members):
        keys = (["topics", "owned_partitions", "generation_id", "client.rack", "group.instance.id"] if aliases and i % 2
                else ["topics", "owned", "generation", "rack", "instance"])
        values = [NAMES[: i % 4], [(NAMES[0], i % 3)], i % 5 - 1, f"r{i % 2}" if i % 3 else None,
                  f"i{i}" if i % 4 == 0 else None]
        spec = {fresh(k): v for k, v in zip(keys, values)}
        spec[fresh("unrelated")] = "ignored"
        if i % 5 == 0:
            spec["owned"] = None   # a None value never fills a column: the alias beside it does
        specs[f"m{i:03d}"] = spec
    return specs


@pytest.mark.parametrize("aliases", [False, True])
def test_read_specs_with_keys_made_afresh_equals_literal_keys(aliases):
    specs = specs_with_fresh_keys(60, aliases)
    interned = {m: {sys.intern(k): v for k, v in s.items()} for m, s in specs.items()}   # one object per key
    got = read_specs(specs, _SPEC_ALIASES, len(_SPEC_COLUMNS))
    assert got == read_specs(interned, _SPEC_ALIASES, len(_SPEC_COLUMNS))
    ids, topics, owned, generation, rack, instance = got
    for i, m in enumerate(ids):
        member = normalize_member(m, specs[m], check_elements=False)
        assert (tuple(topics[i]), owned[i] or (), generation[i], rack[i] or None, instance[i] or None) == \
            (member.topics, member.owned, member.generation, member.rack, member.instance_id)


def test_build_group_with_fresh_keys_equals_the_general_path():
    specs = specs_with_fresh_keys(60, True)
    fast, _ = outcome(lambda: build_group({"t0": 3, "t1": 2, "t2": 1}, specs, strict=False))
    general, _ = outcome(lambda: build_group({"t0": 3, "t1": 2, "t2": 1},
                                             [normalize_member(m, s, check_elements=False) for m, s in specs.items()],
                                             strict=False))
    assert fast == general


def test_a_key_that_is_a_str_subclass_goes_to_the_general_path():
    class Key(str):
        pass

    specs = {"C0": {"topics": ["t0"]}, "C1": {Key("topics"): ["t0"]}}
    assert read_specs(specs, _SPEC_ALIASES, len(_SPEC_COLUMNS)) is None
    assert build_group({"t0": 2}, specs).members == ["C0", "C1"]


@pytest.mark.parametrize("strategy", ["server-uniform", "server-range", "range", "cooperative-sticky"])
def test_member_assignment_answers_as_a_dict_whatever_is_asked_first(strategy):
    """The member index of a result is built on its first lookup: each way in (a member's list, membership,
    iteration, counts, equality) answers what the eagerly built dict answers, and unknown members still
    raise KeyError."""
    topics = {"t0": 5, "t1": 3}
    members = {f"C{i}": {"topics": ["t0", "t1"] if i % 2 else ["t0"], **({"instance": f"i{9 - i}"} if i % 3 == 0 else {})}
               for i in range(7)}
    reference = dict(kafkagroup.assign(strategy, topics, members).assignment.items())
    for first in ("getitem", "contains", "missing", "iter", "counts", "eq", "get"):
        a = kafkagroup.assign(strategy, topics, members).assignment
        if first == "getitem":
            assert a["C3"] == reference["C3"]
        elif first == "contains":
            assert "C3" in a and "C9" not in a and 3 not in a
        elif first == "missing":
            with pytest.raises(KeyError):
                a["C9"]
        elif first == "iter":
            assert list(a) == list(reference)
        elif first == "counts":
            assert a.counts() == {m: len(v) for m, v in reference.items()}
        elif first == "get":
            assert a.get("C9") is None and a.get("C1") == reference["C1"]
        else:
            assert a == reference
        assert dict(a.items()) == reference and len(a) == len(reference)


def odd_set(draw_values, removed):
    """A set holding `draw_values` after `removed` were added and taken out again (their slots left as
    dummies, which iteration skips)."""
    s = set(removed)
    s.update(draw_values)
    for r in removed:
        s.discard(r)
    return s


set_items = st.one_of(st.integers(-3, 40), st.sampled_from([2**30 - 1, 2**30, 2**31, 2**62, 2**63, -2**31, -2**63 - 1]),
                      st.integers(-3, 9).map(np.int64), st.sampled_from([True, 1.5, "2"]))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(NAMES), st.lists(set_items, max_size=6), st.lists(st.integers(100, 200),
                                                                                           max_size=6),
                          st.booleans()), max_size=4),
       st.booleans())
def test_compact_sets_read_as_the_pairs_they_iterate_to(topics, strict):
    """A compact topic's set (or frozenset) is read from its hash table in the order `for p in s` gives, its
    ints in place: whatever the set holds -- big and negative ints, numpy ints, holes left by removed items,
    bools or floats (errors) -- the group equals the one built from the pairs `for p in s` yields."""
    owned = {}
    for topic, values, removed, frozen in topics:
        try:
            s = odd_set(values, removed)
        except TypeError:
            continue
        owned[topic] = frozenset(s) if frozen else s
    specs = {"C0": {"topics": ["t0", "t1", "t2"], "owned": owned}, "C1": {"topics": ["t1"]}}
    pairs = {"C0": {"topics": ["t0", "t1", "t2"], "owned": [(t, p) for t, ps in owned.items() for p in ps]},
             "C1": {"topics": ["t1"]}}
    metadata = {"t0": 40, "t1": 3, "t2": 0}
    assert outcome(lambda: build_group(metadata, specs, strict=strict))[0] == \
        outcome(lambda: build_group(metadata, pairs, strict=strict))[0]
