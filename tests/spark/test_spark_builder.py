"""The vectorised batch builder against kafkagroup.model.build_group, array by array (no Spark needed)."""
from __future__ import annotations

import itertools
import random

import numpy as np
import pyarrow as pa
import pytest

import kafkagroup
from kafkagroup.model import build_group
from kafkagroup import _core
from kafkagroup.spark.arrow_builder import TopicMeta, build_batch, concat_ranges
from spark_cases import nested_table, random_group


def _same(a, b, what):
    if a is None or b is None:
        assert a is None and b is None, what
    else:
        assert np.asarray(a).tolist() == np.asarray(b).tolist(), what


def test_native_java_order_is_utf16_code_unit_order():
    names = ["\U0001f600", "\uff5e", "a", "B", "\uff5e", "", "\U0001f600a", "\U0001f601", "\ud7ff", "\ue000"]
    for a in names:
        for b in names:
            want = (a.encode("utf-16-be", "surrogatepass") > b.encode("utf-16-be", "surrogatepass")) - (
                a.encode("utf-16-be", "surrogatepass") < b.encode("utf-16-be", "surrogatepass"))
            assert _core.java_compare(a, b) == want, (a, b)
    # U+FF5E sorts after the surrogate pair of U+1F600 in Java, before it in Python
    assert _core.java_compare("\uff5e", "\U0001f600") > 0


def test_native_java_order_of_long_names_differing_anywhere():
    """Names sharing prefixes of every length (the comparison skips equal prefixes 8 bytes at a time)."""
    rng = random.Random(3)
    alphabet = ["a", "b", "\u00e9", "\uff5e", "\U0001f600", "\ue000"]
    names = []
    for _ in range(300):
        prefix = "consumer-group-0001-"[:rng.randint(0, 20)]
        names.append(prefix + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 6))))
    java = lambda s: s.encode("utf-16-be", "surrogatepass")
    for a, b in zip(names, names[1:] + names[:1]):
        want = (java(a) > java(b)) - (java(a) < java(b))
        assert _core.java_compare(a, b) == want, (a, b)
        assert _core.java_compare(a, a) == 0


def test_concat_ranges():
    starts, lengths = np.array([5, 0, 9, 2]), np.array([2, 0, 3, 1])
    assert concat_ranges(starts, lengths).tolist() == [5, 6, 9, 10, 11, 2]
    assert concat_ranges(np.array([3]), np.array([0])).tolist() == []


@pytest.mark.parametrize("seed", range(6))
def test_batch_arrays_equal_build_group(seed):
    rng = random.Random(seed)
    groups = [random_group(rng, f"g{i}") for i in range(40)]
    problems = build_batch(nested_table(groups), strict=False)
    assert problems.errors == {}
    for g, group in enumerate(groups):
        expected = build_group(group["topics"], group["members"], strict=False)
        got = problems.arrays(g)
        for name, value in expected.arrays().items():
            _same(got[name], value, f"{group['group_id']}: {name}")
        assert problems.member_names(g) == expected.members
        assert problems.topic_list(g) == expected.topics
        lo, hi = problems.unknown_off[g], problems.unknown_off[g + 1]
        assert problems.unknown_topics[lo:hi].to_pylist() == expected.unknown_topics
        assert problems.dropped_claims[g] == expected.dropped_claims


def test_shared_metadata_equals_per_group_tables():
    rng = random.Random(7)
    groups = [random_group(rng, f"g{i}", owned=False) for i in range(20)]
    shared = {}
    for group in groups:
        shared.update(group["topics"])
    for group in groups:           # every group sees the same metadata
        group["topics"] = shared
    table = nested_table(groups).drop_columns(["topic_table"])
    problems = build_batch(table, TopicMeta.from_mapping(shared))
    for g, group in enumerate(groups):
        expected = build_group(shared, group["members"])
        for name, value in expected.arrays().items():
            _same(problems.arrays(g)[name], value, f"{group['group_id']}: {name}")


@pytest.mark.parametrize("mutate, message", [
    (lambda m: m.update(member_id=None), "group 'bad': member id must be a non-empty string"),
    (lambda m: m.update(topics=["t", "t"]), "group 'bad': member 'a' lists a topic twice"),
    (lambda m: m.update(owned=[{"topic": "t", "partition": 9}]), "group 'bad': member 'a' claims partition t-9 of a topic with 3 partitions"),
    (lambda m: m.update(owned=[{"topic": "nope", "partition": 0}]), "group 'bad': member 'a' claims partition nope-0 of an unknown topic"),
    (lambda m: m.update(member_id="b"), "group 'bad': duplicate member id 'b'"),
    (lambda m: m.update(topics=None), "group 'bad': member 'a': topics must be a list, got None"),
])
def test_bad_group_is_named(mutate, message):
    rows = [{"group_id": gid, "members": [{"member_id": "a", "topics": ["t"]}, {"member_id": "b", "topics": ["t"]}]}
            for gid in ("ok", "bad")]
    mutate(rows[1]["members"][0])
    table = pa.Table.from_pylist(rows, schema=nested_table([]).schema.remove(2))
    problems = build_batch(table, TopicMeta.from_mapping({"t": 3}))
    assert list(problems.errors) == [1]
    assert problems.errors[1].startswith(message)


def test_builder_matches_build_group_for_member_order_rules():
    # static members by instance id first, then dynamic by member id, all in Java order
    group = {"t": 4}
    members = {"z": {"topics": ["t"], "instance": "\uff5e"}, "y": {"topics": ["t"], "instance": "\U0001f600"},
               "\U0001f600": {"topics": ["t"]}, "\uff5e": {"topics": ["t"]}, "a": {"topics": ["t"]}}
    table = nested_table([{"group_id": "g", "topics": group, "members": members}])
    problems = build_batch(table)
    assert problems.member_names(0) == build_group(group, members).members == ["y", "z", "a", "\U0001f600", "\uff5e"]
    result = kafkagroup.assign_arrays("roundrobin", **problems.arrays(0))
    assert result.owner.tolist() == [0, 1, 2, 3]


def test_invalid_shared_metadata_raises():
    with pytest.raises(ValueError, match="topic 't': 2 replica rack lists for 3 partitions"):
        build_batch(nested_table([]).drop_columns(["topic_table"]),
                    TopicMeta.from_arrow(pa.table({"topic": ["t"], "partitions": [3],
                                                   "replica_racks": [[["r"], ["r"]]]})))


def test_sorted_member_rows_regroup_across_batch_boundaries():
    from kafkagroup.spark.fleet import generate_fleet, member_rows
    from kafkagroup.spark.executor import GROUP_ROWS, SORTED_MEMBER_ROWS, group_batches

    fleet = generate_fleet(30, seed=4, members=(1, 40), partitions=(5, 50))
    rows = member_rows(fleet.groups).sort_by("group_id")
    expected = [sorted(m["member_id"] for m in ms) for ms in fleet.groups.column("members").to_pylist()]
    # Spark cuts batches by row count, through groups; they are gathered to rows_per_plan before nesting
    for size, rows_per_plan in itertools.product((1, 7, 64, 10_000), (1, 5, 50, 50_000)):
        nested = list(group_batches(iter(rows.to_batches(max_chunksize=size)), SORTED_MEMBER_ROWS, rows_per_plan))
        regrouped = pa.Table.from_batches(nested)
        assert regrouped.column("group_id").to_pylist() == fleet.groups.column("group_id").to_pylist()
        assert [sorted(m["member_id"] for m in ms) for ms in regrouped.column("members").to_pylist()] == expected
        if rows_per_plan == 1 and size == 1:
            assert len(nested) >= 10       # many plans: the carry-over between them is exercised
        if rows_per_plan == 50_000:
            assert len(nested) == 1
    # one group far larger than a plan is gathered whole
    big = member_rows(generate_fleet(1, seed=2, members=(1000, 1000), partitions=(5, 5)).groups)
    assert big.num_rows == 1000
    nested = list(group_batches(iter(big.to_batches(max_chunksize=3)), SORTED_MEMBER_ROWS, 10))
    assert len(nested) == 1 and len(nested[0].column("members")[0]) == 1000
    assert list(group_batches(iter([]), SORTED_MEMBER_ROWS)) == []
    assert len(list(group_batches(iter(fleet.groups.to_batches(max_chunksize=8)), GROUP_ROWS))) == 4


@pytest.mark.parametrize("max_partitions", [1, 40, 333, 10**9])
def test_output_chunks_cover_whole_groups_and_equal_the_whole_batch(max_partitions):
    from kafkagroup.spark.fleet import generate_fleet, iter_batches
    from kafkagroup.spark.executor import AssignOptions, assignment_columns, output_chunks, run_batch

    fleet = generate_fleet(40, seed=11, members=(1, 12), partitions=(1, 200))
    batch = next(iter_batches(fleet.groups, 40))
    plan = run_batch(batch, TopicMeta.from_arrow(fleet.topics), AssignOptions("range"))
    problems = plan.problems
    chunks = list(output_chunks(problems, max_partitions))
    assert chunks[0][0] == 0 and chunks[-1][1] == problems.num_groups
    assert all(a[1] == b[0] for a, b in zip(chunks, chunks[1:]))
    group_parts = np.diff(problems.part_off[problems.topic_off])
    for g0, g1 in chunks:
        # at most max_partitions, unless the chunk is one group that alone exceeds it
        assert group_parts[g0:g1].sum() <= max_partitions or g1 - g0 == 1
        if g1 < problems.num_groups:   # greedy: the next group would not have fitted
            assert group_parts[g0:g1 + 1].sum() > max_partitions
    whole = pa.table(assignment_columns(plan), names=["group_id", "member_id", "topic", "partition"])
    pieces = [pa.table(assignment_columns(plan, g0, g1), names=whole.column_names) for g0, g1 in chunks]
    assert pa.concat_tables(pieces).equals(whole)
    assert whole.num_rows == int(group_parts.sum())   # range assigns every partition of these groups


@pytest.mark.parametrize("topics, message", [
    ({"t": -1}, "negative partition count -1"),
    ({"t": "abc"}, "expected a partition count or a list of replica racks"),
    ({"t": True}, "partition count must be an integer"),
    ({"t": [["r1"], "r2"]}, "partition 1: replica racks must be a list"),
])
def test_topic_mapping_is_checked_by_build_groups_rules(topics, message):
    from kafkagroup.errors import InvalidGroupError

    with pytest.raises(InvalidGroupError, match=message):
        TopicMeta.mapping_table(topics)
    with pytest.raises(InvalidGroupError, match=message):
        kafkagroup.assign("range", topics, {"m": ["t"]})


def test_group_over_the_partition_bound_is_refused_without_room():
    from kafkagroup.spark.fleet import assign_fleet_local

    groups = [{"group_id": "big", "topics": {"a": 2**28, "b": 5}, "members": {"m": {"topics": ["a", "b"]}}},
              {"group_id": "ok", "topics": {"a": 3}, "members": {"m": {"topics": ["a"]}}}]
    problems = build_batch(nested_table(groups))
    assert problems.errors[0] == ("group 'big': topic 'b': 5 partitions bring the total to 268435461, over the "
                                  "engine's limit of 268435456 (2^28) partitions")
    assert problems.part_off[problems.topic_off].tolist() == [0, 0, 3]     # the refused group takes no room
    assignments, metrics = assign_fleet_local(nested_table(groups), None, "range", on_error="record")
    assert assignments.num_rows == 3 and metrics.column("error").to_pylist()[1] is None
