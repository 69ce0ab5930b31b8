"""``kafkagroup spark-plan``: mistakes found before Spark starts, one line each; null lower bounds;
--compare --plot. Spark runs on one module-scoped local[2] session that the command reuses."""
from __future__ import annotations

import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import kafkagroup

from kafkagroup.spark.fleet import generate_fleet, member_rows
from cli_support import run_cli

pytestmark = pytest.mark.spark


def spark_running() -> bool:
    from pyspark import SparkContext

    return SparkContext._active_spark_context is not None


def test_mistakes_are_found_before_spark_starts(tmp_path, capsys):
    assert not spark_running()
    out = str(tmp_path / "out")
    members = tmp_path / "members.parquet"
    pq.write_table(pa.table({"group_id": ["g"], "member": ["m"]}), members)
    as_json = tmp_path / "groups.json"
    as_json.write_text("{}")
    empty = tmp_path / "empty"
    empty.mkdir()
    cases = [
        (["--groups", "nosuch.parquet"], "spark-plan --groups nosuch.parquet: no such file or directory"),
        (["--groups", str(members)],
         f"spark-plan --groups {members}: expected columns (group_id, member_id, topics) or (group_id, members); "
         f"found group_id, member"),
        (["--groups", str(empty)], f"spark-plan --groups {empty}: no Parquet files found"),
        (["--example", "10", "--topics", str(members)],
         f"spark-plan --topics {members}: expected columns (topic, partitions); found group_id, member"),
        (["--example", "0"], "spark-plan --example: expected 1 to 10,000,000 groups, got 0"),
        (["--example", "5", "--strategy", "nosuch"],
         "spark-plan: unknown strategy 'nosuch' (known: range, roundrobin, sticky, cooperative-sticky, server-uniform, server-range)"),
        (["--example", "5", "--compare", "--strategies", "range,stiky"],
         "spark-plan: unknown strategy 'stiky' (known: range, roundrobin, sticky, cooperative-sticky, server-uniform, server-range)"),
        (["--example", "5", "--plot", "x.png"], "spark-plan --plot draws --compare's moves: add --compare"),
        (["--example", "5", "--compare", "--remove-members", "1.5"],
         "spark-plan --remove-members: a fraction is at most 1.0, got 1.5"),
    ]
    for extra, expected in cases:
        run = run_cli(capsys, "spark-plan", *extra, "--out", out)
        assert (run.code, run.err_lines) == (2, [f"kafkagroup: {expected}"]), extra
    run = run_cli(capsys, "spark-plan", "--groups", str(as_json), "--out", out)
    assert run.code == 2 and len(run.err_lines) == 1
    assert run.err_lines[0].startswith(f"kafkagroup: spark-plan --groups {as_json}: not a Parquet file or directory")
    run = run_cli(capsys, "spark-plan", "--example", "5", "--out", str(as_json))
    assert run.err_lines == [f"kafkagroup: spark-plan --out {as_json}: is a file; give a directory"]
    assert not spark_running()


def test_spark_that_does_not_start_is_one_line(tmp_path, capsys):
    run = run_cli(capsys, "spark-plan", "--example", "3", "--master", "nosuch://x", "--out", str(tmp_path))
    failures = [line for line in run.err_lines if line.startswith("kafkagroup:")]
    assert run.code == 2 and len(failures) == 1
    assert failures[0].startswith("kafkagroup: spark-plan: Spark did not start (master nosuch://x): ")
    assert not spark_running()


def test_pyspark_python_is_set_for_local_masters_only(monkeypatch):
    from kafkagroup.spark.cli import set_executor_python

    for master in ("spark://127.0.0.1:7077", "yarn", "k8s://https://host:443"):
        monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
        set_executor_python(master)
        assert "PYSPARK_PYTHON" not in os.environ
    for master in (None, "local[*]", "local[2]"):
        monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
        set_executor_python(master)
        assert os.environ["PYSPARK_PYTHON"] == sys.executable
    monkeypatch.setenv("PYSPARK_PYTHON", "./environment/bin/python")      # the user's choice wins
    set_executor_python("local[2]")
    assert os.environ["PYSPARK_PYTHON"] == "./environment/bin/python"


def test_unknown_lower_bounds_are_null_not_minus_one():
    """Where the engine has no bound (-1), the Arrow columns Spark writes hold null, so sums stay honest."""
    from kafkagroup.spark.arrow_builder import TopicMeta
    from kafkagroup.spark.change import Change
    from kafkagroup.spark.executor import AssignOptions, CompareOptions, compare_batch, plan_batch

    fleet = generate_fleet(40, seed=3, members=(3, 30), partitions=(10, 300), uniform_fraction=0.0)
    batch = fleet.groups.combine_chunks().to_batches()[0]
    meta = TopicMeta.from_arrow(fleet.topics)
    _, metrics = plan_batch(batch, meta, AssignOptions(strategy="range"))
    bounds = metrics.column("moved_lower_bound").to_pylist()
    assert None in bounds and all(b is None or b >= 0 for b in bounds)
    rows = compare_batch(batch, meta, CompareOptions(strategies=("range", "cooperative-sticky"),
                                                     change=Change(remove_members=0.3)))
    bounds = rows.column("moved_lower_bound").to_pylist()
    assert None in bounds and all(b is None or b >= 0 for b in bounds)
    assert all(e is None for e in rows.column("error").to_pylist())


def test_compare_with_plot(spark, tmp_path, capsys):
    png = tmp_path / "moves.png"
    run = run_cli(capsys, "spark-plan", "--example", "24", "--compare", "--remove-members", "0.2",
                  "--out", str(tmp_path / "whatif"), "--plot", str(png))
    assert run.code == 0
    # results on stdout, not cut to any width when piped (issue 25: they went to stderr, cut at 80 columns)
    assert "partitions of removed members must move under every strategy and are not counted" in run.out
    assert f"plot written to {png}" in run.err and "sample fleet: 24 groups" in run.err
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    import matplotlib.image as mpimg

    image = mpimg.imread(str(png))
    assert len(np.unique((image[..., :3] * 255).astype(np.uint8).reshape(-1, 3), axis=0)) > 20
    compare = spark.read.parquet(str(tmp_path / "whatif" / "compare"))
    rows = {cells[0]: cells for cells in (line.replace("│", " ").split() for line in run.out.splitlines())
            if cells and cells[0] in kafkagroup.strategies()}     # the server assignors included
    for r in compare.groupBy("strategy").sum("moved", "engine_us").collect():
        cells = rows[r["strategy"]]
        assert f"{r['sum(moved)']:,}" in cells and f"{r['sum(engine_us)'] / 1e6:.3f}" in cells, cells
    assert compare.where("moved_lower_bound < 0").count() == 0
    assert compare.where("moved_lower_bound IS NULL").count() > 0        # range on different subscriptions


def test_a_bad_group_is_one_line(spark, tmp_path, capsys):
    fleet = generate_fleet(3, seed=1, members=(2, 4), partitions=(4, 8), topics=(1, 1))
    rows = member_rows(fleet.groups).to_pylist()
    topic = rows[0]["topics"][0]
    rows[0]["owned"] = [{"topic": topic, "partition": 10_000}]
    groups = tmp_path / "groups.parquet"
    pq.write_table(pa.Table.from_pylist(rows, schema=member_rows(fleet.groups).schema), groups)
    topics = tmp_path / "topics.parquet"
    pq.write_table(fleet.topics, topics)
    run = run_cli(capsys, "spark-plan", "--groups", str(groups), "--topics", str(topics), "--out", str(tmp_path / "o"))
    failures = [line for line in run.err_lines if line.startswith("kafkagroup:")]
    assert run.code == 2 and len(failures) == 1
    assert f"group '{rows[0]['group_id']}'" in failures[0] and f"{topic}-10000" in failures[0]
