"""The homogeneous form of the compact problem (one subscription row shared by every member) and
build_group's one-pass reader of plain dict specs: both are representations, never a change of result.

- ``assign_arrays(..., sub_offsets=None, sub_topics=row, num_members=M)`` gives exactly what the CSR of
  that row repeated M times gives, for every strategy (the server assignors read the row as it is, the
  others expand it natively);
- ``build_group`` over a dict of dict specs (kafkagroup._members) gives the group, or the error word for
  word, that the general path gives over the same members as ``Member`` objects.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafkagroup
from kafkagroup.errors import InvalidGroupError
from kafkagroup.model import build_group, normalize_member
from kafkagroup.protocol.codec_harness import outcome

STRATEGIES = kafkagroup.strategies()


@st.composite
def homogeneous_problems(draw):
    counts = draw(st.lists(st.integers(0, 6), min_size=1, max_size=5))
    row = draw(st.permutations(range(len(counts))).map(lambda p: list(p)[:draw(st.integers(0, len(p)))]))
    members = draw(st.integers(0, 7))
    total = sum(counts)
    owned = [sorted(set(draw(st.lists(st.integers(0, max(total - 1, 0)), max_size=4)))) if total else []
             for _ in range(members)]
    return counts, row, members, owned


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(homogeneous_problems(), st.sampled_from(STRATEGIES), st.booleans())
def test_shared_row_equals_its_csr_for_every_strategy(problem, strategy, with_owned):
    counts, row, members, owned = problem
    owned_kw = {}
    if with_owned:
        # the server uniform assignor refuses a partition held twice: give each partition one holder
        seen: set[int] = set()
        owned = [[p for p in claims if not (p in seen or seen.add(p))] for claims in owned]
        owned_kw = dict(owned_offsets=np.cumsum([0] + [len(c) for c in owned]).astype(np.int64),
                        owned_partitions=np.array([p for c in owned for p in c], dtype=np.int32))
    csr = dict(partition_count=np.array(counts, dtype=np.int32),
               sub_offsets=np.arange(members + 1, dtype=np.int64) * len(row),
               sub_topics=np.array(row * members, dtype=np.int32), **owned_kw)
    shared = dict(csr, sub_offsets=None, sub_topics=np.array(row, dtype=np.int32), num_members=members)
    a = kafkagroup.assign_arrays(strategy, **csr)
    b = kafkagroup.assign_arrays(strategy, **shared)
    assert a.owner.tolist() == b.owner.tolist()
    assert a.withheld.tolist() == b.withheld.tolist()
    assert a.metrics == b.metrics


def test_shared_form_is_checked_like_the_csr():
    with pytest.raises(InvalidGroupError, match="sub_offsets=None"):
        kafkagroup.assign_arrays("server-range", [3], [0, 1], [0], num_members=1)
    with pytest.raises(InvalidGroupError, match="num_members"):
        kafkagroup.assign_arrays("server-range", [3], None, [0], num_members=-1)
    with pytest.raises(InvalidGroupError, match="subscribed topic id 4"):
        kafkagroup.assign_arrays("server-uniform", [3], None, [4], num_members=2)
    with pytest.raises(InvalidGroupError, match="twice"):
        kafkagroup.assign_arrays("server-range", [3], None, [0, 0], num_members=2)
    with pytest.raises(InvalidGroupError, match="owned_offsets: expected 3"):
        kafkagroup.assign_arrays("server-uniform", [3], None, [0], num_members=2,
                                 owned_offsets=[0, 1], owned_partitions=[0])
    # a memberless group: nothing assigned, nothing counted unassigned, whatever the row says
    r = kafkagroup.assign_arrays("server-range", [3], None, [0], num_members=0)
    assert r.owner.tolist() == [-1, -1, -1] and r.metrics.unassigned == 0


def test_a_homogeneous_group_keeps_one_row_and_reads_back_its_csr():
    topics = ["b", "a", "gone"]
    g = build_group({"a": 2, "b": 1}, {f"m{i}": {"topics": topics} for i in range(3)})
    assert g.shared_topics.tolist() == [1, 0]            # "b", "a" in the members' order; "gone" skipped
    assert g.unknown_topics == ["gone"]
    assert g.sub_offsets.tolist() == [0, 2, 4, 6] and g.sub_topics.tolist() == [1, 0] * 3
    assert g.arrays(shared=True)["num_members"] == 3 and g.arrays()["sub_offsets"].tolist() == [0, 2, 4, 6]
    # equal lists that are different objects are one row too; a different order is not
    assert build_group({"a": 2}, {"x": {"topics": ["a"]}, "y": {"topics": ["a"]}}).shared_topics.tolist() == [0]
    assert build_group({"a": 2, "b": 1}, {"x": {"topics": ["a", "b"]}, "y": ("b", "a")}).shared_topics is None


NAMES = ["t0", "t1", "t2", "gone"]
IDS = ["C0", "C1", "c", "\U0001F600", "C10", ""]


@st.composite
def dict_groups(draw):
    """Dict specs in the spellings users write (aliases, None values, lists shared between members)."""
    shared_list = list(draw(st.lists(st.sampled_from(NAMES), max_size=4)))
    specs = {}
    for member_id in draw(st.lists(st.sampled_from(IDS), max_size=6, unique=True)):
        spec: dict = {}
        topics = draw(st.sampled_from(["shared", "copy", "own", "none", "absent", "tuple"]))
        if topics == "shared":
            spec["topics"] = shared_list
        elif topics == "copy":
            spec["topics"] = list(shared_list)
        elif topics == "tuple":
            spec["topics"] = tuple(shared_list)
        elif topics == "own":
            spec["topics"] = draw(st.lists(st.sampled_from(NAMES), max_size=4))
        elif topics == "none":
            spec["topics"] = None
        if draw(st.booleans()):
            key = draw(st.sampled_from(["owned", "owned_partitions"]))
            spec[key] = draw(st.lists(st.tuples(st.sampled_from(NAMES), st.integers(-1, 4)), max_size=3))
            if draw(st.booleans()):
                spec["owned" if key != "owned" else "owned_partitions"] = None
        if draw(st.booleans()):
            spec[draw(st.sampled_from(["instance", "instance_id", "group_instance_id", "group.instance.id"]))] = \
                draw(st.sampled_from(["i0", "i1", "", None]))
        if draw(st.booleans()):
            spec[draw(st.sampled_from(["rack", "rack_id", "client.rack", "client_rack"]))] = \
                draw(st.sampled_from(["r0", "r1", "", None]))
        if draw(st.booleans()):
            spec[draw(st.sampled_from(["generation", "generation_id"]))] = draw(st.sampled_from([-1, 0, 3, None]))
        if draw(st.booleans()):
            spec["unrelated"] = "ignored"
        specs[member_id] = spec
    metadata = draw(st.dictionaries(st.sampled_from(NAMES[:-1]), st.integers(0, 4)))
    return metadata, specs


def _general_path(metadata, specs, strict):
    """build_group through normalize_member (Member objects), the path every other input shape takes."""
    members = [normalize_member(mid, spec, check_elements=False) for mid, spec in specs.items()]
    return build_group(metadata, members, strict=strict)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dict_groups(), st.booleans())
def test_one_pass_reader_equals_the_general_path(case, strict):
    metadata, specs = case
    fast, _ = outcome(lambda: build_group(metadata, specs, strict=strict))
    general, _ = outcome(lambda: _general_path(metadata, specs, strict))
    assert fast == general


@pytest.mark.parametrize("spec", [
    {"topics": "t0"},                       # a string, not a list
    {"topics": ["t0", 3]},                  # a name that is not a string
    {"topics": ["t0"], "generation": 2**31},
    {"topics": ["t0"], "generation": True},
    {"topics": ["t0"], "rack": 3},
    {"topics": ["t0"], "instance": 7},
    {"topics": {"t0"}},                     # a set: the general path reads any iterable
])
def test_one_pass_reader_leaves_odd_specs_to_the_general_path(spec):
    fast, _ = outcome(lambda: build_group({"t0": 2}, {"C0": {"topics": ["t0"]}, "C1": spec}))
    general, _ = outcome(lambda: _general_path({"t0": 2}, {"C0": {"topics": ["t0"]}, "C1": spec}, True))
    assert fast == general


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dict_groups())
def test_every_dropped_claim_is_named(case):
    metadata, specs = case
    try:
        g = build_group(metadata, specs, strict=False)
    except InvalidGroupError:
        return
    assert len(g.dropped) == g.dropped_claims
    for d in g.dropped:
        spec = specs[d.member]
        owned = spec.get("owned") or spec.get("owned_partitions") or ()
        assert (d.topic, d.partition) in [tuple(c) for c in owned]
        if d.reason == "unknown topic":
            assert d.topic not in metadata
        elif d.reason.startswith("past"):
            assert not 0 <= d.partition < metadata[d.topic]
        else:
            assert d.topic not in {t for s in specs.values() for t in (s.get("topics") or ())}
