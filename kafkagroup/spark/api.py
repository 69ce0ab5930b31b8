"""The Spark API: assign every group of a fleet, compare strategies after a change, a pandas UDF.

>>> plan = assign_groups(member_rows_df, topics_df, strategy="range")     # doctest: +SKIP
>>> plan.assignments.write.parquet("out/assignments")                    # doctest: +SKIP
>>> plan.metrics.orderBy("balance_gap", ascending=False).show()          # doctest: +SKIP

Input forms and types: :mod:`kafkagroup.spark.schema`. Topic metadata is either one table shared by
every group (a Spark DataFrame ``topic, partitions[, replica_racks]``, a pyarrow / pandas table of
the same columns, or a ``{topic: count}`` dict; broadcast to the executors), or per group (the same
DataFrame with a ``group_id`` column, or a ``topic_table`` column on group rows). A shared table
is broadcast once per content: calling again with the same content reuses the broadcast and each
worker's decoded copy (:mod:`kafkagroup.spark.shared_topics`).

Results are those of ``kafkagroup.assign`` called on each group (same interning and member-order
rules; tests/spark/test_spark_assign.py checks it row for row).
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Tuple

import numpy as np
import pandas as pd
import pyarrow as pa
from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from kafkagroup.engine import strategies as engine_strategies
from kafkagroup.errors import InvalidGroupError
from kafkagroup.spark import executor, schema
from kafkagroup.spark.arrow_builder import TopicMeta
from kafkagroup.spark.change import Change
from kafkagroup.spark.shared_topics import SharedTopics, share

TopicsArg = DataFrame | pa.Table | pd.DataFrame | Mapping[str, Any] | None


class FleetAssignment:
    """assign_groups' result. Unpacks as ``assignments, metrics = assign_groups(...)``.

    ``assignments``: group_id, member_id, topic, partition (one row per assigned partition, in
    (group, topic, partition) order within a batch);
    ``metrics``: group_id, strategy, members, topics, partitions, assigned, unassigned, withheld,
    moved, moved_lower_bound, balance_gap, max_load, min_load, engine_us, unknown_topics,
    dropped_claims, error (one row per group);
    ``withheld``: group_id, topic, partition (cooperative assignors: held back this round).

    ``plan`` is one ``mapInArrow`` that interns and assigns each batch once and emits every output
    (schema.PLAN_SCHEMA, a compact form: ``output`` is a code, ``executor.OUTPUTS[code]`` names it, and
    a metrics row holds its metrics as a one-element array): :meth:`save` writes all of them in one
    job, in a readable form. ``assignments``, ``metrics`` and ``withheld`` are each their own
    ``mapInArrow`` (the cheapest way to get one output: its rows carry no other output's columns),
    built when first read, or, with ``persist=True``, views of the cached ``plan``, so that the
    engine runs once for all of them.
    """

    def __init__(self, plan: DataFrame, groups: DataFrame,
                 single_output: Callable[[str], DataFrame] | None = None) -> None:
        self.plan = plan
        self.groups = groups
        self._single_output = single_output
        self._outputs: dict[str, DataFrame] = {}

    def _output(self, name: str) -> DataFrame:
        df = self._outputs.get(name)
        if df is None:
            df = self._single_output(name) if self._single_output is not None else self._view(name)
            self._outputs[name] = df
        return df

    def _view(self, name: str) -> DataFrame:
        from pyspark.sql import functions as F

        rows = self.plan.where(F.col("output") == executor.OUTPUTS.index(name))
        if name == executor.OUTPUT_METRICS:
            return rows.select("group_id", F.inline("metrics"))
        return rows.select(*schema.ASSIGNMENT_SCHEMA.names if name == executor.OUTPUT_ASSIGNMENTS
                           else schema.WITHHELD_SCHEMA.names)

    @property
    def assignments(self) -> DataFrame:
        return self._output(executor.OUTPUT_ASSIGNMENTS)

    @property
    def metrics(self) -> DataFrame:
        return self._output(executor.OUTPUT_METRICS)

    @property
    def withheld(self) -> DataFrame:
        return self._output(executor.OUTPUT_WITHHELD)

    def __iter__(self) -> Iterator[DataFrame]:
        return iter((self.assignments, self.metrics))

    def readable_plan(self) -> DataFrame:
        """``plan`` with the output's name (``output``: "assignments", "metrics", "withheld") and the
        metrics as a struct (``metrics``, null on other rows): what :meth:`save` writes."""
        from pyspark.sql import functions as F

        names = F.array(*[F.lit(output) for output in executor.OUTPUTS])   # OUTPUTS[code], 1-based in Spark
        name = F.element_at(names, F.col("output").cast("int") + 1)
        return self.plan.select(name.alias("output"), "group_id", "member_id", "topic", "partition",
                                F.col("metrics").getItem(0).alias("metrics"))

    def save(self, path: str, format: str = "parquet", mode: str = "overwrite") -> None:
        """Every output in one job: ``path/output=assignments``, ``.../output=metrics``,
        ``.../output=withheld`` (Spark's partitioned layout; each folder holds its output's columns,
        the others are null)."""
        self.readable_plan().write.partitionBy("output").format(format).mode(mode).save(path)

    def unpersist(self) -> None:
        self.plan.unpersist()

    @staticmethod
    def of(plan: DataFrame, groups: DataFrame) -> "FleetAssignment":
        """The outputs as views of `plan` (filters of one row set; cache it to run the engine once)."""
        return FleetAssignment(plan, groups)


def _check_strategy(strategy: str) -> None:
    known = engine_strategies()
    if strategy not in known:
        raise InvalidGroupError(f"unknown strategy {strategy!r}; the engine implements {known}")


def _check_on_error(on_error: str) -> None:
    if on_error not in ("raise", "record"):
        raise ValueError(f"on_error must be 'raise' or 'record', got {on_error!r}")


def _shared_meta_table(topics: TopicsArg) -> pa.Table:
    """The shared topic table as Arrow (a DataFrame is collected to the driver: it is small)."""
    if isinstance(topics, DataFrame):
        return schema.normalize_topics(topics).toArrow()
    if isinstance(topics, pa.Table):
        return topics
    if isinstance(topics, pd.DataFrame):
        return pa.Table.from_pandas(topics, preserve_index=False)
    if isinstance(topics, Mapping):
        return TopicMeta.mapping_table(topics)
    raise TypeError(f"topics must be a DataFrame, a pyarrow / pandas table or a dict, got {type(topics).__name__}")


def _check_topic_table(table: pa.Table) -> None:
    meta = TopicMeta.of_table(table)
    if meta.row_errors:
        raise InvalidGroupError(f"topic metadata: {meta.row_errors[0][1]}")


def _share_topics(spark: SparkSession, topics: TopicsArg, check: bool) -> SharedTopics:
    """The shared topic table's broadcast (the one of an earlier call when the content is the same:
    :mod:`kafkagroup.spark.shared_topics`), checked on the driver when `check` (decoding and hashing
    it costs ~0.3 s per million topics; otherwise each worker's own decoding checks it,
    executor.resolve_meta)."""
    return share(spark.sparkContext, _shared_meta_table(topics), _check_topic_table if check else None)


def _prepare(groups_df: DataFrame, topics: TopicsArg, validate: bool) -> tuple[DataFrame, Any, str]:
    """(groups for the executors, metadata source, input form); raises for bad schemas before any job.

    Member rows with shared metadata are hash-partitioned and sorted by group_id, and nested by the
    executor (executor.group_batches): cheaper than nesting them in the JVM with collect_list, which
    is what per-group metadata needs (its topic tables are joined per group).
    """
    if not isinstance(groups_df, DataFrame):
        raise TypeError(f"groups_df must be a Spark DataFrame, got {type(groups_df).__name__}")
    per_group_topics = isinstance(topics, DataFrame) and "group_id" in topics.columns
    form = executor.GROUP_ROWS
    if schema.is_group_rows(groups_df) or per_group_topics:
        groups = schema.normalize_groups(groups_df)
    else:
        groups = schema.normalize_member_rows(groups_df)
        form = executor.SORTED_MEMBER_ROWS
    meta_source = None
    if topics is None:
        if "topic_table" not in groups.columns:
            raise schema.SchemaError("no topic metadata: pass topics=..., or give group rows a topic_table column")
    elif per_group_topics:
        tables = schema.per_group_topic_tables(schema.normalize_topics(topics))
        groups = groups.drop("topic_table").join(tables, "group_id", "left")
    else:
        meta_source = _share_topics(groups.sparkSession, topics, validate)
        groups = groups.drop("topic_table")
    if form == executor.SORTED_MEMBER_ROWS:
        groups = groups.repartition("group_id").sortWithinPartitions("group_id")
    if validate:
        schema.check_input(groups_df)
    return groups, meta_source, form


def assign_groups(groups_df: DataFrame, topics: TopicsArg = None, *, strategy: str = "range", strict: bool = True,
                  on_error: str = "raise", validate: bool = False, persist: bool = False) -> FleetAssignment:
    """Assign every group of `groups_df` with `strategy`; see :class:`FleetAssignment` for the output.

    `groups_df`: one row per member, or one row per group with the members nested
    (:mod:`kafkagroup.spark.schema`). `topics`: shared or per-group metadata (module docstring).
    `strict`: an owned claim on an unknown topic / partition is an error (True) or dropped and counted.
    `on_error`: "raise" fails the job with a message naming the group; "record" puts the message in
    ``metrics.error`` and assigns the other groups.

    Schema errors (a missing column, a wrong type, an unknown strategy) always raise here, before any
    job. Data errors (a null group_id or member_id, a null topic list or topic name, a null claim, a
    bad topic-metadata row) are found by the assignment job itself, which fails naming the first
    offending group and member of its batch, or the topic row (with ``on_error="record"`` a group's
    data error is recorded in its metrics row instead). `validate=True` checks them before the job
    instead: one extra aggregate query over the groups (it counts every offending row) and the shared
    topic table decoded on the driver -- an extra Spark job (~0.3 s on 10,000 small groups, local[2])
    and ~0.3 s of driver time per million topics. `persist`: cache the plan that the three outputs are
    views of, so the engine runs once for all of them (see :class:`FleetAssignment`;
    :meth:`FleetAssignment.save` needs no cache).
    """
    _check_strategy(strategy)
    _check_on_error(on_error)
    groups, meta_source, form = _prepare(groups_df, topics, validate)
    options = executor.AssignOptions(strategy=strategy, strict=strict, on_error=on_error, input_form=form)

    def run(function: Any, output: T.StructType) -> DataFrame:
        return groups.mapInArrow(functools.partial(function, meta_source=meta_source, options=options), output)

    plan = run(executor.plan_batches, schema.PLAN_SCHEMA)
    if persist:
        return FleetAssignment.of(plan.persist(StorageLevel.MEMORY_AND_DISK), groups)
    single = {executor.OUTPUT_ASSIGNMENTS: (executor.assignment_batches, schema.ASSIGNMENT_SCHEMA),
              executor.OUTPUT_METRICS: (executor.metrics_batches, schema.METRICS_SCHEMA),
              executor.OUTPUT_WITHHELD: (executor.withheld_batches, schema.WITHHELD_SCHEMA)}
    return FleetAssignment(plan, groups, lambda name: run(*single[name]))


def compare_strategies(groups_df: DataFrame, topics: TopicsArg = None, *, strategies: Sequence[str] | None = None,
                       change: Change | None = None, baseline: str = "fresh", strict: bool = True,
                       on_error: str = "raise", validate: bool = False) -> DataFrame:
    """Per group and strategy: balance and moves of the rebalance after `change`.

    For each strategy, the group is first assigned as it is (``baseline="fresh"``: from scratch;
    ``"input"``: rebalanced from the input's owned claims), then `change` is applied
    (:class:`~kafkagroup.spark.change.Change`: members removed / added, partitions added; seeded per
    group, identical for every strategy) and the next rebalance is computed with every remaining
    member claiming what it owned. Columns: group_id, strategy, change, members_before,
    members_after, partitions_before, partitions_after, balance_gap_before, balance_gap, moved,
    moved_lower_bound, withheld, unassigned, max_load, min_load, engine_us, error.
    """
    names = tuple(strategies) if strategies is not None else tuple(engine_strategies())
    for name in names:
        _check_strategy(name)
    _check_on_error(on_error)
    if baseline not in ("fresh", "input"):
        raise ValueError(f"baseline must be 'fresh' or 'input', got {baseline!r}")
    groups, meta_source, form = _prepare(groups_df, topics, validate)
    options = executor.CompareOptions(strategies=names, change=change or Change(), baseline=baseline,
                                      strict=strict, on_error=on_error, input_form=form)
    return groups.mapInArrow(functools.partial(executor.compare_arrow_batches, meta_source=meta_source,
                                               options=options), schema.COMPARE_SCHEMA)


# ---------------------------------------------------------------------------------------------
# pandas UDF form

UDF_ROW = T.StructType([T.StructField("member_id", T.StringType()), T.StructField("topic", T.StringType()),
                        T.StructField("partition", T.IntegerType())])
UDF_RETURN = T.StructType([T.StructField("assignment", T.ArrayType(UDF_ROW))] + list(schema.METRICS_STRUCT.fields))
_UDF_MEMBERS = pa.list_(pa.struct([(f.name, t) for f, t in zip(
    schema.MEMBER_STRUCT.fields,
    (pa.string(), pa.list_(pa.string()), pa.list_(pa.struct([("topic", pa.string()), ("partition", pa.int32())])),
     pa.int32(), pa.string(), pa.string()))]))
_UDF_TOPIC_TABLE = pa.list_(pa.struct([("topic", pa.string()), ("partitions", pa.int32()),
                                       ("replica_racks", pa.list_(pa.list_(pa.string())))]))


def _udf_batches(series: Iterator[tuple[pd.Series, ...]], meta_source: Any, options: executor.AssignOptions
                 ) -> Iterator[pd.DataFrame]:
    """pandas -> Arrow (pyarrow's converter), the batch plan, Arrow -> pandas: no Python loop per partition."""
    meta = executor.resolve_meta(meta_source)
    for columns in series:
        group_ids, members = columns[0], columns[1]
        arrays = [pa.Array.from_pandas(group_ids, type=pa.string()), pa.Array.from_pandas(members, type=_UDF_MEMBERS)]
        names = ["group_id", "members"]
        if len(columns) > 2:
            arrays.append(pa.Array.from_pandas(columns[2], type=_UDF_TOPIC_TABLE))
            names.append("topic_table")
        plan = executor.run_batch(pa.RecordBatch.from_arrays(arrays, names=names), meta, options)
        _, member_ids, topics, partitions = executor.assignment_columns(plan)
        rows = pa.StructArray.from_arrays([member_ids, topics, partitions], names=["member_id", "topic", "partition"])
        problems = plan.problems
        group_first_part = problems.part_off[problems.topic_off]           # [G+1]
        parts = np.flatnonzero(plan.owner >= 0)
        counts = np.bincount(np.searchsorted(group_first_part, parts, side="right") - 1,
                             minlength=problems.num_groups)[:problems.num_groups]
        per_group = pa.ListArray.from_arrays(pa.array(np.concatenate([[0], np.cumsum(counts)]), pa.int32()), rows)
        metrics = executor.metrics_columns(plan, options.strategy)
        table = pa.Table.from_arrays([per_group] + metrics, names=[f.name for f in UDF_RETURN.fields])
        yield table.to_pandas()


def assignment_udf(strategy: str, topics: TopicsArg = None, *, strict: bool = True, on_error: str = "raise",
                   spark: SparkSession | None = None) -> Any:
    """A pandas UDF assigning one group per row: ``udf(group_id, members[, topic_table])``.

    ``members`` is ``array<struct<member_id, topics, owned, generation, rack, instance_id>>`` with
    exactly the member struct of :mod:`kafkagroup.spark.schema` (build it with ``collect_list(struct(...))``);
    the result is ``struct<assignment: array<struct<member_id, topic, partition>>, <metrics...>>``.
    Shared `topics` are broadcast (pass `spark` when no session is active); without them, pass the
    per-group ``topic_table`` column as third argument. Slower than :func:`assign_groups` (pandas
    conversions on both sides), meant for select / SQL pipelines::

        plan = assignment_udf("range", {"orders": 12})
        df.select("group_id", plan("group_id", "members").alias("plan")).select("group_id", "plan.*")
    """
    from pyspark.sql.functions import pandas_udf

    _check_strategy(strategy)
    _check_on_error(on_error)
    meta_source = None
    if topics is not None:
        session = spark or SparkSession.getActiveSession()
        if session is None:
            raise RuntimeError("assignment_udf with shared topics needs an active SparkSession (or pass spark=...)")
        meta_source = _share_topics(session, topics, check=True)
    options = executor.AssignOptions(strategy=strategy, strict=strict, on_error=on_error)
    body = functools.partial(_udf_batches, meta_source=meta_source, options=options)

    def assign_udf(batches: Iterator[Tuple[pd.Series, ...]]) -> Iterator[pd.DataFrame]:  # noqa: UP006 (pyspark reads the hint)
        return body(batches)

    return pandas_udf(assign_udf, returnType=UDF_RETURN)
