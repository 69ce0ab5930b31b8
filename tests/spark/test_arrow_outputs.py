"""The fleet loop's outputs written natively as Arrow record batches (csrc/kafkagroup/arrow_export.hpp,
metrics_rows.hpp; ``_core.plan_batch(..., arrow=True)``, ``_core.metrics_rows``) and imported by pyarrow through
the C data interface: the same rows as the array outputs, and the metrics rows by their rules stated here
in Python, on random unicode batches (empty groups, refused groups, unknown topics, dropped claims, null
group ids) for every strategy. No Spark needed.
"""
from __future__ import annotations

import random

import numpy as np
import pyarrow as pa
import pytest

from kafkagroup import _core
from kafkagroup.batch import METRIC_NAMES, SKIP_GROUP
from kafkagroup.errors import InvalidGroupError
from kafkagroup.spark import executor
from kafkagroup.spark.arrow_builder import TopicMeta, batch_inputs, string_arg
from kafkagroup.spark.fleet import assign_fleet_local, generate_fleet
from test_output_rows import _random_batch

STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky")


def _expected_metrics(inputs, planned, strategy: str) -> list[dict]:
    """METRICS_ARROW_SCHEMA rows by the rules, from the array outputs (engine_us compared by nullness only)."""
    member_off, topic_off, part_off = planned["member_offsets"], planned["topic_offsets"], planned["part_offsets"]
    _, _, _, _, metrics, _, engine_errors = planned["result"]
    failed = (planned["group_inputs"] & SKIP_GROUP) > 0
    for g, _, _ in engine_errors:
        failed[g] = True
    unknown_off, unknown = planned["unknown_offsets"], planned["unknown_entries"]
    names = inputs.sub_names.to_pylist()
    rows = []
    for g, group_id in enumerate(inputs.group_ids.to_pylist()):
        row = {"group_id": group_id, "strategy": strategy, "members": int(member_off[g + 1] - member_off[g]),
               "topics": int(topic_off[g + 1] - topic_off[g]),
               "partitions": int(part_off[topic_off[g + 1]] - part_off[topic_off[g]])}
        for k, name in enumerate(METRIC_NAMES):
            value = int(metrics[g, k])
            row[name] = None if failed[g] or (name == "moved_lower_bound" and value < 0) else value
        row["engine_us"] = None if failed[g] else "a time"
        row["unknown_topics"] = [names[e] for e in unknown[unknown_off[g]:unknown_off[g + 1]]]
        row["dropped_claims"] = int(planned["dropped_claims"][g])
        row["error"] = None
        rows.append(row)
    return rows


def _got_metrics(batch: pa.RecordBatch) -> list[dict]:
    rows = batch.to_pylist()
    for row in rows:
        if row["engine_us"] is not None:
            assert row["engine_us"] >= 0
            row["engine_us"] = "a time"
    return rows


@pytest.mark.parametrize("seed", range(6))
def test_arrow_outputs_equal_the_array_outputs(seed: int) -> None:
    rng = random.Random(seed)
    table = _random_batch(rng, rng.randrange(1, 40))
    if seed % 3 == 2:   # a null group id: refused by the caller, its metrics row still written
        rows = table.to_pylist()
        rows[0]["group_id"] = None
        table = pa.Table.from_pylist(rows, schema=table.schema)
    inputs = batch_inputs(table, strict=bool(seed % 2))
    skip = None
    if inputs.errors or seed % 2:
        skip = np.array([rng.random() < 0.2 for _ in range(table.num_rows)], dtype=np.uint8)
        skip[list(inputs.errors)] = 1
    for strategy in STRATEGIES:
        for chunk_partitions in (1, 13, 1 << 18):
            args = (*inputs.args, string_arg(inputs.group_ids), skip, strategy, 1, False, chunk_partitions)
            planned = _core.plan_batch(*args)
            refused, engine_errors, row_batches, metrics = _core.plan_batch(*args, True)
            assert refused == planned["errors"]
            assert engine_errors == planned["result"][-1]
            assert len(row_batches) == len(planned["rows"])
            for export, (n, *columns) in zip(row_batches, planned["rows"]):
                got = pa.record_batch(export)
                got.validate(full=True)
                assert got.schema.equals(executor.ASSIGNMENT_ARROW_SCHEMA)
                want = pa.RecordBatch.from_arrays(executor._row_columns(*columns), schema=executor.ASSIGNMENT_ARROW_SCHEMA)
                assert got.num_rows == n and got.equals(want)
            got = pa.record_batch(metrics)
            got.validate(full=True)
            assert got.schema.equals(executor.METRICS_ARROW_SCHEMA)
            assert _got_metrics(got) == _expected_metrics(inputs, planned, strategy)


def test_arrow_outputs_stop_where_the_arrays_stop() -> None:
    """stop_on_error: a refused group stops the call before assigning; nothing is exported."""
    fleet = generate_fleet(20, seed=1, members=(2, 4), partitions=(3, 9))
    inputs = batch_inputs(fleet.groups, TopicMeta.from_arrow(fleet.topics))
    skip = np.zeros(20, dtype=np.uint8)
    skip[3] = 1
    refused, engine_errors, rows, metrics = _core.plan_batch(*inputs.args, string_arg(inputs.group_ids), skip, "range",
                                                             1, True, 1 << 18, True)
    assert (refused, engine_errors, rows, metrics) == ([], [], [], None)


def test_an_export_is_imported_once_in_its_own_schema() -> None:
    fleet = generate_fleet(5, seed=2, members=(2, 4), partitions=(3, 9))
    inputs = batch_inputs(fleet.groups, TopicMeta.from_arrow(fleet.topics))
    args = (*inputs.args, string_arg(inputs.group_ids), None, "range", 1, False, 1 << 18, True)
    _, _, rows, metrics = _core.plan_batch(*args)
    with pytest.raises(InvalidGroupError, match="its own schema only"):
        metrics.__arrow_c_array__(executor.METRICS_ARROW_SCHEMA.__arrow_c_schema__())
    batch = pa.record_batch(metrics)
    with pytest.raises(InvalidGroupError, match="imported already"):
        pa.record_batch(metrics)
    # the imported columns outlive the export object and every other output of the call
    del metrics, rows, args
    assert batch.column("group_id").to_pylist() == fleet.groups.column("group_id").to_pylist()
    # never imported: dropped with its memory (nothing to observe but that it does not crash)
    _core.plan_batch(*inputs.args, string_arg(inputs.group_ids), None, "range", 1, False, 1 << 18, True)


def test_metrics_rows_checks_its_arrays_and_names_them() -> None:
    ids = string_arg(pa.array(["a", "b"]))
    good = dict(group_ids=ids, strategy="range", member_offsets=np.array([0, 1, 2]), topic_offsets=np.array([0, 1, 1]),
                part_offsets=np.array([0, 3]), metrics=np.zeros(8 * 2, np.int64), engine_us=np.zeros(2), failed=None,
                unknown_offsets=np.array([0, 0, 1]), unknown_names=string_arg(pa.array(["t"])),
                dropped_claims=np.zeros(2, np.int64))
    assert pa.record_batch(_core.metrics_rows(**good)).column("unknown_topics").to_pylist() == [[], ["t"]]
    for name, bad, message in [("metrics", np.zeros(8, np.int64), "metrics: expected 16 entries, got 8"),
                               ("topic_offsets", np.array([0, 1, 2]), "topic_offsets of group 1 outside part_offsets"),
                               ("unknown_offsets", np.array([0, 0, 2]), "unknown_offsets run past"),
                               ("failed", np.zeros(3, np.uint8), "failed: expected 2 entries, got 3")]:
        with pytest.raises(InvalidGroupError, match=message):
            _core.metrics_rows(**{**good, name: bad})


@pytest.mark.parametrize("threads", [1, 2])
def test_fleet_loop_records_failed_groups_in_the_native_metrics(threads: int) -> None:
    """on_error='record': the failed groups' error messages (worded in Python) land in the natively written
    metrics rows, whose engine metrics are null; the other groups are untouched."""
    fleet = generate_fleet(30, seed=5, members=(2, 5), partitions=(3, 20))
    rows = fleet.groups.to_pylist()
    rows[4]["members"].append(dict(rows[4]["members"][0]))   # the same member id twice
    rows[17]["group_id"] = None
    groups = pa.Table.from_pylist(rows, schema=fleet.groups.schema)
    assigned, metrics = assign_fleet_local(groups, fleet.topics, "range", on_error="record", threads=threads,
                                           batch_groups=7)
    errors = metrics.column("error").to_pylist()
    assert [g for g, e in enumerate(errors) if e is not None] == [4, 17]
    assert "group-00004" in errors[4] and "null group_id" in errors[17]
    assert metrics.column("assigned").to_pylist()[4] is None and metrics.column("engine_us").to_pylist()[17] is None
    assert metrics.column("members").to_pylist()[4] == len(rows[4]["members"])
    assert set(assigned.column("group_id").to_pylist()) == {r["group_id"] for g, r in enumerate(rows) if g not in (4, 17)}
    assert metrics.schema.equals(executor.METRICS_ARROW_SCHEMA)
