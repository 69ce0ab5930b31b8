"""kafkagroup.spark on a local[2] session: results equal kafkagroup.assign per group, errors before jobs.

One module-scoped SparkSession (UI off, 2 shuffle partitions): the ``spark`` fixture of tests/conftest.py,
which sets PYSPARK_PYTHON to this interpreter.
"""
from __future__ import annotations

import argparse
import os
import random
import sys

import pyarrow as pa
import pytest

import kafkagroup
from kafkagroup.errors import InvalidGroupError
from kafkagroup.spark.fleet import assign_fleet_local, generate_fleet, member_rows
from kafkagroup.spark.arrow_builder import TopicMeta
from kafkagroup.spark.change import Change
from kafkagroup.spark.executor import CompareOptions, compare_batch
from spark_cases import member_dicts, nested_table, random_group, single_holder

pytestmark = pytest.mark.spark
STRATEGIES = kafkagroup.strategies()


@pytest.fixture(scope="module")
def cases():
    rng = random.Random(2024)
    return [random_group(rng, f"g{i:02d}") for i in range(30)]


def expected_rows(groups, strategy, strict=False):
    """{(group, member, topic, partition)} and metrics per group from kafkagroup.assign, group by group."""
    rows, metrics = set(), {}
    for group in groups:
        result = kafkagroup.assign(strategy, group["topics"], group["members"], strict=strict)
        for member, tps in result.assignment.items():
            rows.update((group["group_id"], member, tp.topic, tp.partition) for tp in tps)
        metrics[group["group_id"]] = (result.metrics, sorted((tp.topic, tp.partition) for tp in result.withheld),
                                      result.unknown_topics, result.dropped_claims)
    return rows, metrics


def spark_rows(plan):
    rows = {tuple(r) for r in plan.assignments.collect()}
    withheld: dict[str, list] = {}
    for r in plan.withheld.collect():
        withheld.setdefault(r["group_id"], []).append((r["topic"], r["partition"]))
    metrics = {}
    for r in plan.metrics.collect():
        values = {name: r[name] for name in kafkagroup.Metrics.__dataclass_fields__}
        if values["moved_lower_bound"] is None:     # Spark's null is the engine's -1 ("no bound known")
            values["moved_lower_bound"] = -1
        m = kafkagroup.Metrics(**values)
        metrics[r["group_id"]] = (m, sorted(withheld.get(r["group_id"], [])), r["unknown_topics"], r["dropped_claims"])
    return rows, metrics


def per_group_topics_df(spark, groups):
    rows = []
    for group in groups:
        for name, spec in group["topics"].items():
            racks = None if isinstance(spec, int) else spec
            rows.append({"group_id": group["group_id"], "topic": name,
                         "partitions": spec if isinstance(spec, int) else len(spec), "replica_racks": racks})
    schema = "group_id string, topic string, partitions int, replica_racks array<array<string>>"
    return spark.createDataFrame(rows, schema)


MEMBER_ROW_SCHEMA = ("group_id string, member_id string, topics array<string>, "
                     "owned array<struct<topic: string, partition: int>>, generation int, rack string, instance_id string")


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_member_rows_equal_assign_per_group(spark, cases, strategy):
    from kafkagroup.spark import assign_groups

    if strategy == "server-uniform":
        cases = single_holder(cases)
    members = spark.createDataFrame([row for g in cases for row in member_dicts(g)], MEMBER_ROW_SCHEMA)
    plan = assign_groups(members, per_group_topics_df(spark, cases), strategy=strategy, strict=False)
    try:
        rows, metrics = spark_rows(plan)
    finally:
        plan.unpersist()
    exp_rows, exp_metrics = expected_rows([g for g in cases if g["members"]], strategy)
    assert rows == exp_rows
    assert {k: v for k, v in metrics.items()} == exp_metrics


def test_group_rows_with_topic_table_column(spark, cases):
    from kafkagroup.spark import assign_groups

    table = nested_table(cases)
    plan = assign_groups(spark.createDataFrame(table), strategy="roundrobin", strict=False, persist=False)
    rows, metrics = spark_rows(plan)
    exp_rows, exp_metrics = expected_rows(cases, "roundrobin")
    assert rows == exp_rows and metrics == exp_metrics


def test_save_writes_every_output_from_one_plan(spark, tmp_path):
    from kafkagroup.spark import assign_groups

    fleet = generate_fleet(30, seed=9, members=(2, 12), partitions=(10, 60))
    exp_assign, exp_metrics = assign_fleet_local(fleet.groups, fleet.topics, "cooperative-sticky")
    plan = assign_groups(spark.createDataFrame(fleet.groups), fleet.topics, strategy="cooperative-sticky", persist=False)
    plan.save(str(tmp_path / "plan"))
    written = spark.read.parquet(str(tmp_path / "plan"))
    assert {r.output for r in written.select("output").distinct().collect()} <= {"assignments", "metrics", "withheld"}
    rows = written.where("output = 'assignments'").select("group_id", "member_id", "topic", "partition")
    assert {tuple(r) for r in rows.collect()} == {tuple(r.values()) for r in exp_assign.to_pylist()}
    metrics = written.where("output = 'metrics'").select("group_id", "metrics.*")
    assert {(r.group_id, r.assigned, r.balance_gap) for r in metrics.collect()} == {
        (r["group_id"], r["assigned"], r["balance_gap"]) for r in exp_metrics.to_pylist()}
    # the filtered views of the same plan agree
    assert {tuple(r) for r in plan.assignments.collect()} == {tuple(r) for r in rows.collect()}


def test_shared_topics_as_dataframe_dict_and_arrow(spark):
    from kafkagroup.spark import assign_groups

    fleet = generate_fleet(40, seed=5, members=(2, 30), partitions=(5, 300), static_fraction=0.3)
    exp_assign, exp_metrics = assign_fleet_local(fleet.groups, fleet.topics, "range")
    expected = {tuple(r.values()) for r in exp_assign.to_pylist()}
    groups = spark.createDataFrame(member_rows(fleet.groups))
    topics_dict = dict(zip(fleet.topics.column("topic").to_pylist(), fleet.topics.column("partitions").to_pylist()))
    for topics in (spark.createDataFrame(fleet.topics), topics_dict, fleet.topics):
        plan = assign_groups(groups, topics, strategy="range", persist=False)
        assert {tuple(r) for r in plan.assignments.collect()} == expected
    # and the single-process loop agrees with kafkagroup.assign itself
    from kafkagroup.spark.fleet import group_scenarios
    for gid, topics, subs in list(group_scenarios(fleet.groups, fleet.topics))[:10]:
        for member, tps in kafkagroup.assign("range", topics, subs).assignment.items():
            assert {(gid, member, tp.topic, tp.partition) for tp in tps} <= expected
    assert exp_metrics.num_rows == 40


def test_pandas_udf_equals_assign_groups(spark, cases):
    from pyspark.sql import functions as F

    from kafkagroup.spark import assignment_udf

    groups = spark.createDataFrame(nested_table(cases))
    udf = assignment_udf("sticky" if "sticky" in STRATEGIES else "range", strict=False)
    out = groups.select("group_id", udf("group_id", "members", "topic_table").alias("plan"))
    rows = {(r["group_id"], a["member_id"], a["topic"], a["partition"])
            for r in out.select("group_id", F.col("plan.assignment").alias("a")).collect() for a in r["a"]}
    exp_rows, exp_metrics = expected_rows(cases, "sticky" if "sticky" in STRATEGIES else "range")
    assert rows == exp_rows
    moved = {r["group_id"]: r["moved"] for r in out.select("group_id", "plan.moved").collect()}
    assert moved == {gid: m[0].moved for gid, m in exp_metrics.items()}


def test_pandas_udf_with_shared_topics_in_sql(spark):
    from kafkagroup.spark import assignment_udf

    spark.createDataFrame([("g", [{"member_id": "b", "topics": ["t"]}, {"member_id": "a", "topics": ["t"]}])],
                          "group_id string, members array<struct<member_id: string, topics: array<string>, "
                          "owned: array<struct<topic: string, partition: int>>, generation: int, rack: string, "
                          "instance_id: string>>").createOrReplaceTempView("kg_groups")
    spark.udf.register("kafka_assign", assignment_udf("range", {"t": 3}, spark=spark))
    row = spark.sql("SELECT kafka_assign(group_id, members) AS p FROM kg_groups").first()
    assert [(a["member_id"], a["topic"], a["partition"]) for a in row["p"]["assignment"]] == \
        [("a", "t", 0), ("a", "t", 1), ("b", "t", 2)]


# ---------------------------------------------------------------------------------------------
# errors: schema problems before any job, bad groups named in the job's error


def _no_new_jobs(spark, call):
    tracker = spark.sparkContext.statusTracker()
    spark.sparkContext.setJobGroup("kg-schema-check", "schema check")
    try:
        with pytest.raises(InvalidGroupError) as info:
            call()
        assert tracker.getJobIdsForGroup("kg-schema-check") == []
    finally:
        spark.sparkContext.setJobGroup("", "")
    return str(info.value)


def test_schema_errors_raise_before_any_job(spark):
    from kafkagroup.spark import assign_groups

    topics = {"t": 3}
    missing = spark.createDataFrame([("g", "m")], "group_id string, member_id string")
    assert "missing column 'topics'" in _no_new_jobs(spark, lambda: assign_groups(missing, topics))
    wrong = spark.createDataFrame([("g", "m", "t")], "group_id string, member_id string, topics string")
    assert "groups.topics: expected array<string>, got string" in _no_new_jobs(spark, lambda: assign_groups(wrong, topics))
    claims = spark.createDataFrame([("g", "m", ["t"], [("t", "0")])],
                                   "group_id string, member_id string, topics array<string>, "
                                   "owned array<struct<topic: string, partition: string>>")
    assert "owned.partition: expected an integer type" in _no_new_jobs(spark, lambda: assign_groups(claims, topics))
    no_group = spark.createDataFrame([("m", ["t"])], "member_id string, topics array<string>")
    assert "missing column 'group_id'" in _no_new_jobs(spark, lambda: assign_groups(no_group, topics))
    ok = spark.createDataFrame([("g", "m", ["t"])], "group_id string, member_id string, topics array<string>")
    assert "unknown strategy 'nope'" in _no_new_jobs(spark, lambda: assign_groups(ok, topics, strategy="nope"))
    bad_topics = spark.createDataFrame([("t", "3")], "topic string, partitions string")
    assert "topics.partitions: expected an integer type" in _no_new_jobs(spark, lambda: assign_groups(ok, bad_topics))


def test_validate_raises_data_errors_before_the_assignment_job(spark):
    from kafkagroup.spark import assign_groups

    rows = spark.createDataFrame([("g1", "a", ["t"]), ("g2", None, ["t"]), ("g3", "", ["t"])],
                                 "group_id string, member_id string, topics array<string>")
    with pytest.raises(InvalidGroupError, match=r"2 member row\(s\) with a null or empty member_id \(first in group 'g[23]'\)"):
        assign_groups(rows, {"t": 3}, validate=True)       # raised by the call itself: no assignment job has run
    nested = spark.createDataFrame([("g9", [("x", ["t"]), (None, ["t"])])],
                                   "group_id string, members array<struct<member_id: string, topics: array<string>>>")
    with pytest.raises(InvalidGroupError, match="first in group 'g9'"):
        assign_groups(nested, {"t": 3}, validate=True)
    null_topics = spark.createDataFrame([("g1", "a", ["t"]), ("g4", "b", None)],
                                        "group_id string, member_id string, topics array<string>")
    with pytest.raises(InvalidGroupError, match=r"1 member row\(s\) with a null topics list \(first in group 'g4'\)"):
        assign_groups(null_topics, {"t": 3}, validate=True)
    twice = pa.table({"topic": ["t", "u", "t"], "partitions": [3, 1, 2]})
    assert "topic 't' appears twice" in _no_new_jobs(spark, lambda: assign_groups(null_topics, twice, validate=True))


def test_data_errors_fail_the_assignment_job_naming_group_and_member(spark):
    """By default the checks run in the assignment job itself (no extra query): every output's job
    fails naming the offending group and member; on_error="record" records them per group."""
    from kafkagroup.spark import assign_groups

    member_rows = spark.createDataFrame([("g1", "a", ["t"]), ("g2", None, ["t"]), ("g4", "b", None)],
                                        "group_id string, member_id string, topics array<string>")
    nested = spark.createDataFrame([("g1", [("a", ["t"])]), ("g9", [("x", ["t"]), ("y", ["t", None])])],
                                   "group_id string, members array<struct<member_id: string, topics: array<string>>>")
    plan = assign_groups(member_rows, {"t": 3})            # no job yet: the errors come with the outputs
    for output in (plan.assignments, plan.metrics, plan.plan, plan.readable_plan()):
        with pytest.raises(Exception, match=r"group 'g2': member id must be a non-empty string, got None"
                                            r"|group 'g4': member 'b': topics must be a list, got None"):
            output.collect()
    with pytest.raises(Exception, match=r"group 'g9': member 'y': topic names must be strings, got None"):
        assign_groups(nested, {"t": 3}).metrics.collect()
    recorded = assign_groups(member_rows, {"t": 3}, on_error="record", persist=True)
    errors = {r["group_id"]: r["error"] for r in recorded.metrics.collect()}
    assert errors["g1"] is None and "member id must be a non-empty string" in errors["g2"]
    assert "topics must be a list" in errors["g4"]
    assert {r["group_id"] for r in recorded.assignments.collect()} == {"g1"}
    recorded.unpersist()
    twice = pa.table({"topic": ["t", "u", "t"], "partitions": [3, 1, 2]})
    with pytest.raises(Exception, match=r"topic metadata: topic 't' appears twice in the topic metadata"):
        assign_groups(nested, twice, on_error="record").assignments.collect()


def test_bad_group_fails_the_job_naming_the_group(spark):
    from kafkagroup.spark import assign_groups

    rows = spark.createDataFrame(
        [("ok", "a", ["t"], None), ("broken", "a", ["t"], [("t", 7)]), ("broken", "b", ["t"], None)],
        "group_id string, member_id string, topics array<string>, owned array<struct<topic: string, partition: int>>")
    plan = assign_groups(rows, {"t": 3}, persist=False)
    with pytest.raises(Exception, match=r"group 'broken': member 'a' claims partition t-7 of a topic with 3 partitions"):
        plan.assignments.collect()
    recorded = assign_groups(rows, {"t": 3}, on_error="record", persist=False)
    errors = {r["group_id"]: r["error"] for r in recorded.metrics.collect()}
    assert errors["ok"] is None and "member 'a' claims partition t-7" in errors["broken"]
    assert {r["group_id"] for r in recorded.assignments.collect()} == {"ok"}
    lenient = assign_groups(rows, {"t": 3}, strict=False, persist=False)
    assert {r["group_id"]: r["dropped_claims"] for r in lenient.metrics.collect()} == {"ok": 0, "broken": 1}


# ---------------------------------------------------------------------------------------------
# compare_strategies and the CLI


def test_compare_strategies_equals_local_batches(spark):
    from kafkagroup.spark import compare_strategies

    fleet = generate_fleet(30, seed=9, members=(3, 40), partitions=(10, 400))
    change = Change(remove_members=0.2, add_partitions=0.1, seed=3)
    result = compare_strategies(spark.createDataFrame(fleet.groups), spark.createDataFrame(fleet.topics),
                                strategies=STRATEGIES, change=change)
    got = {(r["group_id"], r["strategy"]): r.asDict() for r in result.collect()}
    local = compare_batch(fleet.groups.combine_chunks().to_batches()[0], TopicMeta.from_arrow(fleet.topics),
                          CompareOptions(strategies=tuple(STRATEGIES), change=change))
    expected = {(r["group_id"], r["strategy"]): r for r in local.to_pylist()}
    assert got.keys() == expected.keys() and len(got) == 30 * len(STRATEGIES)
    for key, row in expected.items():
        assert {k: v for k, v in got[key].items() if k != "engine_us"} == {k: v for k, v in row.items() if k != "engine_us"}
        assert row["members_after"] < row["members_before"] and row["error"] is None
    if "sticky" in STRATEGIES:   # a sticky assignor moves no more than what the removed members owned
        for (gid, strategy), row in expected.items():
            if strategy == "sticky":
                assert row["moved"] >= 0 and row["balance_gap"] <= got[(gid, "range")]["balance_gap"] + 1


def test_cli_spark_plan_example(spark, tmp_path):
    from kafkagroup.spark import cli

    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    assert cli.run(parser.parse_args(["--example", "25", "--strategy", "roundrobin", "--out", str(tmp_path)])) == 0
    metrics = spark.read.parquet(str(tmp_path / "metrics"))
    assert metrics.count() == 25 and metrics.where("unassigned > 0 OR error IS NOT NULL").count() == 0
    partitions = metrics.agg({"partitions": "sum"}).first()[0]
    assert spark.read.parquet(str(tmp_path / "assignments")).count() == partitions
    # reading the groups back from Parquet (member rows) gives the same plan
    fleet = generate_fleet(25, seed=0)
    pa_dir = tmp_path / "in"
    pa_dir.mkdir()
    import pyarrow.parquet as pq
    pq.write_table(member_rows(fleet.groups), pa_dir / "groups.parquet")
    pq.write_table(fleet.topics, pa_dir / "topics.parquet")
    args = parser.parse_args(["--groups", str(pa_dir / "groups.parquet"), "--topics", str(pa_dir / "topics.parquet"),
                              "--strategy", "roundrobin", "--out", str(tmp_path / "again")])
    assert cli.run(args) == 0
    first = {tuple(r) for r in spark.read.parquet(str(tmp_path / "assignments")).collect()}
    assert {tuple(r) for r in spark.read.parquet(str(tmp_path / "again" / "assignments")).collect()} == first
    compare = parser.parse_args(["--example", "10", "--compare", "--remove-members", "0.1", "--out", str(tmp_path / "c")])
    assert cli.run(compare) == 0
    assert spark.read.parquet(str(tmp_path / "c" / "compare")).count() == 10 * len(STRATEGIES)


def test_import_error_names_the_extra():
    import subprocess

    script = ("import sys\n"
              "sys.modules['pyspark'] = None   # as if pyspark were not installed\n"
              "import kafkagroup\n"
              "assert 'kafkagroup.spark' not in sys.modules\n"
              "import kafkagroup.spark   # imports nothing: spark-plan's arguments and --local work without pyspark\n"
              "try:\n"
              "    from kafkagroup.spark import assign_groups\n"
              "except ImportError as e:\n"
              "    print(e)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert "pip install 'kafkagroup[spark]'" in out and "pyspark" in out


def test_arrow_output_schemas_match_spark_schemas():
    # mapInArrow accepts only batches whose types equal the declared Spark schema's Arrow form
    from pyspark.sql.pandas.types import to_arrow_schema

    from kafkagroup.spark import executor, schema

    for arrow, spark_schema in ((executor.ASSIGNMENT_ARROW_SCHEMA, schema.ASSIGNMENT_SCHEMA),
                                (executor.WITHHELD_ARROW_SCHEMA, schema.WITHHELD_SCHEMA),
                                (executor.METRICS_ARROW_SCHEMA, schema.METRICS_SCHEMA),
                                (executor.COMPARE_ARROW_SCHEMA, schema.COMPARE_SCHEMA)):
        assert to_arrow_schema(spark_schema).remove_metadata().equals(arrow, check_metadata=False), spark_schema
