"""_core.plan_batch (csrc/kafkagroup/plan_batch.hpp: build -> assign -> rows in one call, the GIL released
once) against the three calls it replaces, made one after the other: build_groups, assign_batch on the
builder's arrays (the caller's own refusals skipped), assignment_rows per output chunk (executor.output_chunks'
rule). Random batches of test_output_rows (unicode names, empty groups, refused groups, unknown topics),
every strategy, small chunk limits so that batches are cut into many chunks. No Spark needed.
"""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from kafkagroup import _core
from kafkagroup.batch import SKIP_GROUP
from kafkagroup.spark import executor
from kafkagroup.errors import InvalidGroupError
from kafkagroup.spark.arrow_builder import TopicMeta, batch_inputs, string_arg
from kafkagroup.spark.fleet import generate_fleet
from test_output_rows import _random_batch

STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky")


def _separately(inputs, skip, strategy, chunk_partitions):
    """What plan_batch must return, from the three calls."""
    built = _core.build_groups(*inputs.args)
    group_inputs = built["group_inputs"].copy()
    if skip is not None:
        group_inputs[skip > 0] |= SKIP_GROUP
    result = _core.assign_batch(strategy, built["topic_offsets"], built["member_offsets"], built["partition_count"],
                                built["sub_offsets"], built["sub_topics"], owned_offsets=built["owned_offsets"],
                                owned_partitions=built["owned_partitions"], generation=built["generation"],
                                member_rack=built["member_rack"],
                                replica_offsets=built["replica_offsets"] if len(built["replica_offsets"]) else None,
                                replica_racks=built["replica_racks"] if len(built["replica_offsets"]) else None,
                                group_inputs=group_inputs)
    topic_names = inputs.sub_names.take(pa.array(built["topic_entries"]))
    problems = executor.BatchProblems(
        group_ids=inputs.group_ids, member_off=built["member_offsets"], member_ids=inputs.member_ids,
        member_perm=built["member_perm"], sub_off=built["sub_offsets"], sub_topics=built["sub_topics"],
        topic_off=built["topic_offsets"], topic_names=topic_names, topic_count=built["partition_count"],
        part_off=built["part_offsets"], owned_off=built["owned_offsets"], owned_partitions=built["owned_partitions"],
        has_owned=None, generation=None, has_generation=None, member_rack=None, has_member_racks=None,
        replica_off=None, replica_racks=None, has_replica_racks=None, unknown_off=None, unknown_topics=None,
        dropped_claims=None, errors={}, group_inputs=group_inputs)
    chunks = list(executor.output_chunks(problems, chunk_partitions))
    rows = []
    for g0, g1 in chunks:
        n, *columns = _core.assignment_rows(string_arg(inputs.group_ids), string_arg(inputs.member_ids),
                                            string_arg(topic_names), built["member_offsets"], built["member_perm"],
                                            built["topic_offsets"], built["part_offsets"], result[1], g0, g1)
        rows.append((n, columns))
    return built, group_inputs, topic_names, result, chunks, rows


def _same_arrays(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)


def _check(inputs, skip, strategy, chunk_partitions):
    built, group_inputs, topic_names, result, chunks, rows = _separately(inputs, skip, strategy, chunk_partitions)
    planned = _core.plan_batch(*inputs.args, string_arg(inputs.group_ids), skip, strategy, 1, False, chunk_partitions)
    for name, value in built.items():
        if name == "group_inputs":
            _same_arrays(planned[name], group_inputs)
        elif name == "errors":
            assert planned[name] == value
        else:
            _same_arrays(planned[name], value)
    offsets, data = planned["topic_names"]
    assert executor._string_column(offsets, data).to_pylist() == topic_names.to_pylist()
    assert planned["assigned"] and planned["rows_written"]
    for got, want in zip(planned["result"][:-1], result[:-1]):
        if want.dtype == np.float64:   # engine_us: wall time, not compared
            assert got.shape == want.shape
        else:
            _same_arrays(got, want)
    assert planned["result"][-1] == result[-1]
    assert planned["chunk_groups"].tolist() == [0] + [g1 for _, g1 in chunks]
    assert len(planned["rows"]) == len(rows)
    for (n, *got), (want_n, want) in zip(planned["rows"], rows):
        assert n == want_n
        for got_column, want_column in zip(got, want):
            if isinstance(want_column, tuple):
                for g, w in zip(got_column, want_column):
                    _same_arrays(g, w)
            else:
                _same_arrays(got_column, want_column)


@pytest.mark.parametrize("seed", range(6))
def test_plan_batch_is_the_three_calls(seed: int) -> None:
    rng = random.Random(seed)
    table = _random_batch(rng, rng.randrange(1, 40))
    inputs = batch_inputs(table, strict=False)
    num_groups = table.num_rows
    skip = None
    if seed % 2:   # the caller refuses some groups on its own (null ids, bad topic_table rows)
        skip = np.array([rng.random() < 0.2 for _ in range(num_groups)], dtype=np.uint8)
    for strategy in STRATEGIES:
        for chunk_partitions in (1, 7, 40, 1 << 18):
            _check(inputs, skip, strategy, chunk_partitions)


def test_plan_batch_on_a_generated_fleet_batch() -> None:
    fleet = generate_fleet(300, seed=3, members=(2, 12), partitions=(30, 150))
    inputs = batch_inputs(fleet.groups, TopicMeta.from_arrow(fleet.topics))
    for strategy in STRATEGIES:
        _check(inputs, None, strategy, 2_000)


def test_plan_batch_stops_at_the_first_step_that_refuses_a_group() -> None:
    rng = random.Random(11)
    table = _random_batch(rng, 12)
    inputs = batch_inputs(table, strict=False)
    skip = np.zeros(table.num_rows, dtype=np.uint8)
    skip[3] = 1
    planned = _core.plan_batch(*inputs.args, string_arg(inputs.group_ids), skip, "range", 1, True, 1 << 18)
    assert not planned["assigned"] and not planned["rows_written"] and planned["rows"] == []
    assert planned["group_inputs"][3] & SKIP_GROUP
    planned = _core.plan_batch(*inputs.args, string_arg(inputs.group_ids), None, "range", 1, False, 1 << 18)
    assert planned["assigned"] and planned["rows_written"]


def test_plan_batch_checks_its_own_arguments() -> None:
    table = _random_batch(random.Random(5), 4)
    inputs = batch_inputs(table, strict=False)
    ids = string_arg(inputs.group_ids)
    with pytest.raises(InvalidGroupError, match="skip: expected 4 entries, got 3"):
        _core.plan_batch(*inputs.args, ids, np.zeros(3, np.uint8), "range", 1, False, 100)
    with pytest.raises(InvalidGroupError, match="3 group ids for 4 groups"):
        _core.plan_batch(*inputs.args, string_arg(inputs.group_ids.slice(0, 3)), None, "range", 1, False, 100)
    with pytest.raises(InvalidGroupError, match="unknown assignment strategy 'nope'"):
        _core.plan_batch(*inputs.args, ids, None, "nope", 1, False, 100)
    with pytest.raises(InvalidGroupError, match="threads must be >= 1"):
        _core.plan_batch(*inputs.args, ids, None, "range", 0, False, 100)


def _widened(arg):
    """A string / name argument with its offsets widened to int64 (the form the builder took before int32)."""
    if arg is None:
        return None
    return (np.asarray(arg[0], dtype=np.int64), *arg[1:])


@pytest.mark.parametrize("seed", range(4))
def test_arrow_int32_offsets_read_as_the_widened_ones(seed: int) -> None:
    """string_arg hands Arrow's 32-bit offsets over as they are (a sliced batch: offsets not from 0); the builder and
    the row gather read them exactly as the widened int64 copy."""
    rng = random.Random(seed)
    table = _random_batch(rng, 30)
    batch = table.combine_chunks().to_batches()[0].slice(5, 20)
    inputs = batch_inputs(batch, strict=False)
    assert inputs.args[2][0].dtype == np.int32 and inputs.args[6][0].dtype == np.int32
    wide = list(inputs.args)
    for i in (2, 3, 6, 8):
        wide[i] = _widened(wide[i])
    narrow, widened = _core.build_groups(*inputs.args), _core.build_groups(*wide)
    assert narrow.keys() == widened.keys()
    for name in narrow:
        if name == "errors":
            assert narrow[name] == widened[name]
        else:
            _same_arrays(narrow[name], widened[name])
    ids = string_arg(inputs.group_ids)
    a = _core.plan_batch(*inputs.args, ids, None, "range", 1, False, 1 << 18)
    b = _core.plan_batch(*wide, _widened(ids), None, "range", 1, False, 1 << 18)
    for (n, *x), (m, *y) in zip(a["rows"], b["rows"]):
        assert n == m
        for cx, cy in zip(x, y):
            for u, v in zip(cx if isinstance(cx, tuple) else (cx,), cy if isinstance(cy, tuple) else (cy,)):
                _same_arrays(u, v)


def test_int32_offsets_are_checked() -> None:
    inputs = batch_inputs(_random_batch(random.Random(2), 6), strict=False)
    offsets, data, valid = inputs.args[2]
    bad = offsets.copy()
    bad[2], bad[3] = bad[3], bad[2] - 1
    args = list(inputs.args)
    args[2] = (bad, data, valid)
    with pytest.raises(InvalidGroupError, match="member_ids: offsets decrease at"):
        _core.build_groups(*args)
    past = offsets.copy()
    past[-1] = len(data) + 1 + past[0]
    args[2] = (past, data, valid)
    with pytest.raises(InvalidGroupError, match="member_ids: offsets run past the"):
        _core.build_groups(*args)


def test_metric_columns_are_contiguous_and_each_groups_own() -> None:
    """assign_batch's metrics [G, 8] lie column by column (each metric a column without a copy) and row g is group
    g's metrics as assign_arrays computes them."""
    from kafkagroup import assign_arrays
    from kafkagroup.batch import METRIC_NAMES, GroupBatch, assign_many
    from kafkagroup.scenarios import random_group

    groups = [random_group(6, 3, 20, seed=s).arrays() for s in range(7)]
    result = assign_many("sticky", GroupBatch.concat(groups), threads=2)
    for name in METRIC_NAMES:
        assert result.metrics[name].flags.c_contiguous
    for g, arrays in enumerate(groups):
        single = assign_arrays("sticky", **arrays).metrics
        assert [int(result.metrics[name][g]) for name in METRIC_NAMES] == [getattr(single, n) for n in METRIC_NAMES]
