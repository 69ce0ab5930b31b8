"""The native assignment-row gather (csrc/kafkagroup/output_rows.hpp) against a plain Python reference.

Random batches built by build_batch (unicode names, empty groups, groups refused by the builder,
unknown topics, topics with no partitions) with random owner[] arrays (unassigned partitions, withheld
partitions, members never assigned anything), gathered whole and in chunks. No Spark needed.
"""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from kafkagroup import _core
from kafkagroup.errors import InvalidGroupError, InvariantError
from kafkagroup.spark import executor
from kafkagroup.spark.arrow_builder import build_batch, string_arg
from spark_cases import nested_table, random_group


def _random_batch(rng: random.Random, num_groups: int) -> pa.Table:
    groups = []
    for i in range(num_groups):
        group = random_group(rng, f"g\U0001f600{i}" if i % 3 == 0 else f"grp-\uff5e{i}", max_members=6, max_partitions=9)
        if rng.random() < 0.1:
            group["members"] = {}                      # an empty group: no rows
        groups.append(group)
    table = nested_table(groups)
    if num_groups > 2 and rng.random() < 0.7:          # a refused group: the same member id twice
        rows = table.to_pylist()
        bad = rows[1]
        if bad["members"]:
            bad["members"].append(dict(bad["members"][0]))
        table = pa.Table.from_pylist(rows, schema=table.schema)
    return table


def _random_plan(rng: random.Random, num_groups: int) -> executor.BatchPlan:
    problems = build_batch(_random_batch(rng, num_groups), strict=False)
    owner = np.full(int(problems.part_off[-1]), -1, dtype=np.int32)
    withheld = []
    for g in range(problems.num_groups):
        members = int(problems.member_off[g + 1] - problems.member_off[g])
        p0 = int(problems.part_off[problems.topic_off[g]])
        p1 = int(problems.part_off[problems.topic_off[g + 1]])
        for p in range(p0, p1):
            roll = rng.random()
            if roll < 0.15:
                withheld.append(p)                    # withheld: no owner, listed separately
            elif roll < 0.3 or not members:
                continue                              # unassigned
            else:
                owner[p] = rng.randrange(members)
    return executor.BatchPlan(problems=problems, owner=owner, withheld=np.asarray(withheld, dtype=np.int64),
                              metrics={}, engine_us=np.zeros(problems.num_groups), errors=dict(problems.errors))


def _expected_rows(plan: executor.BatchPlan, g0: int, g1: int) -> list[tuple[str, str, str, int]]:
    """The rows as a Python loop states them: per group, topic, partition with an owner."""
    problems, rows = plan.problems, []
    for g in range(g0, g1):
        members = problems.member_names(g)
        topics = problems.topic_list(g)
        for local, t in enumerate(range(int(problems.topic_off[g]), int(problems.topic_off[g + 1]))):
            for p in range(int(problems.part_off[t]), int(problems.part_off[t + 1])):
                if plan.owner[p] >= 0:
                    rows.append((problems.group_id(g), members[plan.owner[p]], topics[local], p - int(problems.part_off[t])))
    return rows


def _rows(columns: list[pa.Array]) -> list[tuple[str, str, str, int]]:
    for column, field in zip(columns, executor.ASSIGNMENT_ARROW_SCHEMA):
        assert column.type == field.type
        column.validate(full=True)
        assert column.null_count == 0
    return list(zip(*(c.to_pylist() for c in columns)))


@pytest.mark.parametrize("seed", range(8))
def test_native_rows_equal_the_python_reference(seed):
    rng = random.Random(seed)
    plan = _random_plan(rng, rng.randint(1, 30))
    n = plan.problems.num_groups
    assert _rows(executor.assignment_columns(plan)) == _expected_rows(plan, 0, n)
    cuts = sorted({0, n, *(rng.randint(0, n) for _ in range(3))})
    for g0, g1 in zip(cuts, cuts[1:]):   # any range of groups, empty ranges included
        assert _rows(executor.assignment_columns(plan, g0, g1)) == _expected_rows(plan, g0, g1)
    # record batches in chunks of whole groups concatenate to the whole batch
    chunked = pa.Table.from_batches(list(executor.assignment_batches_of(plan)), schema=executor.ASSIGNMENT_ARROW_SCHEMA)
    assert list(zip(*(c.to_pylist() for c in chunked.columns))) == _expected_rows(plan, 0, n)
    # withheld partitions keep their own output: group, topic, partition of each
    problems = plan.problems
    want = []
    for p in plan.withheld.tolist():
        t = int(np.searchsorted(problems.part_off, p, side="right") - 1)
        g = int(np.searchsorted(problems.topic_off, t, side="right") - 1)
        want.append((problems.group_id(g), problems.topic_names[t].as_py(), p - int(problems.part_off[t])))
    assert list(zip(*(c.to_pylist() for c in executor.withheld_columns(plan)))) == want


def test_sliced_name_arrays_are_read_from_their_offset():
    rng = random.Random(11)
    plan = _random_plan(rng, 12)
    problems = plan.problems
    padded = pa.concat_arrays([pa.array(["x" * 50, None], pa.string()), problems.member_ids]).slice(2)
    problems.member_ids = padded
    assert _rows(executor.assignment_columns(plan)) == _expected_rows(plan, 0, problems.num_groups)


def _args(plan: executor.BatchPlan, owner: np.ndarray, member_ids: pa.Array | None = None, g1: int | None = None):
    p = plan.problems
    return (string_arg(p.group_ids), string_arg(p.member_ids if member_ids is None else member_ids),
            string_arg(p.topic_names), p.member_off, p.member_perm, p.topic_off, p.part_off, owner, 0,
            p.num_groups if g1 is None else g1)


def _one_assigned_partition(plan: executor.BatchPlan) -> tuple[int, int]:
    problems = plan.problems
    for g in range(problems.num_groups):
        p0 = int(problems.part_off[problems.topic_off[g]])
        if int(problems.part_off[problems.topic_off[g + 1]]) > p0 and problems.member_off[g + 1] > problems.member_off[g]:
            return g, p0
    raise AssertionError("no group with members and partitions")


def test_bad_layout_is_refused_with_a_clear_error():
    plan = _random_plan(random.Random(3), 20)
    g, p = _one_assigned_partition(plan)
    owner = plan.owner.copy()
    members = int(plan.problems.member_off[g + 1] - plan.problems.member_off[g])
    owner[p] = members
    with pytest.raises(InvalidGroupError, match=rf"owner\[{p}\] = {members} but group {g} has {members} members"):
        _core.assignment_rows(*_args(plan, owner))
    with pytest.raises(InvalidGroupError, match="owner: expected"):
        _core.assignment_rows(*_args(plan, owner[:-1]))
    with pytest.raises(InvalidGroupError, match="group range"):
        _core.assignment_rows(*_args(plan, plan.owner, g1=plan.problems.num_groups + 1))


def test_an_assigned_partition_of_a_null_member_is_a_defect():
    plan = _random_plan(random.Random(5), 20)
    g, p = _one_assigned_partition(plan)
    owner = plan.owner.copy()
    owner[p] = 0
    row = int(plan.problems.member_perm[plan.problems.member_off[g]])
    ids = plan.problems.member_ids.to_pylist()
    ids[row] = None
    with pytest.raises(InvariantError, match=f"group {g} assigns a partition but its member id is null"):
        _core.assignment_rows(*_args(plan, owner, pa.array(ids, pa.string())))
