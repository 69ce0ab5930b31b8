"""Command line: ``kafkagroup assign GROUP.json``, ``kafkagroup demo``.

GROUP.json is the scenario format of the vectors::

    {"topics": {"t0": 3, "t1": [["r0"], ["r1", "r0"]]},
     "members": {"C0": {"topics": ["t0", "t1"], "owned": [["t0", 0]], "generation": 1,
                        "rack": "r0", "instance": "i-0"}}}
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from kafkagroup.api import AssignmentResult, assign
from kafkagroup.scenarios import sample_group, uniform_group
from kafkagroup.engine import assign_arrays, strategies
from kafkagroup.errors import KafkaGroupError
from kafkagroup.structs import TopicPartition

# Optional subcommands living in other packages: name -> (help, add_arguments, run).
EXTRA_COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = {}


def _register_spark_plan() -> None:
    """``spark-plan`` comes from the optional Spark layer; without its extra the command explains how to get it."""
    try:
        from kafkagroup.spark.cli import HELP, add_arguments, run  # no pyspark import until run()
    except ImportError as missing:
        reason = str(missing)

        def explain(args: argparse.Namespace) -> int:
            print(f"kafkagroup spark-plan: {reason}", file=sys.stderr)
            return 2

        EXTRA_COMMANDS["spark-plan"] = ("plan a fleet on Spark (needs: pip install 'kafkagroup[spark]')",
                                        lambda parser: parser.add_argument("rest", nargs=argparse.REMAINDER),
                                        explain)
        return
    EXTRA_COMMANDS["spark-plan"] = (HELP, add_arguments, run)


_register_spark_plan()

from kafkagroup.server.cli import HELP as _SERVE_HELP, add_arguments as _serve_arguments, run as _serve_run  # noqa: E402
EXTRA_COMMANDS["serve"] = (_SERVE_HELP, _serve_arguments, _serve_run)


def _register_simulate() -> None:
    """``simulate`` lives in the simulator package (kafkagroup/sim/cli.py)."""
    from kafkagroup.sim.cli import HELP, add_arguments, run
    EXTRA_COMMANDS["simulate"] = (HELP, add_arguments, run)


_register_simulate()

from kafkagroup.bench.cli import HELP as _BENCH_HELP, add_arguments as _bench_arguments, run as _bench_run  # noqa: E402
EXTRA_COMMANDS["bench"] = (_BENCH_HELP, _bench_arguments, _bench_run)


def make_console() -> Console:
    """A console for tables: the terminal's width, or 160 columns when writing to a pipe or a file
    (rich would otherwise assume 80 and abbreviate the column names)."""
    console = Console()
    if not console.is_terminal:
        console = Console(width=160)
    return console


def compact_partitions(partitions: Sequence[TopicPartition]) -> str:
    """``t0: 0-2,5  t1: 1`` for t0-0 t0-1 t0-2 t0-5 t1-1 (input sorted by topic, partition)."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    chunks = []
    for topic, parts in by_topic.items():
        runs, start, prev = [], parts[0], parts[0]
        for p in parts[1:] + [None]:  # type: ignore[list-item]
            if p is not None and p == prev + 1:
                prev = p
                continue
            runs.append(str(start) if start == prev else f"{start}-{prev}")
            if p is not None:
                start = prev = p
        chunks.append(f"{topic}: {','.join(runs)}")
    return "  ".join(chunks)


def result_json(result: AssignmentResult) -> dict[str, Any]:
    return {
        "assignment": {m: [[tp.topic, tp.partition] for tp in tps] for m, tps in result.assignment.items()},
        "withheld": [[tp.topic, tp.partition] for tp in result.withheld],
        "metrics": result.metrics.as_dict(),
        "engine_us": round(result.engine_us, 1),
        "unknown_topics": result.unknown_topics,
        "dropped_claims": result.dropped_claims,
    }


def metrics_table(title: str, rows: list[tuple[str, AssignmentResult]]) -> Table:
    table = Table(title=title)
    for col in ("strategy", "balance_gap", "max", "min", "moved", "moved_lower_bound", "withheld", "unassigned",
                "engine ms", "total ms"):
        table.add_column(col, justify="left" if col == "strategy" else "right")
    for name, r in rows:
        m = r.metrics
        table.add_row(name, str(m.balance_gap), str(m.max_load), str(m.min_load), str(m.moved),
                      "-" if m.moved_lower_bound < 0 else str(m.moved_lower_bound), str(m.withheld),
                      str(m.unassigned), f"{r.engine_us / 1000:.3f}", f"{r.total_us / 1000:.3f}")
    return table


def assignment_table(name: str, result: AssignmentResult) -> Table:
    table = Table(title=f"{name}: assignment")
    table.add_column("member")
    table.add_column("#", justify="right")
    table.add_column("partitions")
    for member, tps in result.assignment.items():
        table.add_row(member, str(len(tps)), compact_partitions(tps))
    if result.withheld:
        table.add_row("[withheld]", str(len(result.withheld)), compact_partitions(result.withheld))
    return table


def load_scenario(path: str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text() if path != "-" else sys.stdin.read())
    except (OSError, json.JSONDecodeError) as e:
        raise SystemExit(f"kafkagroup: cannot read {path}: {e}") from None
    if not isinstance(data, dict) or "topics" not in data or "members" not in data:
        raise SystemExit(f"kafkagroup: {path}: expected an object with 'topics' and 'members'")
    return data


def cmd_assign(args: argparse.Namespace) -> int:
    scenario = load_scenario(args.group)
    names = [args.strategy] if args.strategy else strategies()
    results = [(n, assign(n, scenario["topics"], scenario["members"], strict=not args.lenient)) for n in names]
    if args.format == "json":
        print(json.dumps({n: result_json(r) for n, r in results}, indent=2))
        return 0
    console = make_console()
    for n, r in results:
        console.print(assignment_table(n, r))
    console.print(metrics_table(f"{args.group}: quality", results))
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    console = make_console()
    topics, members = sample_group()
    console.print(f"[bold]Sample group[/bold]: {len(members)} members, {len(topics)} topics, "
                  "owned partitions from generation 3, one member left, one joined, racks r0/r1")
    rows = [(n, assign(n, topics, members)) for n in strategies()]
    for n, r in rows:
        console.print(assignment_table(n, r))
    console.print(metrics_table("sample group: quality", rows))

    group = uniform_group(topics=args.topics, partitions=args.partitions, members=args.members)
    arrays = group.arrays()
    table = Table(title=f"native engine at scale: {args.topics} topics x {args.partitions} partitions, "
                        f"{args.members} members, uniform, fresh (median of 5)")
    for col in ("strategy", "engine ms", "balance_gap", "max", "min"):
        table.add_column(col, justify="left" if col == "strategy" else "right")
    for n in strategies():
        runs = sorted((assign_arrays(n, **arrays) for _ in range(5)), key=lambda r: r.engine_us)
        r = runs[len(runs) // 2]
        table.add_row(n, f"{r.engine_us / 1000:.2f}", str(r.metrics.balance_gap), str(r.metrics.max_load),
                      str(r.metrics.min_load))
    console.print(table)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kafkagroup", description="Kafka consumer-group rebalance engine")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("assign", help="assign a group described in a JSON scenario file")
    p.add_argument("group", help="scenario JSON file ('-' for standard input)")
    p.add_argument("--strategy", choices=strategies(), help="one strategy (default: every strategy)")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--lenient", action="store_true",
                   help="drop owned claims on unknown topics or partitions (as a group leader does) instead of failing")
    p.set_defaults(run=cmd_assign)

    p = sub.add_parser("demo", help="assign a sample group with every strategy, then time the engine at scale")
    p.add_argument("--topics", type=int, default=100)
    p.add_argument("--partitions", type=int, default=1000, help="partitions per topic")
    p.add_argument("--members", type=int, default=1000)
    p.set_defaults(run=cmd_demo)

    for name, (help_text, add_arguments, run) in EXTRA_COMMANDS.items():
        p = sub.add_parser(name, help=help_text)
        add_arguments(p)
        p.set_defaults(run=run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except KafkaGroupError as e:
        print(f"kafkagroup: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
