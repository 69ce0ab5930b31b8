"""What runs inside Spark's Python workers: Arrow batches of groups in, Arrow batches out.

Why ``mapInArrow`` (measured with pyspark 4.3.0 on local[2], benches/bench_spark.py; the issue's own
figures for 10,000 groups agree): ``groupBy().applyInPandas`` on member rows pays a fixed cost per
group (one pandas DataFrame each: 9-23 s for 10,000 groups in the issue); ``mapInPandas`` over
nested group rows builds Python objects per member and partition (2.3-2.7x slower than mapInArrow on the
same 1,000 groups here); ``mapInArrow`` hands us the Arrow list offsets and string buffers directly,
so interning is a handful of numpy / pyarrow.compute calls per batch
(:mod:`kafkagroup.spark.arrow_builder`, the names hashed natively), and the assignment rows are written
straight into Arrow's string buffers by one native pass (:func:`assignment_columns`). Many groups
travel in one batch and are assigned by one native call (:mod:`kafkagroup.batch`, GIL released);
no Python loop runs per group or per partition. Member rows arrive sorted by group_id and are regrouped here
(:func:`group_batches`), which is cheaper than nesting them in the JVM.

The native engine is ``kafkagroup._core``, imported once per Python worker as an installed module
(Spark reuses workers, and these functions are pickled by reference to this module, so neither the
engine nor the decoded topic metadata is rebuilt per task, nor per call when the topics' content
is the same: :func:`resolve_meta`; a cache defined in a driver script's ``__main__`` would be
pickled by value and rebuilt for every task).
"""
from __future__ import annotations

import zlib
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafkagroup.batch import METRIC_NAMES
from kafkagroup.batch import group_error as batch_group_error
from kafkagroup.engine import assign_arrays
from kafkagroup.errors import InvalidGroupError, KafkaGroupError
from kafkagroup.spark.arrow_builder import (BatchInputs, BatchProblems, TopicMeta, batch_inputs, build_batch, build_errors,
                                            problems_of, string_arg)
from kafkagroup.spark.shared_topics import WORKER_TABLES, SharedTopics

# ---------------------------------------------------------------------------------------------
# output schemas (kafkagroup.spark.schema holds the matching Spark types)

ASSIGNMENT_ARROW_SCHEMA = pa.schema([("group_id", pa.string()), ("member_id", pa.string()),
                                     ("topic", pa.string()), ("partition", pa.int32())])
WITHHELD_ARROW_SCHEMA = pa.schema([("group_id", pa.string()), ("topic", pa.string()), ("partition", pa.int32())])
METRIC_FIELDS: list[tuple[str, pa.DataType]] = [
    ("strategy", pa.string()), ("members", pa.int32()), ("topics", pa.int32()), ("partitions", pa.int64()),
    ("assigned", pa.int64()), ("unassigned", pa.int64()), ("withheld", pa.int64()), ("moved", pa.int64()),
    ("moved_lower_bound", pa.int64()), ("balance_gap", pa.int64()), ("max_load", pa.int64()),
    ("min_load", pa.int64()), ("engine_us", pa.float64()), ("unknown_topics", pa.list_(pa.string())),
    ("dropped_claims", pa.int64()), ("error", pa.string()),
]
METRICS_STRUCT = pa.struct(METRIC_FIELDS)
METRICS_ARROW_SCHEMA = pa.schema([("group_id", pa.string())] + METRIC_FIELDS)
OUTPUT_ASSIGNMENTS, OUTPUT_METRICS, OUTPUT_WITHHELD = "assignments", "metrics", "withheld"
# assign_groups' one mapInArrow emits every output in one row set (PLAN_ARROW_SCHEMA). Its shape is chosen for
# what the JVM pays per row (measured on 100,000 small groups, 3.7M assignment rows, local[2]): the output
# is a one-byte code (OUTPUTS[code] names it), not a string repeated on every row, and a metrics row
# carries its metrics as a one-element list, null on every other row. A struct column would need all
# its 16 child columns at full length on every assignment row (Arrow has no sparse struct): with it the
# JVM spent ~3.5-5 s of CPU ingesting the rows, with the list and the code ~2.4-2.9 s (4 narrow
# assignment columns alone: ~2 s).
OUTPUTS = (OUTPUT_ASSIGNMENTS, OUTPUT_METRICS, OUTPUT_WITHHELD)
PLAN_ARROW_SCHEMA = pa.schema([("output", pa.int8()), ("group_id", pa.string()), ("member_id", pa.string()),
                               ("topic", pa.string()), ("partition", pa.int32()),
                               ("metrics", pa.list_(METRICS_STRUCT))])
_ENGINE_METRICS = ("assigned", "unassigned", "withheld", "moved", "moved_lower_bound", "balance_gap",
                   "max_load", "min_load")


GROUP_ROWS, SORTED_MEMBER_ROWS = "group rows", "sorted member rows"


@dataclass(frozen=True)
class AssignOptions:
    strategy: str
    strict: bool = True          # build_group's strict: bad owned claims are errors (True) or dropped
    on_error: str = "raise"      # "raise": fail the job naming the group; "record": metrics.error, no rows
    input_form: str = GROUP_ROWS  # or SORTED_MEMBER_ROWS (see group_batches)


OUTPUT_BATCH_ROWS = 1 << 18          # output rows per Arrow batch handed to the JVM, at most (see output_chunks)
_MEMBER_COLUMNS = ("member_id", "topics", "owned", "generation", "rack", "instance_id")


def nest_member_rows(batch: pa.RecordBatch) -> pa.RecordBatch:
    """Member rows sorted by group_id -> one row per group (group_id, members), without copying members."""
    group_ids = batch.column("group_id")
    n = batch.num_rows
    if n > 1:
        differs = pc.fill_null(pc.not_equal(group_ids.slice(1), group_ids.slice(0, n - 1)), True)
        starts = np.flatnonzero(np.asarray(differs, dtype=bool)) + 1
    else:
        starts = np.zeros(0, dtype=np.int64)
    offsets = np.concatenate([[0], starts, [n]]).astype(np.int32)
    members = pa.StructArray.from_arrays([batch.column(c) for c in _MEMBER_COLUMNS], names=list(_MEMBER_COLUMNS))
    return pa.RecordBatch.from_arrays([group_ids.take(pa.array(offsets[:-1])),
                                       pa.ListArray.from_arrays(pa.array(offsets), members)],
                                      names=["group_id", "members"])


def _concat(batches: list[pa.RecordBatch]) -> pa.RecordBatch:
    if len(batches) == 1:
        return batches[0]
    if hasattr(pa, "concat_batches"):   # pyarrow >= 19
        return pa.concat_batches(batches)
    return pa.Table.from_batches(batches).combine_chunks().to_batches()[0]


# Member rows are gathered to about this many before they are nested and planned. Spark hands them
# over in batches of spark.sql.execution.arrow.maxRecordsPerBatch rows (10,000 by default, ~80 groups
# of the bench fleet); each plan has a fixed cost of a few dozen numpy / pyarrow calls, and the output
# is cut into chunks anyway (output_chunks). Measured on the 10,000-group bench fleet in one process:
# 10k rows per plan 4.2-4.5 s, 50k 3.1-3.2 s, 200k 4.1 s (larger plans lose the cache).
MEMBER_ROWS_PER_PLAN = 50_000


def group_batches(batches: Iterator[pa.RecordBatch], input_form: str, rows_per_plan: int = MEMBER_ROWS_PER_PLAN
                  ) -> Iterator[pa.RecordBatch]:
    """Nested group batches from either input form.

    SORTED_MEMBER_ROWS: member rows hash-partitioned and sorted by group_id (a shuffle and a sort in
    the JVM, measurably cheaper than nesting them with collect_list), gathered to about
    MEMBER_ROWS_PER_PLAN rows. Spark cuts Arrow batches by row count, so a group's rows may straddle
    two batches: the trailing group of what was gathered is carried over to the next gathering, and a
    group is never split.
    """
    if input_form == GROUP_ROWS:
        yield from (b for b in batches if b.num_rows)
        return
    pending: list[pa.RecordBatch] = []
    pending_rows = 0
    threshold = rows_per_plan
    for batch in batches:
        if batch.num_rows == 0:
            continue
        pending.append(batch)
        pending_rows += batch.num_rows
        if pending_rows < threshold:
            continue
        gathered = _concat(pending)
        group_ids = gathered.column("group_id")
        last = group_ids[gathered.num_rows - 1]
        same = pc.fill_null(pc.equal(group_ids, last), False) if last.is_valid else group_ids.is_null()
        tail_start = int(np.argmax(np.asarray(same, dtype=bool)))     # sorted: the last group is a suffix
        pending = [gathered.slice(tail_start)]
        pending_rows = pending[0].num_rows
        # all one group so far: look again only once it has doubled (copies stay linear in its size)
        threshold = rows_per_plan if tail_start else max(rows_per_plan, 2 * pending_rows)
        if tail_start:
            yield nest_member_rows(gathered.slice(0, tail_start))
    if pending_rows:
        yield nest_member_rows(_concat(pending))


@dataclass
class BatchPlan:
    """Result of one batch: owner per batch partition plus per-group metrics."""

    problems: BatchProblems
    owner: np.ndarray            # int32[P_batch] group-local member id, -1 unassigned / withheld / failed group
    withheld: np.ndarray         # int64[] batch partition ids withheld
    metrics: dict[str, np.ndarray]
    engine_us: np.ndarray        # float64[G]
    errors: dict[int, str]
    # the assignment rows as plan_batch wrote them, one record batch per output chunk (None: gathered on demand)
    rows: list[pa.RecordBatch] | None = None


def group_error(problems: BatchProblems | BatchInputs, g: int, error: Exception | str) -> str:
    return f"group {problems.group_ids[g].as_py()!r}: {error}"


def _skip(inputs: BatchInputs, num_groups: int) -> np.ndarray | None:
    """uint8[G] marking the groups refused before the native builder (plan_batch's `skip`), or None."""
    if not inputs.errors:
        return None
    skip = np.zeros(num_groups, dtype=np.uint8)
    skip[list(inputs.errors)] = 1
    return skip


def run_batch(batch: pa.RecordBatch, meta: TopicMeta | None, options: AssignOptions, threads: int = 1) -> BatchPlan:
    """Intern the batch, assign all its groups (skipping groups with bad data) and write their assignment rows:
    one native call (``_core.plan_batch``: the GIL released once for the three steps), then the results wrapped."""
    from kafkagroup import _core

    inputs = batch_inputs(batch, meta, strict=options.strict)
    raise_errors = options.on_error == "raise"
    planned = _core.plan_batch(*inputs.args, string_arg(inputs.group_ids), _skip(inputs, batch.num_rows),
                               options.strategy, threads, raise_errors, OUTPUT_BATCH_ROWS)
    problems = problems_of(inputs, planned, _string_column(*planned["topic_names"]))
    if problems.errors and raise_errors:   # (before the result: a batch stopped on a refusal has none)
        raise InvalidGroupError(problems.errors[min(problems.errors)])
    part_offsets, owner, withheld_offsets, withheld, metrics, engine_us, raw = planned["result"]
    errors = planned_errors(dict(problems.errors), problems, raw, raise_errors)
    withheld = ((np.repeat(part_offsets[:-1], np.diff(withheld_offsets)) + withheld).astype(np.int64) if len(withheld)
                else np.zeros(0, np.int64))
    names = METRIC_NAMES
    return BatchPlan(problems=problems, owner=owner, withheld=withheld,
                     metrics={name: metrics[:, names.index(name)] for name in _ENGINE_METRICS},
                     engine_us=engine_us, errors=errors,
                     rows=[pa.RecordBatch.from_arrays(_row_columns(*rows[1:]), schema=ASSIGNMENT_ARROW_SCHEMA)
                           for rows in planned["rows"]])


def output_chunks(problems: BatchProblems, max_partitions: int | None = None) -> Iterator[tuple[int, int]]:
    """Group ranges ``[g0, g1)`` covering the batch, each holding at most ``max_partitions`` batch
    partitions (a bigger group forms a chunk alone).

    Why: one Arrow batch of group rows can hold thousands of groups and tens of millions of
    partitions. Building the output strings for all of them at once touches gigabytes of fresh
    memory (page faults, cache misses): measured here, 5,000 groups (19M rows) in one go cost 3-10x
    more per row than the same groups in chunks of ~250k rows, whose buffers the allocator reuses.
    Chunks also let Spark convert one chunk while Python builds the next.
    """
    if max_partitions is None:
        max_partitions = OUTPUT_BATCH_ROWS
    group_end = problems.part_off[problems.topic_off[1:]]        # batch partition where each group ends
    g0, num_groups = 0, problems.num_groups
    while g0 < num_groups:
        start = problems.part_off[problems.topic_off[g0]]
        g1 = max(int(np.searchsorted(group_end, start + max_partitions, side="right")), g0 + 1)
        yield g0, g1
        g0 = g1


def _partition_rows(problems: BatchProblems, parts: np.ndarray, g0: int = 0, g1: int | None = None
                    ) -> tuple[pa.Array, pa.Array, pa.Array, np.ndarray]:
    """(group_id, topic, partition) columns and the group of batch partition ids `parts` (ascending),
    all of which belong to groups ``g0 .. g1-1``."""
    if g1 is None:
        g1 = problems.num_groups
    t0, t1 = int(problems.topic_off[g0]), int(problems.topic_off[g1])
    p0, p1 = int(problems.part_off[t0]), int(problems.part_off[t1])
    if len(parts) * 8 > p1 - p0 and len(parts) > 4096:
        # most of the range's partitions: label all of them by repeat (O(P), no binary search)
        topic_of_part = np.repeat(np.arange(t0, t1, dtype=np.int64), np.diff(problems.part_off[t0:t1 + 1]))
        topic = topic_of_part[parts - p0]
    else:
        topic = np.searchsorted(problems.part_off[t0:t1 + 1], parts, side="right") - 1 + t0
    group_of_topic = np.repeat(np.arange(g0, g1, dtype=np.int64), np.diff(problems.topic_off[g0:g1 + 1]))
    group = group_of_topic[topic - t0]
    partition = (parts - problems.part_off[topic]).astype(np.int32)
    return (_gather(problems.group_ids, group), _gather(problems.topic_names, topic),
            pa.array(partition, pa.int32()), group)


# Output columns gathered by pyarrow (the withheld rows; the assignment rows are allocated natively, by
# malloc, i.e. the same system allocator) come from the system allocator, not pyarrow's default (mimalloc in pyarrow 26):
# building and keeping millions of output rows through mimalloc measured ~2x the CPU of the same work
# through the system pool (100,000 small groups, one thread: 31 vs 16 us per group, alternated runs); most
# of the difference was the kernel zeroing fresh huge pages. Output buffers live long (until the caller
# drops the tables), so they gain nothing from mimalloc's thread-local reuse.
OUTPUT_POOL = pa.system_memory_pool()


def _gather(strings: pa.Array, rows: np.ndarray) -> pa.Array:
    """strings[rows] as a new string array, from OUTPUT_POOL."""
    return pc.take(strings, pa.array(rows), memory_pool=OUTPUT_POOL)


def _string_column(offsets: np.ndarray, data: np.ndarray) -> pa.Array:
    """A string array over native output buffers (no copy: Arrow keeps the numpy arrays alive)."""
    return pa.Array.from_buffers(pa.string(), len(offsets) - 1, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def assignment_columns(plan: BatchPlan, g0: int = 0, g1: int | None = None) -> list[pa.Array]:
    """group_id, member_id, topic, partition of every assigned partition of groups ``g0 .. g1-1``
    (default: the whole batch), in (group, topic, partition) order: one native pass over owner[] that
    writes the Arrow buffers (csrc/kafkagroup/output_rows.hpp)."""
    from kafkagroup import _core

    problems = plan.problems
    if g1 is None:
        g1 = problems.num_groups
    _, group_ids, member_ids, topics, partitions = _core.assignment_rows(
        string_arg(problems.group_ids), string_arg(problems.member_ids), string_arg(problems.topic_names),
        problems.member_off, problems.member_perm, problems.topic_off, problems.part_off, plan.owner, g0, g1)
    return _row_columns(group_ids, member_ids, topics, partitions)


def _row_columns(group_ids: tuple[np.ndarray, np.ndarray], member_ids: tuple[np.ndarray, np.ndarray],
                 topics: tuple[np.ndarray, np.ndarray], partitions: np.ndarray) -> list[pa.Array]:
    """Arrow columns over the native row buffers (csrc/kafkagroup/output_rows.hpp), no copies."""
    return [_string_column(*group_ids), _string_column(*member_ids), _string_column(*topics),
            pa.Array.from_buffers(pa.int32(), len(partitions), [None, pa.py_buffer(partitions)])]


def assignment_batches_of(plan: BatchPlan) -> Iterator[pa.RecordBatch]:
    """The batch's assignment rows as record batches of whole groups (see :func:`output_chunks`)."""
    if plan.rows is not None:
        yield from plan.rows
        return
    for g0, g1 in output_chunks(plan.problems):
        yield pa.RecordBatch.from_arrays(assignment_columns(plan, g0, g1), schema=ASSIGNMENT_ARROW_SCHEMA)


def withheld_columns(plan: BatchPlan) -> list[pa.Array]:
    group_ids, topics, partitions, _ = _partition_rows(plan.problems, plan.withheld)
    return [group_ids, topics, partitions]


def _errors_column(errors: dict[int, str], num_groups: int) -> pa.Array:
    """One message or null per group, without a Python loop over the groups."""
    if not errors:
        return pa.nulls(num_groups, pa.string())
    column = np.full(num_groups, None, dtype=object)
    column[np.fromiter(errors, dtype=np.int64, count=len(errors))] = list(errors.values())
    return pa.array(column, pa.string())


_ERROR_COLUMN = METRICS_ARROW_SCHEMA.get_field_index("error")


def _metrics_batch(native: Any, errors: dict[int, str]) -> pa.RecordBatch:
    """The metrics rows the native side wrote (csrc/kafkagroup/metrics_rows.hpp: every rule of a metrics row
    but the error's wording) with the error messages of the failed groups."""
    metrics = pa.record_batch(native)
    if errors:
        columns = metrics.columns
        columns[_ERROR_COLUMN] = _errors_column(errors, metrics.num_rows)
        metrics = pa.RecordBatch.from_arrays(columns, schema=METRICS_ARROW_SCHEMA)
    return metrics


def metrics_columns(plan: BatchPlan, strategy: str) -> list[pa.Array]:
    """One value per group for each of METRIC_FIELDS (strategy first), written natively (_core.metrics_rows)."""
    from kafkagroup import _core

    problems = plan.problems
    failed = None
    if plan.errors:
        failed = np.zeros(problems.num_groups, dtype=np.uint8)
        failed[list(plan.errors)] = 1
    metrics = np.concatenate([np.asarray(plan.metrics[name], dtype=np.int64) for name in METRIC_NAMES])
    native = _core.metrics_rows(string_arg(problems.group_ids), strategy, problems.member_off, problems.topic_off,
                                problems.part_off, metrics, plan.engine_us, failed, problems.unknown_off,
                                string_arg(problems.unknown_topics), problems.dropped_claims)
    return _metrics_batch(native, plan.errors).columns[1:]


def plan_outputs(batch: pa.RecordBatch, meta: TopicMeta | None, options: AssignOptions, threads: int = 1
                 ) -> tuple[list[pa.RecordBatch], pa.RecordBatch]:
    """(assignment rows in record batches of whole groups, metrics rows) of one batch (the local loop's step);
    `threads` run its groups.

    One native call interns, assigns and writes both outputs as Arrow record batches (``_core.plan_batch``
    with arrow=True, the GIL released throughout); Python imports each as it is (one call per record batch)
    and words error messages, so the Python work per batch does not grow with its groups (the fleet loop's
    GIL-held share, issue 26). The two halves: :func:`batch_inputs` then :func:`plan_outputs_of`."""
    return plan_outputs_of(batch_inputs(batch, meta, strict=options.strict), options, threads)


def planned_errors(errors: dict[int, str], where: BatchProblems | BatchInputs, engine_errors: list,
                   raise_errors: bool) -> dict[int, str]:
    """A planned batch's errors by group index: the builder's refusals (`errors`, worded already), then what the
    engine validated that the builder let through (`engine_errors`: ``(group, kind, message)``, worded with
    `where`'s names); with `raise_errors`, the first is raised instead."""
    if errors and raise_errors:
        raise InvalidGroupError(errors[min(errors)])
    for g, kind, message in engine_errors:
        if raise_errors:
            raise batch_group_error(kind, group_error(where, g, message))
        errors[g] = group_error(where, g, message)
    return errors


def plan_outputs_of(inputs: BatchInputs, options: AssignOptions, threads: int = 1
                    ) -> tuple[list[pa.RecordBatch], pa.RecordBatch]:
    """:func:`plan_outputs` of a batch whose inputs are read already (``batch_inputs(batch, meta,
    strict=options.strict)``)."""
    from kafkagroup import _core

    raise_errors = options.on_error == "raise"
    refused, engine_errors, rows, metrics = _core.plan_batch(
        *inputs.args, string_arg(inputs.group_ids), _skip(inputs, len(inputs.group_ids)), options.strategy, threads,
        raise_errors, OUTPUT_BATCH_ROWS, True)
    errors = planned_errors(build_errors(inputs, refused), inputs, engine_errors, raise_errors)
    return [pa.record_batch(chunk) for chunk in rows], _metrics_batch(metrics, errors)


def can_cut(inputs: BatchInputs) -> bool:
    """Whether :func:`plan_outputs_in_parts` cuts this batch into parts (``_core.plan_parts``' rule): its topic
    metadata is one shared table (per-group tables label their rows with the batch's group indices) and its topic
    names are plain strings (a dictionary column would be hashed whole by every part). Otherwise plan_parts
    plans it as one part."""
    catalog, sub_names, owned_names = inputs.args[0], inputs.args[6], inputs.args[8]
    return not catalog.per_group and sub_names[3] is None and (owned_names is None or owned_names[3] is None)


def plan_outputs_in_parts(inputs: BatchInputs, options: AssignOptions, threads: int, part_groups: int,
                          min_part_groups: int | None = None, spread: int = 1) -> tuple[pa.Table, pa.Table]:
    """(assignment rows in chunks of whole groups, metrics rows in a chunk per part) of a batch whose inputs are
    read (``batch_inputs(batch, meta, strict=options.strict)``), cut into parts of whole groups planned on
    `threads` native threads in one call that releases the GIL once (``_core.plan_parts``; see :func:`can_cut`):
    each part 1/(2 * `spread`) of the groups left, within `min_part_groups` (default `part_groups`: equal parts)
    and `part_groups` (csrc/kafkagroup/plan_batch.hpp part_bounds), whatever `threads` is.
    The rows are :func:`plan_outputs_of`'s, the metrics rows too, cut at the parts' bounds; errors likewise.
    Each output comes back as one Arrow stream, imported in one call (its batches are read in C++ with the GIL
    released): a record batch import per part from Python held the GIL on the calling thread alone while the
    other threads idled, ~25-40 us each (issue 26)."""
    from kafkagroup import _core

    raise_errors = options.on_error == "raise"
    refused, engine_errors, rows, metrics, bounds = _core.plan_parts(
        *inputs.args, string_arg(inputs.group_ids), _skip(inputs, len(inputs.group_ids)), options.strategy, threads,
        raise_errors, OUTPUT_BATCH_ROWS, part_groups, min_part_groups, spread)
    errors = planned_errors(build_errors(inputs, refused), inputs, engine_errors, raise_errors)
    # (every part's rows were written: a part stopped on an error raised above)
    table = _stream_table(rows, ASSIGNMENT_ARROW_SCHEMA)
    metrics_table = _stream_table(metrics, METRICS_ARROW_SCHEMA)
    if errors:
        metrics_table = metrics_table.set_column(_ERROR_COLUMN, METRICS_ARROW_SCHEMA.field(_ERROR_COLUMN),
                                                 _errors_column(errors, metrics_table.num_rows))
    return table, metrics_table


def _stream_table(stream: Any, schema: pa.Schema) -> pa.Table:
    """The batches of a native ArrowStreamExport as a table (a stream of none has no schema of its own)."""
    return pa.RecordBatchReader.from_stream(stream).read_all() if len(stream) else schema.empty_table()


def plan_batch(batch: pa.RecordBatch, meta: TopicMeta | None, options: AssignOptions, threads: int = 1
               ) -> tuple[pa.Table, pa.RecordBatch]:
    """(assignment rows, metrics rows) of one batch: :func:`plan_outputs` with the rows as one table."""
    rows, metrics = plan_outputs(batch, meta, options, threads)
    return pa.Table.from_batches(rows, schema=ASSIGNMENT_ARROW_SCHEMA), metrics


# ---------------------------------------------------------------------------------------------
# Spark entry points (pickled by reference: keep them top-level functions of this module)

_META_CACHE: OrderedDict[Any, TopicMeta] = OrderedDict()   # per worker, most recently used last


def resolve_meta(source: Any) -> TopicMeta | None:
    """TopicMeta of a shared topic table, decoded and hashed once per worker and content, or None.

    `source` is a :class:`~kafkagroup.spark.shared_topics.SharedTopics` (assign_groups): keyed by its
    content digest, so a later call with the same content reuses this worker's TopicMeta without
    reading the broadcast; a changed table has another digest. A bare broadcast (or table) is keyed by
    the broadcast itself. The last shared_topics.WORKER_TABLES are kept.

    A shared table is checked here, in the job (assign_groups checks it on the driver only with
    ``validate=True``): a bad row fails the task with the message the driver would have raised."""
    if source is None:
        return None
    if isinstance(source, SharedTopics):
        key: Any = source.digest
        source = source.broadcast
    else:
        # On a worker a broadcast is unpickled to the one Broadcast object of pyspark's per-process
        # registry (kept across tasks while the worker is reused); its file path names it uniquely.
        key = (id(source), getattr(source, "_path", None))
    cached = _META_CACHE.get(key)
    if cached is None:
        value = source.value if hasattr(source, "value") else source
        cached = value if isinstance(value, TopicMeta) else TopicMeta.from_arrow(value)
        _META_CACHE[key] = cached
        while len(_META_CACHE) > WORKER_TABLES:
            _META_CACHE.popitem(last=False)
    else:
        _META_CACHE.move_to_end(key)
    if cached.group is None and cached.row_errors:
        raise InvalidGroupError(f"topic metadata: {cached.row_errors[0][1]}")
    return cached


_OUTPUT_CODE = {name: code for code, name in enumerate(OUTPUTS)}


def plan_record_batches(plan: BatchPlan, strategy: str) -> Iterator[pa.RecordBatch]:
    """Every output of one batch as PLAN_ARROW_SCHEMA record batches: assignment rows (in chunks of
    whole groups), then one metrics row per group, then the withheld partitions."""
    def batch(output: str, n: int, group_id: pa.Array, member_id: pa.Array | None = None, topic: pa.Array | None = None,
              partition: pa.Array | None = None, metrics: pa.Array | None = None) -> pa.RecordBatch:
        return pa.RecordBatch.from_arrays(
            [pa.array(np.full(n, _OUTPUT_CODE[output], dtype=np.int8)), group_id,
             member_id if member_id is not None else pa.nulls(n, pa.string()),
             topic if topic is not None else pa.nulls(n, pa.string()),
             partition if partition is not None else pa.nulls(n, pa.int32()),
             metrics if metrics is not None else pa.nulls(n, PLAN_ARROW_SCHEMA.field("metrics").type)],
            schema=PLAN_ARROW_SCHEMA)

    for rows in assignment_batches_of(plan):
        group_ids, member_ids, topics, partitions = rows.columns
        yield batch(OUTPUT_ASSIGNMENTS, len(group_ids), group_ids, member_ids, topics, partitions)
    problems = plan.problems
    num_groups = problems.num_groups
    metrics = pa.StructArray.from_arrays(metrics_columns(plan, strategy), fields=list(METRICS_STRUCT))
    one_each = pa.ListArray.from_arrays(pa.array(np.arange(num_groups + 1, dtype=np.int32)), metrics,
                                        type=PLAN_ARROW_SCHEMA.field("metrics").type)
    yield batch(OUTPUT_METRICS, num_groups, problems.group_ids, metrics=one_each)
    if len(plan.withheld):
        group_ids, topics, partitions = withheld_columns(plan)
        yield batch(OUTPUT_WITHHELD, len(group_ids), group_ids, topic=topics, partition=partitions)


def assignment_batches(batches: Iterator[pa.RecordBatch], meta_source: Any, options: AssignOptions
                       ) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` function of assign_groups' assignments alone (ASSIGNMENT_ARROW_SCHEMA)."""
    meta = resolve_meta(meta_source)
    for batch in group_batches(batches, options.input_form):
        yield from assignment_batches_of(run_batch(batch, meta, options))


def metrics_batches(batches: Iterator[pa.RecordBatch], meta_source: Any, options: AssignOptions
                    ) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` function of assign_groups' metrics alone (METRICS_ARROW_SCHEMA)."""
    meta = resolve_meta(meta_source)
    for batch in group_batches(batches, options.input_form):
        plan = run_batch(batch, meta, options)
        yield pa.RecordBatch.from_arrays([plan.problems.group_ids] + metrics_columns(plan, options.strategy),
                                         schema=METRICS_ARROW_SCHEMA)


def withheld_batches(batches: Iterator[pa.RecordBatch], meta_source: Any, options: AssignOptions
                     ) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` function of assign_groups' withheld partitions alone (WITHHELD_ARROW_SCHEMA)."""
    meta = resolve_meta(meta_source)
    for batch in group_batches(batches, options.input_form):
        plan = run_batch(batch, meta, options)
        yield pa.RecordBatch.from_arrays(withheld_columns(plan), schema=WITHHELD_ARROW_SCHEMA)


def plan_batches(batches: Iterator[pa.RecordBatch], meta_source: Any, options: AssignOptions
                 ) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` function of assign_groups (PLAN_ARROW_SCHEMA): each batch is interned and assigned
    once, and all its outputs come out of that one run."""
    meta = resolve_meta(meta_source)
    for batch in group_batches(batches, options.input_form):
        yield from plan_record_batches(run_batch(batch, meta, options), options.strategy)


def group_seed(group_id: Any, seed: int) -> list[int]:
    """Seed of a group's random change: stable across runs, workers and batch boundaries."""
    return [seed, zlib.crc32(str(group_id).encode("utf-8"))]


# ---------------------------------------------------------------------------------------------
# compare_strategies: per group and strategy, the rebalance after a change

COMPARE_ARROW_SCHEMA = pa.schema([
    ("group_id", pa.string()), ("strategy", pa.string()), ("change", pa.string()),
    ("members_before", pa.int32()), ("members_after", pa.int32()),
    ("partitions_before", pa.int64()), ("partitions_after", pa.int64()),
    ("balance_gap_before", pa.int64()), ("balance_gap", pa.int64()), ("moved", pa.int64()),
    ("moved_lower_bound", pa.int64()), ("withheld", pa.int64()), ("unassigned", pa.int64()),
    ("max_load", pa.int64()), ("min_load", pa.int64()), ("engine_us", pa.float64()), ("error", pa.string()),
])


@dataclass(frozen=True)
class CompareOptions:
    strategies: tuple[str, ...]
    change: Any                   # kafkagroup.spark.change.Change
    baseline: str = "fresh"       # "fresh": each strategy assigns the group from scratch first;
                                  # "input": each strategy rebalances from the input's owned claims first
    strict: bool = True
    on_error: str = "raise"
    input_form: str = GROUP_ROWS


def compare_batch(batch: pa.RecordBatch, meta: TopicMeta | None, options: CompareOptions) -> pa.RecordBatch:
    """COMPARE_ARROW_SCHEMA rows: one per group and strategy."""
    problems = build_batch(batch, meta, strict=options.strict)
    errors = dict(problems.errors)
    if errors and options.on_error == "raise":
        raise InvalidGroupError(errors[min(errors)])
    columns: dict[str, list[Any]] = {name: [] for name in COMPARE_ARROW_SCHEMA.names}
    describe = options.change.describe()
    for g in range(problems.num_groups):
        gid = problems.group_id(g)
        arrays = problems.arrays(g) if g not in errors else None
        for strategy in options.strategies:
            row: dict[str, Any] = {name: None for name in columns}
            row.update(group_id=gid, strategy=strategy, change=describe)
            if arrays is None:
                row["error"] = errors[g]
            else:
                try:
                    start = arrays if options.baseline == "input" else {
                        **arrays, "owned_offsets": None, "owned_partitions": None, "generation": None}
                    before = assign_arrays(strategy, **start)
                    rng = np.random.default_rng(group_seed(gid, options.change.seed))
                    after_arrays = options.change.apply(arrays, before.owner, rng)
                    after = assign_arrays(strategy, **after_arrays)
                except (KafkaGroupError, ValueError) as e:
                    if options.on_error == "raise":
                        raise InvalidGroupError(group_error(problems, g, e)) from e
                    row["error"] = group_error(problems, g, e)
                else:
                    m = after.metrics
                    row.update(members_before=len(arrays["sub_offsets"]) - 1,
                               members_after=len(after_arrays["sub_offsets"]) - 1,
                               partitions_before=len(before.owner), partitions_after=len(after.owner),
                               balance_gap_before=before.metrics.balance_gap, balance_gap=m.balance_gap,
                               moved=m.moved, withheld=m.withheld,
                               moved_lower_bound=m.moved_lower_bound if m.moved_lower_bound >= 0 else None,
                               unassigned=m.unassigned, max_load=m.max_load, min_load=m.min_load,
                               engine_us=after.engine_us)
            for name, value in row.items():
                columns[name].append(value)
    return pa.RecordBatch.from_arrays([pa.array(columns[f.name], f.type) for f in COMPARE_ARROW_SCHEMA],
                                      schema=COMPARE_ARROW_SCHEMA)


def compare_arrow_batches(batches: Iterator[pa.RecordBatch], meta_source: Any, options: CompareOptions
                          ) -> Iterator[pa.RecordBatch]:
    """``mapInArrow`` function of compare_strategies."""
    meta = resolve_meta(meta_source)
    for batch in group_batches(batches, options.input_form):
        yield compare_batch(batch, meta, options)
