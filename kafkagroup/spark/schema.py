"""Spark schemas of the inputs and outputs, and the checks that can run before any job starts.

Input forms (column types; integer columns may be any of tinyint/smallint/int/bigint)::

    member rows:  group_id string, member_id string, topics array<string>,
                  [owned array<struct<topic: string, partition: int>>], [generation int],
                  [rack string], [instance_id string]
    group rows:   group_id string, members array<struct<member_id, topics, [owned], [generation],
                  [rack], [instance_id]>>, [topic_table array<struct<topic, partitions, [replica_racks]>>]
    topics:       [group_id string], topic string, partitions int, [replica_racks array<array<string>>]

:func:`normalize_groups` checks the schema (a missing column or a wrong type raises
:class:`SchemaError` naming the column) and returns group rows with every optional field present
and cast to the exact types the executor reads. The data errors a schema cannot express (null group
or member ids, null topic names, null claims) are found by the batch builder inside the assignment
job, which names the first offending group and member; :func:`check_input` (``assign_groups(...,
validate=True)``) finds them before the job instead, with one aggregate query that counts them all.
"""
from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from kafkagroup.errors import InvalidGroupError

INTEGRAL = (T.ByteType, T.ShortType, T.IntegerType, T.LongType)

OWNED_STRUCT = T.StructType([T.StructField("topic", T.StringType()), T.StructField("partition", T.IntegerType())])
MEMBER_STRUCT = T.StructType([
    T.StructField("member_id", T.StringType()), T.StructField("topics", T.ArrayType(T.StringType())),
    T.StructField("owned", T.ArrayType(OWNED_STRUCT)), T.StructField("generation", T.IntegerType()),
    T.StructField("rack", T.StringType()), T.StructField("instance_id", T.StringType()),
])
TOPIC_ROW_STRUCT = T.StructType([
    T.StructField("topic", T.StringType()), T.StructField("partitions", T.IntegerType()),
    T.StructField("replica_racks", T.ArrayType(T.ArrayType(T.StringType()))),
])
OPTIONAL_MEMBER_FIELDS = ("owned", "generation", "rack", "instance_id")

METRICS_STRUCT = T.StructType([
    T.StructField("strategy", T.StringType()), T.StructField("members", T.IntegerType()),
    T.StructField("topics", T.IntegerType()), T.StructField("partitions", T.LongType()),
    T.StructField("assigned", T.LongType()), T.StructField("unassigned", T.LongType()),
    T.StructField("withheld", T.LongType()), T.StructField("moved", T.LongType()),
    T.StructField("moved_lower_bound", T.LongType()), T.StructField("balance_gap", T.LongType()),
    T.StructField("max_load", T.LongType()), T.StructField("min_load", T.LongType()),
    T.StructField("engine_us", T.DoubleType()), T.StructField("unknown_topics", T.ArrayType(T.StringType())),
    T.StructField("dropped_claims", T.LongType()), T.StructField("error", T.StringType()),
])
ASSIGNMENT_SCHEMA = T.StructType([
    T.StructField("group_id", T.StringType()), T.StructField("member_id", T.StringType()),
    T.StructField("topic", T.StringType()), T.StructField("partition", T.IntegerType()),
])
WITHHELD_SCHEMA = T.StructType([
    T.StructField("group_id", T.StringType()), T.StructField("topic", T.StringType()),
    T.StructField("partition", T.IntegerType()),
])
METRICS_SCHEMA = T.StructType([T.StructField("group_id", T.StringType())] + list(METRICS_STRUCT.fields))
# assign_groups' one mapInArrow: every output in one row set, told apart by `output` (a code:
# executor.OUTPUTS names it); a metrics row holds its metrics as a one-element array; the columns an output
# does not use are null (executor.PLAN_ARROW_SCHEMA says why this shape). FleetAssignment.save()
# writes the readable form: the output's name and the metrics struct.
PLAN_SCHEMA = T.StructType([
    T.StructField("output", T.ByteType()), T.StructField("group_id", T.StringType()),
    T.StructField("member_id", T.StringType()), T.StructField("topic", T.StringType()),
    T.StructField("partition", T.IntegerType()), T.StructField("metrics", T.ArrayType(METRICS_STRUCT)),
])
_LONG = ("partitions_before", "partitions_after", "balance_gap_before", "balance_gap", "moved", "moved_lower_bound",
         "withheld", "unassigned", "max_load", "min_load")
COMPARE_SCHEMA = T.StructType(
    [T.StructField(n, T.StringType()) for n in ("group_id", "strategy", "change")]
    + [T.StructField(n, T.IntegerType()) for n in ("members_before", "members_after")]
    + [T.StructField(n, T.LongType()) for n in _LONG]
    + [T.StructField("engine_us", T.DoubleType()), T.StructField("error", T.StringType())])


class SchemaError(InvalidGroupError):
    """An input DataFrame lacks a column or has one of the wrong type (raised before any job)."""


def _type_error(where: str, expected: str, got: T.DataType) -> SchemaError:
    return SchemaError(f"{where}: expected {expected}, got {got.simpleString()}")


def _field_types(struct: T.StructType) -> dict[str, T.DataType]:
    return {f.name: f.dataType for f in struct.fields}


def _check_string(where: str, dtype: T.DataType) -> None:
    if not isinstance(dtype, T.StringType):
        raise _type_error(where, "string", dtype)


def _check_integral(where: str, dtype: T.DataType) -> None:
    if not isinstance(dtype, INTEGRAL):
        raise _type_error(where, "an integer type", dtype)


def _check_string_array(where: str, dtype: T.DataType) -> None:
    if not (isinstance(dtype, T.ArrayType) and isinstance(dtype.elementType, T.StringType)):
        raise _type_error(where, "array<string>", dtype)


def _check_owned(where: str, dtype: T.DataType) -> None:
    if not (isinstance(dtype, T.ArrayType) and isinstance(dtype.elementType, T.StructType)):
        raise _type_error(where, "array<struct<topic: string, partition: int>>", dtype)
    fields = _field_types(dtype.elementType)
    for name in ("topic", "partition"):
        if name not in fields:
            raise SchemaError(f"{where}: the claim struct has no field {name!r} "
                              f"(expected array<struct<topic: string, partition: int>>)")
    _check_string(f"{where}.topic", fields["topic"])
    _check_integral(f"{where}.partition", fields["partition"])


def check_member_fields(where: str, fields: dict[str, T.DataType]) -> None:
    """Member fields by name -> type (a member-row DataFrame's columns or the nested member struct)."""
    for name in ("member_id", "topics"):
        if name not in fields:
            raise SchemaError(f"{where}: missing column {name!r} (member rows need group_id, member_id, topics)")
    _check_string(f"{where}.member_id", fields["member_id"])
    _check_string_array(f"{where}.topics", fields["topics"])
    if "owned" in fields:
        _check_owned(f"{where}.owned", fields["owned"])
    if "generation" in fields:
        _check_integral(f"{where}.generation", fields["generation"])
    for name in ("rack", "instance_id"):
        if name in fields:
            _check_string(f"{where}.{name}", fields[name])


def _member_struct(get: dict[str, Column], present: set[str]) -> Column:
    """The member as MEMBER_STRUCT: exact types, absent optional fields as typed nulls."""
    def opt(name: str, dtype: T.DataType) -> Column:
        return get[name].cast(dtype) if name in present else F.lit(None).cast(dtype)
    return F.struct(get["member_id"].cast("string").alias("member_id"),
                    get["topics"].cast(T.ArrayType(T.StringType())).alias("topics"),
                    opt("owned", T.ArrayType(OWNED_STRUCT)).alias("owned"),
                    opt("generation", T.IntegerType()).alias("generation"),
                    opt("rack", T.StringType()).alias("rack"),
                    opt("instance_id", T.StringType()).alias("instance_id"))


def _check_topic_fields(where: str, fields: dict[str, T.DataType]) -> None:
    if "topic" not in fields:
        raise SchemaError(f"{where}: missing column 'topic' (topics need topic, partitions)")
    _check_string(f"{where}.topic", fields["topic"])
    if "partitions" not in fields and "replica_racks" not in fields:
        raise SchemaError(f"{where}: missing column 'partitions'")
    if "partitions" in fields:
        _check_integral(f"{where}.partitions", fields["partitions"])
    if "replica_racks" in fields:
        dtype = fields["replica_racks"]
        if not (isinstance(dtype, T.ArrayType) and isinstance(dtype.elementType, T.ArrayType)
                and isinstance(dtype.elementType.elementType, T.StringType)):
            raise _type_error(f"{where}.replica_racks", "array<array<string>>", dtype)


def _topic_struct(get: dict[str, Column], present: set[str]) -> Column:
    return F.struct(get["topic"].cast("string").alias("topic"),
                    (get["partitions"].cast("int") if "partitions" in present else F.lit(None).cast("int")).alias("partitions"),
                    (get["replica_racks"].cast(TOPIC_ROW_STRUCT["replica_racks"].dataType) if "replica_racks" in present
                     else F.lit(None).cast(TOPIC_ROW_STRUCT["replica_racks"].dataType)).alias("replica_racks"))


def _same_type(a: T.DataType, b: T.DataType) -> bool:
    """Equal types ignoring nullability."""
    if isinstance(a, T.StructType) and isinstance(b, T.StructType):
        return a.names == b.names and all(_same_type(x.dataType, y.dataType) for x, y in zip(a.fields, b.fields))
    if isinstance(a, T.ArrayType) and isinstance(b, T.ArrayType):
        return _same_type(a.elementType, b.elementType)
    return a == b


def _struct_array_fields(where: str, dtype: T.DataType, expected: str,
                         check_fields: Callable[[str, dict[str, T.DataType]], None]) -> set[str]:
    """The field names of an array<struct> column, after checking its shape and its fields' types."""
    if not (isinstance(dtype, T.ArrayType) and isinstance(dtype.elementType, T.StructType)):
        raise _type_error(where, expected, dtype)
    element_fields = _field_types(dtype.elementType)
    check_fields(where, element_fields)
    return set(element_fields)


def _rebuilt_structs(column: str, present: set[str], build: Callable[[dict[str, Column], set[str]], Column]) -> Column:
    """``column`` (an array<struct>) with each element rebuilt to the exact type by ``build``."""
    return F.transform(column, lambda e: build({n: e[n] for n in present}, present)).alias(column)


def is_group_rows(df: DataFrame) -> bool:
    return "members" in df.columns


def normalize_groups(df: DataFrame) -> DataFrame:
    """Group rows ``group_id, members[, topic_table]`` with exact types, from either input form."""
    fields = _field_types(df.schema)
    if "group_id" not in fields:
        raise SchemaError("groups: missing column 'group_id'")
    _check_string("groups.group_id", fields["group_id"])
    if is_group_rows(df):
        members = fields["members"]
        present = _struct_array_fields("groups.members", members, "array<struct<member_id, topics, ...>>",
                                       check_member_fields)
        if _same_type(members.elementType, MEMBER_STRUCT):   # rebuilding structs costs ~3 us per member
            columns = [F.col("group_id"), F.col("members")]
        else:
            columns = [F.col("group_id"), _rebuilt_structs("members", present, _member_struct)]
        if "topic_table" in fields:
            tpresent = _struct_array_fields("groups.topic_table", fields["topic_table"],
                                            "array<struct<topic, partitions, replica_racks>>", _check_topic_fields)
            columns.append(_rebuilt_structs("topic_table", tpresent, _topic_struct))
        return df.select(*columns)
    check_member_fields("groups", fields)
    present = set(fields) & {"member_id", "topics", *OPTIONAL_MEMBER_FIELDS}
    member = _member_struct({n: F.col(n) for n in present}, present)
    # collect_list order is arbitrary; the executor sorts members into Kafka's MemberInfo order anyway
    return df.groupBy("group_id").agg(F.collect_list(member).alias("members"))


def normalize_member_rows(df: DataFrame) -> DataFrame:
    """Member rows ``group_id, member_id, topics, owned, generation, rack, instance_id`` with exact
    types (absent optional columns as typed nulls)."""
    fields = _field_types(df.schema)
    if "group_id" not in fields:
        raise SchemaError("groups: missing column 'group_id'")
    _check_string("groups.group_id", fields["group_id"])
    check_member_fields("groups", fields)
    present = set(fields) & {"member_id", "topics", *OPTIONAL_MEMBER_FIELDS}
    member = _member_struct({n: F.col(n) for n in present}, present)
    return df.select(F.col("group_id"), *[member[f.name].alias(f.name) for f in MEMBER_STRUCT.fields])


def normalize_topics(df: DataFrame) -> DataFrame:
    """``[group_id,] topic, partitions, replica_racks`` with exact types."""
    fields = _field_types(df.schema)
    _check_topic_fields("topics", fields)
    present = set(fields)
    struct = _topic_struct({n: F.col(n) for n in present}, present)
    columns = [struct[n].alias(n) for n in ("topic", "partitions", "replica_racks")]
    if "group_id" in fields:
        _check_string("topics.group_id", fields["group_id"])
        columns.insert(0, F.col("group_id"))
    return df.select(*columns)


def per_group_topic_tables(topics: DataFrame) -> DataFrame:
    """``group_id, topic_table`` from topic rows that carry a group_id."""
    return topics.groupBy("group_id").agg(
        F.collect_list(F.struct("topic", "partitions", "replica_racks")).alias("topic_table"))


def check_input(groups: DataFrame) -> None:
    """One aggregate query over the (schema-checked) input, before any assignment job: raises
    InvalidGroupError naming the first group with a null group_id / member_id, an empty member_id,
    a null topics list (Kafka's Subscription has no null topic list), a null topic name or a null claim. Member rows are checked as they are (no shuffle)."""
    fields = _field_types(groups.schema)
    nested = is_group_rows(groups)
    member_fields = _field_types(fields["members"].elementType) if nested else fields

    def per_member(cond: Callable[[Callable[[str], Column]], Column]) -> Column:
        if nested:
            return F.coalesce(F.exists("members", lambda m: cond(lambda name: m[name])), F.lit(False))
        return F.coalesce(cond(F.col), F.lit(False))

    checks: list[tuple[str, Column]] = [
        ("a null group_id", F.col("group_id").isNull()),
        ("a null or empty member_id", per_member(lambda get: get("member_id").isNull() | (get("member_id") == F.lit("")))),
        ("a null topics list", per_member(lambda get: get("topics").isNull())),
        ("a null topic name in a member's topics", per_member(lambda get: F.exists(get("topics"), lambda t: t.isNull()))),
    ]
    if "owned" in member_fields:
        checks.append(("an owned claim with a null topic or partition", per_member(
            lambda get: F.exists(get("owned"), lambda c: c["topic"].isNull() | c["partition"].isNull()))))
    aggregates = []
    for i, (_, cond) in enumerate(checks):
        aggregates.append(F.sum(cond.cast("long")).alias(f"n{i}"))
        aggregates.append(F.first(F.when(cond, F.coalesce(F.col("group_id"), F.lit("<null>"))), ignorenulls=True)
                          .alias(f"g{i}"))
    row = groups.select(*aggregates).first()
    problems = []
    for i, (what, _) in enumerate(checks):
        count = (row[f"n{i}"] or 0) if row is not None else 0
        if count:
            unit = "group row(s)" if nested or i == 0 else "member row(s)"
            problems.append(f"{count} {unit} with {what} (first in group {row[f'g{i}']!r})")
    if problems:
        raise InvalidGroupError("invalid input: " + "; ".join(problems))
