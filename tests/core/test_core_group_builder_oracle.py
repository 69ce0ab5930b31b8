"""The native group builder (csrc/kafkagroup/group_builder.hpp, behind kafkagroup.build_group) against its
pure-Python twin (kafkagroup.protocol.leader.reference_build_group): one harness, random groups, both run,
same arrays or the same first error.

Groups mix static and dynamic members, names with characters above U+FFFF (Java orders them by UTF-16 code
units) and around U+E000..U+FFFF, unknown topics, bad and stale claims, repeated member / instance ids,
topics listed twice, generations and racks; and the Arrow batch builder (the same native code, fed from
Arrow buffers) agrees group by group on a batch of them.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkagroup import _core
from kafkagroup.errors import InvalidGroupError
from kafkagroup.java_order import java_string_key
from kafkagroup.model import Member, build_group
from kafkagroup.protocol.leader import reference_build_group

NAMES = ["a", "b", "B", "t10", "t9", "\u00e9", "\uff5e", "\ue000x", "\U0001f600", "\U0001f600a", "\U00010000", "x" * 9]
RACKS = ["r0", "r1", "\U0001f600r"]
names = st.one_of(st.sampled_from(NAMES), st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=3))


@st.composite
def groups(draw):
    metadata = {}
    for topic in draw(st.lists(names, max_size=6, unique=True)):
        if draw(st.booleans()):
            metadata[topic] = draw(st.integers(0, 6))
        else:
            metadata[topic] = [draw(st.lists(st.sampled_from(RACKS + [None]), max_size=3))
                               for _ in range(draw(st.integers(0, 5)))]
    pool = list(metadata) + draw(st.lists(names, max_size=2))   # some subscribed topics are unknown
    members = []
    ids = draw(st.lists(names, max_size=7))
    for member_id in ids:
        topics = draw(st.lists(st.sampled_from(pool), max_size=4, unique=draw(st.integers(0, 9)) > 0)) if pool else []
        owned = tuple((draw(st.sampled_from(pool)), draw(st.integers(-1, 7)))
                      for _ in range(draw(st.integers(0, 3)))) if pool else ()
        members.append(Member(member_id, tuple(topics), owned,
                              draw(st.sampled_from([-1, -1, 0, 3, 2**31 - 1])),
                              draw(st.sampled_from([None, None] + RACKS)),
                              draw(st.sampled_from([None, None, "i-a", "i-\U0001f600", "i-\uff5e"]))))
    return metadata, members, draw(st.booleans())


def run(builder, metadata, members, strict):
    try:
        return builder(metadata, list(members), strict=strict)
    except InvalidGroupError as e:
        return str(e)


def same(native, reference):
    if isinstance(reference, str) or isinstance(native, str):
        assert native == reference
        return
    for name in ("topics", "members", "racks", "unknown_topics", "dropped_claims"):
        assert getattr(native, name) == getattr(reference, name), name
    for name, value in reference.arrays().items():
        got = native.arrays()[name]
        assert (got is None) == (value is None), name
        if value is not None:
            assert np.asarray(got).tolist() == np.asarray(value).tolist(), name
    assert native.topic_base.tolist() == reference.topic_base.tolist()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups())
def test_native_builder_equals_python_twin(group):
    metadata, members, strict = group
    same(run(build_group, metadata, members, strict), run(reference_build_group, metadata, members, strict))


def _member_info_key(member: Member) -> tuple:
    # Kafka's MemberInfo order: static members (a non-empty group.instance.id) first by instance id, then dynamic
    # ones by member id, in Java order
    static = bool(member.instance_id)
    return (not static, java_string_key(member.instance_id if static else member.member_id))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(groups())
def test_native_builder_equals_python_twin_members_already_in_member_info_order(group):
    # members handed over already sorted (a group's own earlier output: the usual input) take the builder's
    # one-pass check instead of its sort, and that pass alone must also find repeated ids / instance ids,
    # which sorting puts next to each other
    metadata, members, strict = group
    members = sorted(members, key=_member_info_key)
    same(run(build_group, metadata, members, strict), run(reference_build_group, metadata, members, strict))


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=6), st.text(max_size=6))
def test_native_java_order_equals_utf16_order(a, b):
    ka, kb = java_string_key(a), java_string_key(b)
    assert _core.java_compare(a, b) == (ka > kb) - (ka < kb)


def nested_rows_table(drawn):
    """The drawn groups as nested Arrow group rows with per-group topic tables."""
    import pyarrow as pa

    from kafkagroup.spark.fleet import GROUPS_SCHEMA

    topic_table = pa.list_(pa.struct([("topic", pa.string()), ("partitions", pa.int32()),
                                      ("replica_racks", pa.list_(pa.list_(pa.string())))]))
    schema = pa.schema(list(GROUPS_SCHEMA) + [pa.field("topic_table", topic_table)])
    rows = []
    for g, (metadata, members, _) in enumerate(drawn):
        rows.append({
            "group_id": f"g{g}",
            "members": [{"member_id": m.member_id, "topics": list(m.topics),
                         "owned": [{"topic": t, "partition": p} for t, p in m.owned],
                         "generation": m.generation if m.generation != -1 else None, "rack": m.rack,
                         "instance_id": m.instance_id} for m in members],
            "topic_table": [{"topic": t, "partitions": spec if isinstance(spec, int) else len(spec),
                             "replica_racks": None if isinstance(spec, int) else spec} for t, spec in metadata.items()],
        })
    return pa.Table.from_pylist(rows, schema=schema), [r["group_id"] for r in rows]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(groups(), min_size=1, max_size=8))
def test_arrow_batch_builder_equals_python_twin_group_by_group(drawn):
    pytest.importorskip("pyarrow")
    from kafkagroup.spark.arrow_builder import build_batch

    table, rows = nested_rows_table(drawn)
    for strict in (False, True):
        problems = build_batch(table, strict=strict)
        for g, (metadata, members, _) in enumerate(drawn):
            want = run(reference_build_group, metadata, members, strict)
            if isinstance(want, str):
                assert g in problems.errors and problems.errors[g] == f"group {rows[g]!r}: {want}"
                continue
            assert g not in problems.errors, problems.errors.get(g)
            got = problems.arrays(g)
            for name, value in want.arrays().items():
                assert (got[name] is None) == (value is None), name
                if value is not None:
                    assert np.asarray(got[name]).tolist() == np.asarray(value).tolist(), name
            assert problems.member_names(g) == want.members
            assert problems.topic_list(g) == want.topics
            assert problems.unknown_topics[problems.unknown_off[g]:problems.unknown_off[g + 1]].to_pylist() == want.unknown_topics
            assert problems.dropped_claims[g] == want.dropped_claims


def _name_columns(names: list[str | None], rng) -> dict[str, tuple]:
    """One column of entry names three ways, as build_groups accepts them: plain strings; a dictionary of
    the distinct names in first-appearance order (already interned: dictionary index = batch code); a
    dictionary with the names shuffled, repeated, unused ones and a null entry (codes remapped)."""
    from kafkagroup.model import utf8_strings

    distinct = list(dict.fromkeys(n for n in names if n is not None))
    code = {n: i for i, n in enumerate(distinct)}
    interned = (*utf8_strings(distinct), np.asarray([-1 if n is None else code[n] for n in names], dtype=np.int32))
    shuffled = distinct * 2 + ["unused", None]
    rng.shuffle(shuffled)
    slots: dict[str, list[int]] = {}
    for i, n in enumerate(shuffled):
        if n is not None:
            slots.setdefault(n, []).append(i)
    remapped = (*utf8_strings(shuffled), np.asarray([-1 if n is None else rng.choice(slots[n]) for n in names],
                                                     dtype=np.int32))
    return {"strings": (*utf8_strings(names), None), "interned": interned, "remapped": remapped}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(groups(), min_size=1, max_size=5), st.randoms(use_true_random=False))
def test_build_groups_same_arrays_whatever_the_name_encoding(drawn, rng):
    """Strings, an already-interned dictionary (the codec's and build_group's entry: no per-entry work) and
    a remapped dictionary give the same arrays and errors, on a batch of groups with per-group topic tables."""
    from kafkagroup.model import utf8_strings

    rows = [(g, t, spec if isinstance(spec, int) else len(spec)) for g, (metadata, _, _) in enumerate(drawn)
            for t, spec in metadata.items()]
    catalog = _core.TopicCatalog(utf8_strings([t for _, t, _ in rows]), np.asarray([c for *_, c in rows], dtype=np.int64),
                                 group=np.asarray([g for g, *_ in rows], dtype=np.int64))
    members = [m for _, ms, _ in drawn for m in ms]
    member_offsets = np.cumsum([0] + [len(ms) for _, ms, _ in drawn]).astype(np.int64)
    sub_offsets = np.cumsum([0] + [len(m.topics) for m in members]).astype(np.int64)
    owned_offsets = np.cumsum([0] + [len(m.owned) for m in members]).astype(np.int64)
    subs = _name_columns([t for m in members for t in m.topics], rng)
    owned = _name_columns([t for m in members for t, _ in m.owned], rng)
    partition = np.asarray([p for m in members for _, p in m.owned], dtype=np.int64)
    instances = [m.instance_id for m in members]
    results = {}
    for way in subs:
        built = _core.build_groups(catalog, member_offsets, utf8_strings([m.member_id for m in members]),
                                   utf8_strings(instances), sub_offsets, None, subs[way], owned_offsets, owned[way],
                                   partition, None, np.asarray([m.generation for m in members], dtype=np.int64),
                                   None, drawn[0][2])
        results[way] = {k: (v if isinstance(v, list) else np.asarray(v).tolist()) for k, v in built.items()}
    # sub_same: the front end says which members list the codes of the member before them (the codec
    # knows it from the bytes); said or not, the arrays are the same
    codes = subs["interned"][3]
    lists = [codes[a:b].tolist() for a, b in zip(sub_offsets[:-1], sub_offsets[1:])]
    firsts = set(member_offsets[:-1].tolist())
    for way, same_flags in (("said", [int(m not in firsts and bool(lists[m]) and lists[m] == lists[m - 1])
                                       for m in range(len(members))]),
                            ("unsaid", [0] * len(members))):
        built = _core.build_groups(catalog, member_offsets, utf8_strings([m.member_id for m in members]),
                                   utf8_strings(instances), sub_offsets, None, subs["interned"], owned_offsets,
                                   owned["interned"], partition, None,
                                   np.asarray([m.generation for m in members], dtype=np.int64), None, drawn[0][2],
                                   np.asarray(same_flags, dtype=np.uint8))
        results[way] = {k: (v if isinstance(v, list) else np.asarray(v).tolist()) for k, v in built.items()}
    assert results["interned"] == results["strings"]
    assert results["remapped"] == results["strings"]
    assert results["said"] == results["strings"]
    assert results["unsaid"] == results["strings"]


def test_members_repeating_the_previous_subscription_keep_every_verdict():
    """The builder reuses a member's output for the next member listing the same codes: a topic listed twice,
    unknown topics, stale and out-of-range claims still come out as the twin says, whatever the order."""
    metadata = {f"t{i}": 3 for i in range(6)}
    same_topics = ("t0", "t1", "zz-unknown", "t3")
    members = [Member(f"c{i:02d}", same_topics, (("t0", i % 4), ("t2", 0), ("t9", 1), ("t3", 2)), i % 3)
               for i in (5, 3, 9, 1, 7, 0, 2)]
    for strict in (False, True):
        same(run(build_group, metadata, members, strict), run(reference_build_group, metadata, members, strict))
    twice = members + [Member("c99", ("t0", "t0"), ()), Member("c98", ("t0", "t0"), ())]
    same(run(build_group, metadata, twice, False), run(reference_build_group, metadata, twice, False))
    assert "lists a topic twice" in run(build_group, metadata, twice, False)


def test_sub_same_is_trusted_but_never_read_out_of_bounds():
    """A front end that says a member repeats the previous member's codes when it does not (here with codes
    past the dictionary and negative ones) gets that member's output copied or bounds-checked, never a read
    outside the builder's tables; codes it did not vouch for are still checked."""
    from kafkagroup.model import utf8_strings

    catalog = _core.TopicCatalog(utf8_strings(["a", "b"]), np.asarray([2, 3], dtype=np.int64))
    ids = utf8_strings(["m2", "m1", "m0"])           # MemberInfo order reverses the rows
    dictionary = utf8_strings(["a", "b"])
    sub_offsets = np.asarray([0, 2, 4, 6], dtype=np.int64)
    codes = np.asarray([0, 1, 1 << 30, -5, 7, 0], dtype=np.int32)
    built = _core.build_groups(catalog, np.asarray([0, 3], dtype=np.int64), ids, None, sub_offsets, None,
                               (*dictionary, codes), None, None, None, None, None, None, True,
                               np.asarray([0, 1, 1], dtype=np.uint8))
    assert built["partition_count"].tolist() == [2, 3]
    assert set(built["sub_topics"].tolist()) <= {0, 1}
    with pytest.raises(InvalidGroupError, match="code past the dictionary"):
        _core.build_groups(catalog, np.asarray([0, 3], dtype=np.int64), ids, None, sub_offsets, None,
                           (*dictionary, codes), None, None, None, None, None, None, True,
                           np.asarray([0, 0, 1], dtype=np.uint8))
