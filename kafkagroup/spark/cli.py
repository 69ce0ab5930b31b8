"""``kafkagroup spark-plan``: assign (or compare strategies for) every group of a fleet on Spark.

    kafkagroup spark-plan --groups groups.parquet [--topics topics.parquet] --strategy range --out DIR
    kafkagroup spark-plan --example 1000 --out DIR                      # a generated sample fleet
    kafkagroup spark-plan --example 1000 --compare --remove-members 0.1 --out DIR
    kafkagroup spark-plan --example 100000 --local --out DIR            # no Spark: this process, every core

Writes DIR/assignments, DIR/withheld and DIR/metrics as Parquet (DIR/compare with --compare), shows
Spark's progress while the jobs run, and prints a summary. ``local[*]`` unless ``--master`` is given.
``--local`` runs the same batch code in this process instead (kafkagroup.spark.fleet.assign_fleet_local,
on ``--threads`` threads, every core by default, and says how many it used); it needs pyarrow, not Spark.

Wiring (kafkagroup/cli.py): ``EXTRA_COMMANDS["spark-plan"] = (HELP, add_arguments, run)``. Neither
function imports pyspark at module import time, so ``kafkagroup --help`` stays fast.
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from typing import Any

HELP = "assign or compare strategies for every group of a fleet on Spark (extra kafkagroup[spark])"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--groups", metavar="PATH",
                        help="Parquet: one row per member (group_id, member_id, topics, [owned, generation, rack, "
                             "instance_id]) or one row per group (group_id, members)")
    source.add_argument("--example", type=int, metavar="N", help="generate a seeded sample fleet of N groups")
    parser.add_argument("--topics", metavar="PATH",
                        help="Parquet: topic, partitions[, replica_racks]; with a group_id column, per group")
    parser.add_argument("--strategy", default="range", help="assignor protocol name (default: range)")
    parser.add_argument("--out", required=True, metavar="DIR", help="output directory (Parquet datasets)")
    parser.add_argument("--master", default=None, help="Spark master URL (default: local[*])")
    parser.add_argument("--seed", type=int, default=0, help="seed of --example and of --compare's changes")
    parser.add_argument("--lenient", action="store_true",
                        help="drop owned claims on unknown topics / partitions instead of failing the group")
    parser.add_argument("--on-error", choices=("raise", "record"), default="raise",
                        help="a group with bad data fails the job (raise) or is reported in metrics.error (record)")
    parser.add_argument("--compare", action="store_true",
                        help="compare strategies after a change instead of assigning (see --remove-members ...)")
    parser.add_argument("--strategies", default=None,
                        help="comma-separated strategies for --compare (default: every strategy)")
    parser.add_argument("--remove-members", type=_amount, default=0, metavar="X",
                        help="--compare: members removed per group (count, or fraction such as 0.1)")
    parser.add_argument("--add-members", type=_amount, default=0, metavar="X", help="--compare: members added per group")
    parser.add_argument("--add-partitions", type=_amount, default=0, metavar="X",
                        help="--compare: partitions added per topic (count or fraction)")
    parser.add_argument("--plot", metavar="PNG",
                        help="--compare: also draw the distribution of moves over the groups, per strategy, to PNG")
    parser.add_argument("--local", action="store_true",
                        help="no Spark: assign in this process on every core (pyarrow only; not with --compare)")
    parser.add_argument("--threads", type=int, default=None, metavar="N",
                        help="--local: threads (default: every core this process may use)")
    parser.add_argument("--spark-ui", action="store_true",
                        help="local masters: open Spark's web UI (on 127.0.0.1; off by default)")
    parser.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE", type=_conf,
                        help="a Spark setting, repeatable (e.g. spark.archives=kg-env.tar.gz#environment)")


def _amount(text: str) -> int | float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a count or a fraction such as 0.1, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative number, got {text}")
    return int(value) if value.is_integer() and "." not in text else value


def _conf(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key.strip(), value


def _is_local_path(path: str) -> bool:
    return "://" not in path or path.startswith("file://")


def check_parquet(option: str, path: str, need: list[tuple[str, ...]]) -> None:
    """Before Spark starts (which takes half a minute and then logs a page): a local Parquet path must
    exist and have the columns of one of the `need` alternatives. Remote paths (hdfs://, s3a://) are
    left to Spark."""
    if not _is_local_path(path):
        return
    import pyarrow.dataset as ds

    from kafkagroup.errors import InvalidGroupError

    local = path[len("file://"):] if path.startswith("file://") else path
    if not os.path.exists(local):
        raise InvalidGroupError(f"spark-plan {option} {path}: no such file or directory")
    try:
        names = set(ds.dataset(local, format="parquet").schema.names)
    except Exception as e:       # pyarrow raises ArrowInvalid / OSError subclasses for non-Parquet input
        raise InvalidGroupError(f"spark-plan {option} {path}: not a Parquet file or directory "
                                f"({str(e).splitlines()[0]})") from None
    if not names:
        raise InvalidGroupError(f"spark-plan {option} {path}: no Parquet files found")
    if not any(all(c in names for c in columns) for columns in need):
        wanted = " or ".join("(" + ", ".join(c) + ")" for c in need)
        raise InvalidGroupError(f"spark-plan {option} {path}: expected columns {wanted}; found "
                                f"{', '.join(sorted(names))}")


def check_arguments(args: argparse.Namespace) -> None:
    """Everything that can be checked without Spark, so a mistake costs no Spark start-up."""
    from kafkagroup.engine import strategies
    from kafkagroup.errors import InvalidGroupError

    known = strategies()
    names = [s.strip() for s in args.strategies.split(",")] if args.strategies else []
    for name in ([args.strategy] if not args.compare else names):
        if name not in known:
            raise InvalidGroupError(f"spark-plan: unknown strategy {name!r} (known: {', '.join(known)})")
    if args.example is not None and not 1 <= args.example <= 10_000_000:
        raise InvalidGroupError(f"spark-plan --example: expected 1 to 10,000,000 groups, got {args.example}")
    if args.local and args.compare:
        raise InvalidGroupError("spark-plan --local assigns; --compare runs on Spark only")
    if args.threads is not None and (not args.local or args.threads < 1):
        raise InvalidGroupError("spark-plan --threads: a count >= 1, with --local")
    if args.plot and not args.compare:
        raise InvalidGroupError("spark-plan --plot draws --compare's moves: add --compare")
    if isinstance(args.remove_members, float) and args.remove_members > 1:
        raise InvalidGroupError(f"spark-plan --remove-members: a fraction is at most 1.0, got {args.remove_members}")
    if args.groups is not None:
        check_parquet("--groups", args.groups, [("group_id", "member_id", "topics"), ("group_id", "members")])
    if args.topics is not None:
        check_parquet("--topics", args.topics, [("topic", "partitions")])
    from kafkagroup.output_paths import check_output_dir, check_output_file

    if _is_local_path(args.out):
        check_output_dir(args.out.removeprefix("file://"), f"spark-plan --out {args.out}")
    if args.plot:
        check_output_file(args.plot, f"spark-plan --plot {args.plot}")


def _spark_failure(error: Exception) -> str:
    """One line for a failed Spark job: the kafkagroup error a Python worker raised, if any."""
    text = str(error)
    for marker in ("InvalidGroupError: ", "SchemaError: ", "KafkaGroupError: "):
        if marker in text:
            return text.split(marker, 1)[1].splitlines()[0].strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    # a Java exception: its first line is py4j's "An error occurred while calling ...", then ": <cause>"
    cause = next((line.lstrip(": ") for line in lines if line.startswith(": ")), None)
    return cause or (lines[0] if lines else type(error).__name__)


class SparkProgress:
    """Spark's progress as one bar on stderr (kafkagroup.textout: rich, on a terminal only): the tasks of
    every stage the job has run so far, polled from Spark's status tracker on a daemon thread."""

    def __init__(self, spark: Any, description: str) -> None:
        self._tracker = spark.sparkContext.statusTracker()
        self._description = description
        self._stages: dict[int, tuple[int, int]] = {}     # stage id -> (completed, total) tasks
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._context: Any = None
        self._bar: Any = None

    def __enter__(self) -> "SparkProgress":
        from kafkagroup.textout import progress

        self._context = progress(self._description)
        self._bar = self._context.__enter__()
        if self._bar.shown:
            self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._thread.is_alive():
            self._stop.set()
            self._thread.join()
        self._context.__exit__(*exc)

    def _refresh(self) -> None:
        for stage_id in self._tracker.getActiveStageIds():
            info = self._tracker.getStageInfo(stage_id)
            if info is not None:
                self._stages[stage_id] = (info.numCompletedTasks, info.numTasks)
        done = sum(c for c, _ in self._stages.values())
        total = sum(t for _, t in self._stages.values())
        self._bar.update(completed=done, total=total or None,
                         description=f"{self._description}: {len(self._stages)} stage(s)")

    def _poll(self) -> None:
        while not self._stop.wait(0.2):
            try:
                self._refresh()
            except Exception:   # the tracker may race a finishing job; the next poll catches up
                pass


def is_local_master(master: str | None) -> bool:
    return master is None or master.startswith("local")


def set_executor_python(master: str | None) -> None:
    """Local executors are children of this process: unless PYSPARK_PYTHON says otherwise, run them on
    this interpreter, which has kafkagroup. A cluster's executors need their own interpreter
    (PYSPARK_PYTHON or spark.pyspark.python, README "Running on a real cluster"): this one's path means
    nothing on their machines, so it is not set for them."""
    if is_local_master(master):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def session_settings(master: str | None, conf: list[tuple[str, str]] = (), ui: bool = False  # type: ignore[assignment]
                     ) -> dict[str, str]:
    """The Spark settings spark-plan starts a session with; ``conf`` (the user's ``--conf``) wins over each.

    A local master runs the driver and executors in this machine only, so the driver binds to the loopback
    address (Spark would otherwise bind to the machine's external address, reachable from the network) and
    Spark's web UI is off unless ``ui`` (``--spark-ui``) asks for it. A cluster master keeps Spark's own
    defaults: the executors must reach the driver."""
    settings = {"spark.app.name": "kafkagroup spark-plan", "spark.master": master or "local[*]",
                "spark.ui.showConsoleProgress": "false"}
    if is_local_master(master):
        settings.update({"spark.driver.bindAddress": "127.0.0.1", "spark.driver.host": "127.0.0.1",
                         "spark.ui.enabled": "true" if ui else "false",
                         "spark.sql.shuffle.partitions": str(max(2, (os.cpu_count() or 2) * 2))})
    settings.update(dict(conf))
    return settings


def _session(master: str | None, conf: list[tuple[str, str]] = (), ui: bool = False  # type: ignore[assignment]
             ) -> tuple[Any, bool]:
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active, False
    set_executor_python(master)
    if is_local_master(master):
        # Spark's web UI binds to SPARK_LOCAL_IP (all interfaces when unset), not to the driver's address.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder
    for key, value in session_settings(master, conf, ui).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark, True


def run(args: argparse.Namespace) -> int:
    from kafkagroup.extras import require
    from kafkagroup.textout import console as text_console

    if args.local:
        require("spark-plan --local", ("pyarrow",), "spark")
    else:
        require("spark-plan", ("pyspark", "pandas", "pyarrow"), "spark")
    if args.plot:
        require("spark-plan --plot", ("matplotlib",), "plot")
    check_arguments(args)
    out, err = text_console(), text_console(stderr=True)     # results on stdout, diagnostics on stderr
    if args.local:
        return _run_local(args, out, err)
    from py4j.protocol import Py4JError
    from pyspark.errors import PySparkException

    try:
        spark, owned_session = _session(args.master, args.conf, args.spark_ui)
    except (Py4JError, PySparkException) as e:      # a bad master URL, an archive that cannot be unpacked, ...
        # The cause alone may not say which master failed (a JVM that exits gives JAVA_GATEWAY_EXITED).
        print(f"kafkagroup: spark-plan: Spark did not start (master {args.master}): {_spark_failure(e)}",
              file=sys.stderr)
        return 2
    try:
        return _run(args, spark, out, err)
    except (Py4JError, PySparkException) as e:
        print(f"kafkagroup: spark-plan: {_spark_failure(e)}", file=sys.stderr)
        return 2
    finally:
        if owned_session:
            spark.stop()


def _run(args: argparse.Namespace, spark: Any, console: Any, err: Any) -> int:
    from kafkagroup.spark import Change, assign_groups, compare_strategies

    if args.example is not None:
        from kafkagroup.spark.fleet import generate_fleet

        fleet = generate_fleet(args.example, seed=args.seed)
        groups = spark.createDataFrame(fleet.groups)
        topics: Any = spark.createDataFrame(fleet.topics)
        err.print(f"sample fleet: {args.example} groups, {fleet.num_members} members, "
                  f"{fleet.num_partitions} partitions (seed {args.seed})")
    else:
        groups = spark.read.parquet(args.groups)
        topics = spark.read.parquet(args.topics) if args.topics else None
    out = args.out.rstrip("/")
    started = time.perf_counter()
    if args.compare:
        names = [s.strip() for s in args.strategies.split(",")] if args.strategies else None
        change = Change(remove_members=args.remove_members, add_members=args.add_members,
                        add_partitions=args.add_partitions, seed=args.seed)
        result = compare_strategies(groups, topics, strategies=names, change=change, strict=not args.lenient,
                                    on_error=args.on_error)
        with SparkProgress(spark, "comparing strategies"):
            result.write.mode("overwrite").parquet(f"{out}/compare")
        summary = spark.read.parquet(f"{out}/compare")
        _print_compare(console, summary, change.describe(), time.perf_counter() - started)
        if args.plot:
            _plot_compare(summary, args.plot, change.describe(), err)
        return 0
    plan = assign_groups(groups, topics, strategy=args.strategy, strict=not args.lenient, on_error=args.on_error,
                         persist=True)
    with SparkProgress(spark, "assigning"):
        plan.assignments.write.mode("overwrite").parquet(f"{out}/assignments")
        plan.withheld.write.mode("overwrite").parquet(f"{out}/withheld")
        plan.metrics.write.mode("overwrite").parquet(f"{out}/metrics")
    plan.unpersist()
    _print_assign(console, spark.read.parquet(f"{out}/metrics"), args.strategy,
                  time.perf_counter() - started, out)
    return 0


def _run_local(args: argparse.Namespace, console: Any, err: Any) -> int:
    """The fleet loop in this process: same outputs (Parquet) as the Spark run, no JVM."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from kafkagroup.batch import available_cores
    from kafkagroup.spark.executor import nest_member_rows
    from kafkagroup.spark.fleet import assign_fleet_local, generate_fleet
    from kafkagroup.textout import progress

    if args.example is not None:
        fleet = generate_fleet(args.example, seed=args.seed)
        groups, topics = fleet.groups, fleet.topics
        err.print(f"sample fleet: {args.example} groups, {fleet.num_members} members, "
                  f"{fleet.num_partitions} partitions (seed {args.seed})", soft_wrap=True)
    else:
        groups = pq.read_table(args.groups)
        if "members" not in groups.column_names:   # member rows: sort by group, then nest
            groups = groups.sort_by("group_id")
            groups = pa.Table.from_batches([nest_member_rows(groups.combine_chunks().to_batches()[0])])
        topics = pq.read_table(args.topics) if args.topics else None
    threads = args.threads or available_cores()
    err.print(f"local loop: {groups.num_rows:,} groups on {threads} thread(s) "
                  f"({available_cores()} core(s) available to this process)", soft_wrap=True)
    started = time.perf_counter()
    with progress(f"assigning {groups.num_rows:,} groups"):   # one native call: a spinner, no steps
        assignments, metrics = assign_fleet_local(groups, topics, args.strategy, strict=not args.lenient,
                                                  on_error=args.on_error, threads=threads)
    seconds = time.perf_counter() - started
    out = args.out.removeprefix("file://").rstrip("/")
    for name, table in (("assignments", assignments), ("metrics", metrics)):
        os.makedirs(f"{out}/{name}", exist_ok=True)
        pq.write_table(table, f"{out}/{name}/part-0.parquet")
    failed = metrics.num_rows - pc.sum(pc.is_null(metrics.column("error")).cast("int64")).as_py() if metrics.num_rows else 0
    console.print(f"{groups.num_rows:,} groups, {assignments.num_rows:,} partitions assigned, {failed} failed, "
                  f"in {seconds:.2f} s ({groups.num_rows / max(seconds, 1e-9):,.0f} groups/s) on {threads} thread(s)", soft_wrap=True)
    console.print(f"written: {out}/assignments, {out}/metrics", soft_wrap=True)
    return 0


def _print_assign(console: Any, metrics: Any, strategy: str, seconds: float, out: str) -> None:
    from pyspark.sql import functions as F

    row = metrics.agg(F.count("*").alias("groups"), F.sum("partitions").alias("partitions"),
                      F.sum("assigned").alias("assigned"), F.sum("unassigned").alias("unassigned"),
                      F.sum("withheld").alias("withheld"), F.sum("moved").alias("moved"),
                      F.sum(F.col("error").isNotNull().cast("int")).alias("failed"),
                      F.sum("engine_us").alias("engine_us")).first()
    from kafkagroup.textout import Table

    table = Table(f"spark-plan: {strategy}", [("", "left"), ("", "right")])
    groups = row["groups"] or 0
    for name, value in (("groups", f"{groups:,}"), ("partitions", f"{row['partitions'] or 0:,}"),
                        ("assigned", f"{row['assigned'] or 0:,}"), ("unassigned", f"{row['unassigned'] or 0:,}"),
                        ("withheld", f"{row['withheld'] or 0:,}"), ("moved", f"{row['moved'] or 0:,}"),
                        ("failed groups", f"{row['failed'] or 0:,}"),
                        ("engine time", f"{(row['engine_us'] or 0) / 1e6:.3f} s"),
                        ("wall time", f"{seconds:.2f} s ({groups / max(seconds, 1e-9):,.0f} groups/s)")):
        table.add_row(name, value)
    console.print(table)
    console.print(f"written: {out}/assignments, {out}/withheld, {out}/metrics")
    console.print("moved: partitions taken from the member whose owned claim counts (highest generation, subscribed "
                  "to the topic), withheld ones included; partitions nobody in the group claimed are not counted.")


COMPARE_NOTE = ("moved: partitions taken from a member that stays in the group, withheld ones included; the "
                "partitions of removed members must move under every strategy and are not counted. lower bound: "
                "the fewest moves an optimally balanced assignment needs, summed over the groups where the engine "
                "knows it (exact for identical subscriptions).")


def _print_compare(console: Any, summary: Any, change: str, seconds: float) -> None:
    from pyspark.sql import functions as F

    rows = summary.groupBy("strategy").agg(
        F.count("*").alias("groups"), F.sum("moved").alias("moved"), F.sum("moved_lower_bound").alias("lower"),
        F.count("moved_lower_bound").alias("bounded"),
        F.sum(F.when(F.col("balance_gap") > 1, 1).otherwise(0)).alias("unbalanced"),
        F.sum("withheld").alias("withheld"), F.sum(F.col("error").isNotNull().cast("int")).alias("failed"),
        F.sum("engine_us").alias("engine_us")).orderBy("strategy").collect()
    from kafkagroup.textout import Table

    table = Table(f"spark-plan --compare: {change} ({seconds:.1f} s)",
                  [(name, "left" if name == "strategy" else "right") for name in (
                      "strategy", "groups", "moved", "lower bound (groups)", "gap > 1", "withheld", "failed",
                      "engine s")])
    for r in rows:
        bounded = r["bounded"] or 0
        lower = "unknown" if not bounded else f"{r['lower']:,} ({bounded:,})"
        table.add_row(r["strategy"], f"{r['groups']:,}", f"{r['moved'] or 0:,}", lower, f"{r['unbalanced'] or 0:,}",
                      f"{r['withheld'] or 0:,}", f"{r['failed'] or 0:,}", f"{(r['engine_us'] or 0) / 1e6:.3f}")
    console.print(table)
    console.print(COMPARE_NOTE)


def _plot_compare(summary: Any, path: str, change: str, console: Any) -> None:
    from kafkagroup.errors import InvalidGroupError
    from kafkagroup.plots import plot_compare

    frame = summary.select("strategy", "moved", "moved_lower_bound", "partitions_before", "error").toPandas()
    try:
        plot_compare(frame, path, title=f"moves per group after: {change} (removed members' partitions not counted)")
    except OSError as e:
        raise InvalidGroupError(f"spark-plan --plot {path}: cannot write: {e.strerror or e}") from None
    console.print(f"plot written to {path}")
