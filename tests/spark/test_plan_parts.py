"""_core.plan_parts (csrc/kafkagroup/plan_batch.hpp: a batch cut into parts of whole groups, each planned by
plan_batch on native threads) against plan_batch on the whole batch: the same builder and engine errors in the
batch's own indices, the same assignment rows and, part after part, the same metrics rows. Random batches over
one shared topic table (names above U+FFFF, claims, generations, racks) with groups the builder refuses in every
way it can, every strategy, part sizes from 1 group to the whole batch. And the fleet loop's side of it
(executor.plan_outputs_in_parts): the same tables and error messages as one plan_outputs_of call. No Spark needed.
"""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from kafkagroup import _core
from kafkagroup.errors import InvalidGroupError
from kafkagroup.spark import executor
from kafkagroup.spark.arrow_builder import TopicMeta, batch_inputs, names_arg, string_arg
from kafkagroup.spark.fleet import GROUPS_SCHEMA, assign_fleet_local, generate_fleet
from spark_cases import nested_row, nested_table, random_group

STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky")
TOPIC_ROWS = pa.schema([("topic", pa.string()), ("partitions", pa.int32()),
                        ("replica_racks", pa.list_(pa.list_(pa.string())))])


def _refuse(rng: random.Random, members: list[dict], topics: list[str]) -> None:
    """Makes the builder refuse the group, in one of the ways group_builder.hpp's BuildErrorCode lists."""
    m = dict(members[0]) if members else {"member_id": "x", "topics": topics[:1], "owned": [], "generation": None,
                                          "rack": None, "instance_id": None}
    way = rng.randrange(9)
    if way == 0:
        m["member_id"] = None                                            # kMemberIdMissing
    elif way == 1:
        m["topics"] = None                                               # kTopicsNull
    elif way == 2:
        m["topics"] = [None]                                             # kTopicNameNull
    elif way == 3:
        m["owned"] = [{"topic": None, "partition": 0}]                  # kClaimMalformed
    elif way == 4:
        m["owned"] = [{"topic": topics[0], "partition": None}]          # kClaimMalformed (null partition)
    elif way == 5:
        m["topics"] = [topics[0], topics[0]]                             # kTopicListedTwice
    elif way == 6:
        m["owned"] = [{"topic": "nowhere", "partition": 0}]             # kClaimUnknownTopic (strict)
    elif way == 7:
        m["owned"] = [{"topic": topics[0], "partition": 99}]            # kClaimOutOfRange (strict)
    else:
        m["instance_id"] = "same"                                        # kSharedInstanceId
        members.append(dict(m, member_id="twin-" + str(m["member_id"])))
    m["member_id"] = m["member_id"] if way == 0 else f"bad-{way}-{m['member_id']}"
    members.append(m)
    if way != 8 and rng.random() < 0.3:
        members.append(dict(m))                                          # kDuplicateMemberId as well


def _shared_batch(rng: random.Random, num_groups: int) -> tuple[pa.Table, TopicMeta]:
    """Random groups (spark_cases.random_group) over one shared topic table: a name used by several groups takes
    the first group's count, so later groups' claims may run past it."""
    rows, table = [], {}
    for i in range(num_groups):
        group = random_group(rng, f"g\U0001f600{i}" if i % 3 == 0 else f"grp-{i}", max_members=6, max_partitions=9)
        for name, spec in group["topics"].items():
            table.setdefault(name, spec)
        row = nested_row(group)
        del row["topic_table"]
        if rng.random() < 0.3:
            _refuse(rng, row["members"], list(group["topics"]))
        rows.append(row)
    topic_rows = [{"topic": name, "partitions": spec if isinstance(spec, int) else len(spec),
                   "replica_racks": None if isinstance(spec, int) else spec} for name, spec in table.items()]
    return (pa.Table.from_pylist(rows, schema=GROUPS_SCHEMA),
            TopicMeta.from_arrow(pa.Table.from_pylist(topic_rows, schema=TOPIC_ROWS)))


def _shrinking_bounds(num_groups: int, most: int, least: int, spread: int) -> list[int]:
    """plan_batch.hpp part_bounds' rule, stated plainly: each part ceil(left / (2 * spread)) groups within
    [least, most], the last one what is left."""
    bounds = [0]
    while bounds[-1] < num_groups:
        left = num_groups - bounds[-1]
        bounds.append(bounds[-1] + min(left, max(min(least, most), min(most, -(-left // (2 * spread))))))
    return bounds


def _batches(stream) -> list[pa.RecordBatch]:
    """The record batches of a native ArrowStreamExport, as they were cut (empty ones too)."""
    return list(pa.RecordBatchReader.from_stream(stream))


def _without_times(metrics: pa.Table) -> pa.Table:
    return metrics.drop_columns(["engine_us"]).append_column("timed", metrics.column("engine_us").is_valid())


@pytest.mark.parametrize("seed", range(6))
def test_parts_equal_the_whole_batch(seed: int) -> None:
    rng = random.Random(seed)
    table, meta = _shared_batch(rng, rng.randrange(1, 30))
    num_groups = table.num_rows
    for strict in (True, False):
        inputs = batch_inputs(table, meta, strict=strict)
        assert executor.can_cut(inputs)
        skip = np.array([rng.random() < 0.1 for _ in range(num_groups)], dtype=np.uint8)
        ids = string_arg(inputs.group_ids)
        for strategy in STRATEGIES:
            for chunk_partitions in (1 << 18, 5):
                refused, engine_errors, rows, metrics = _core.plan_batch(*inputs.args, ids, skip, strategy, 1, False,
                                                                         chunk_partitions, True)
                want_rows = pa.Table.from_batches([pa.record_batch(r) for r in rows], schema=executor.ASSIGNMENT_ARROW_SCHEMA)
                want_metrics = _without_times(pa.Table.from_batches([pa.record_batch(metrics)]))
                # one thread cuts the same parts (planned one after the other): what the threads scale
                # (part_groups, min_part_groups, spread): equal parts (min None), then parts shrinking to the end
                for sizes, threads in (((1, None, 1), 2), ((3, None, 1), 3), ((7, None, 1), 2),
                                       ((num_groups, None, 1), 2), ((3, None, 1), 1), ((8, 1, 1), 2), ((8, 2, 2), 3),
                                       ((5, 1, 2), 1)):
                    got = _core.plan_parts(*inputs.args, ids, skip, strategy, threads, False, chunk_partitions, *sizes)
                    got_refused, got_engine_errors, got_rows, got_metrics, bounds = got
                    most, least, spread = sizes
                    assert bounds.tolist() == _shrinking_bounds(num_groups, most, least or most, spread)
                    assert got_refused == refused and got_engine_errors == engine_errors
                    parts = _batches(got_metrics)
                    assert [p.num_rows for p in parts] == np.diff(bounds).tolist()
                    assert len(got_rows) >= len(parts)   # (a chunk per part at least, more at chunk_partitions 5)
                    assert pa.Table.from_batches(_batches(got_rows),
                                                 schema=executor.ASSIGNMENT_ARROW_SCHEMA).equals(want_rows)
                    assert _without_times(pa.Table.from_batches(parts)).equals(want_metrics)
        assert refused or seed not in (0, 1)   # (the first seeds refuse groups: the indices are checked)


@pytest.mark.parametrize("on_error", ["record", "raise"])
def test_fleet_side_words_errors_as_one_batch_does(on_error: str) -> None:
    """executor.plan_outputs_in_parts: the same rows, metrics rows (error column included, cut at the parts'
    bounds) and raised error as plan_outputs_of on the whole batch."""
    for seed in range(4):
        rng = random.Random(f"words-{seed}")
        table, meta = _shared_batch(rng, 25)
        options = executor.AssignOptions("range", strict=bool(seed % 2), on_error=on_error)
        inputs = batch_inputs(table, meta, strict=options.strict)
        try:
            want = executor.plan_outputs_of(inputs, options)
        except InvalidGroupError as e:
            with pytest.raises(InvalidGroupError) as got:
                executor.plan_outputs_in_parts(inputs, options, 2, 4)
            assert str(got.value) == str(e)
            continue
        rows, got_metrics = executor.plan_outputs_in_parts(inputs, options, 2, 4)
        assert [len(c) for c in got_metrics.column("group_id").chunks] == [4] * 6 + [1]   # a chunk per part
        assert rows.equals(pa.Table.from_batches(want[0]))
        assert _without_times(got_metrics).equals(_without_times(pa.Table.from_batches([want[1]])))
        assert on_error == "raise" or got_metrics.column("error").null_count < 25   # errors were worded


def test_batches_that_cannot_be_cut_are_one_part() -> None:
    """Per-group topic tables (rows labelled with the batch's group indices) and dictionary-coded topic names
    (each part would hash the whole dictionary) are planned as one part, with the same outputs as plan_batch."""
    rng = random.Random(5)
    per_group = nested_table([random_group(rng, f"g{i}") for i in range(12)])
    fleet = generate_fleet(12, seed=2, members=(2, 5), partitions=(3, 20))
    shared = batch_inputs(fleet.groups, TopicMeta.from_arrow(fleet.topics))
    coded = list(shared.args)
    coded[6] = names_arg(shared.sub_names.dictionary_encode())   # (batch_inputs decodes a dictionary column)
    for args, group_ids in ((batch_inputs(per_group).args, per_group.column("group_id")),
                            (tuple(coded), fleet.groups.column("group_id"))):
        ids = string_arg(group_ids.combine_chunks())
        refused, engine_errors, rows, metrics = _core.plan_batch(*args, ids, None, "range", 1, False, 1 << 18, True)
        got = _core.plan_parts(*args, ids, None, "range", 2, False, 1 << 18, 1)
        assert got[4].tolist() == [0, 12] and got[:2] == (refused, engine_errors)
        assert pa.Table.from_batches(_batches(got[2])).equals(pa.Table.from_batches([pa.record_batch(r) for r in rows]))
        got_metrics = _batches(got[3])
        assert len(got_metrics) == 1 and _without_times(pa.Table.from_batches(got_metrics)).equals(
            _without_times(pa.Table.from_batches([pa.record_batch(metrics)])))
    assert not executor.can_cut(batch_inputs(per_group))
    # per-group tables in the fleet loop on two threads: its queue of batches, as one thread assigns them
    one = assign_fleet_local(per_group, None, "range", threads=1)
    two = assign_fleet_local(per_group, None, "range", threads=2, batch_groups=5)
    assert one[0].equals(two[0])


def test_plan_parts_checks_the_layout_before_cutting() -> None:
    fleet = generate_fleet(6, seed=1, members=(2, 4), partitions=(3, 9))
    inputs = batch_inputs(fleet.groups, TopicMeta.from_arrow(fleet.topics))
    ids = string_arg(inputs.group_ids)
    with pytest.raises(InvalidGroupError, match="part_groups must be >= 1, got 0"):
        _core.plan_parts(*inputs.args, ids, None, "range", 2, False, 1 << 18, 0)
    with pytest.raises(InvalidGroupError, match="min_part_groups must be >= 1, got 0"):
        _core.plan_parts(*inputs.args, ids, None, "range", 2, False, 1 << 18, 2, 0)
    with pytest.raises(InvalidGroupError, match="spread must be >= 1, got 0"):
        _core.plan_parts(*inputs.args, ids, None, "range", 2, False, 1 << 18, 2, 1, 0)
    with pytest.raises(InvalidGroupError, match="group_ids: expected 7 offsets, got 6"):
        _core.plan_parts(*inputs.args, string_arg(inputs.group_ids.slice(0, 5)), None, "range", 2, False, 1 << 18, 2)
    with pytest.raises(InvalidGroupError, match="skip: expected 6 entries, got 2"):
        _core.plan_parts(*inputs.args, ids, np.zeros(2, np.uint8), "range", 2, False, 1 << 18, 2)
    bad = list(inputs.args)
    bad[1] = np.array([0, 2, 1, 9, 9, 9, 9])   # member_offsets decrease
    with pytest.raises(InvalidGroupError, match="member_offsets: offsets decrease at 1"):
        _core.plan_parts(*bad, ids, None, "range", 2, False, 1 << 18, 2)


def test_outputs_come_as_streams_read_once() -> None:
    """plan_parts hands each output over as one Arrow stream (read in one call): len() its batch count, readable
    once; a stream dropped unread gives its memory back (to the kept output memory); an empty batch reads as
    empty tables of the outputs' schemas (a stream of no batches has no schema of its own)."""
    fleet = generate_fleet(40, seed=3, members=(2, 4), partitions=(3, 9))
    inputs = batch_inputs(fleet.groups, TopicMeta.from_arrow(fleet.topics))
    ids = string_arg(inputs.group_ids)
    _, _, rows, metrics, bounds = _core.plan_parts(*inputs.args, ids, None, "range", 2, False, 1 << 18, 8, 2, 1)
    assert len(metrics) == len(bounds) - 1 and len(rows) == len(bounds) - 1
    table = pa.RecordBatchReader.from_stream(rows).read_all()
    assert table.schema.equals(executor.ASSIGNMENT_ARROW_SCHEMA)
    with pytest.raises(InvalidGroupError, match="imported already"):
        pa.RecordBatchReader.from_stream(rows)
    # unread: released with the object; the output blocks (64 KiB and more) go back to the kept memory
    limit = _core.output_memory()[1]
    try:
        _core.output_memory(0)
        _core.output_memory(1 << 30)
        big = generate_fleet(400, seed=4, members=(2, 12), partitions=(30, 150))
        big_inputs = batch_inputs(big.groups, TopicMeta.from_arrow(big.topics))
        out = _core.plan_parts(*big_inputs.args, string_arg(big_inputs.group_ids), None, "range", 2, False, 1 << 18, 400)
        kept = _core.output_memory()[0]   # (the part's intermediate topic names went back already)
        del out
        assert _core.output_memory()[0] >= kept + (64 << 10)   # (~36,000 rows: their partition column at least)
    finally:
        _core.output_memory(limit)
    none = batch_inputs(fleet.groups.slice(0, 0), TopicMeta.from_arrow(fleet.topics))
    got_rows, got_metrics = executor.plan_outputs_in_parts(none, executor.AssignOptions("range"), 2, 8, 2, 2)
    assert got_rows.num_rows == 0 and got_rows.schema.equals(executor.ASSIGNMENT_ARROW_SCHEMA)
    assert got_metrics.num_rows == 0 and got_metrics.schema.equals(executor.METRICS_ARROW_SCHEMA)
