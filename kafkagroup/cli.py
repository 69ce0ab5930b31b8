"""Command line: ``kafkagroup assign GROUP.json``, ``kafkagroup demo``, ``kafkagroup spark-plan``, ...

The group file format is :mod:`kafkagroup.groupfile` (``kafkagroup assign --example-json`` prints an
example). A user's mistake is one line on stderr, ``kafkagroup: ...`` naming the member, topic or key,
and exit code 2; what Kafka would accept but is probably a mistake is a ``kafkagroup: warning: ...``
line. Names from input files are printed literally (never read as rich markup).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from typing import TYPE_CHECKING

from kafkagroup import __version__
from kafkagroup.errors import KafkaGroupError
from kafkagroup.extras import require
from kafkagroup.textout import Table, console as text_console

if TYPE_CHECKING:
    from kafkagroup.api import AssignmentResult
    from kafkagroup.groupfile import GroupFile
    from kafkagroup.structs import TopicPartition

# numpy and the native engine are imported by the commands that assign (assign, demo), not here: `kafkagroup
# serve` and `kafkagroup ctl` start without them.

# Optional subcommands living in other packages: name -> (help, add_arguments, run).
EXTRA_COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = {}

# Above this many members `assign` prints a load summary instead of one row per member (--all-members).
SUMMARY_MEMBERS = 200


class UsageError(KafkaGroupError):
    """A command line that cannot run as given (printed as one line, exit code 2)."""


# The commands living in other packages, by module; each module has HELP, add_arguments(parser) and
# run(args), and imports nothing heavy until run(). Only the chosen command's module is imported
# (`kafkagroup serve` does not load the simulator's or Spark's command modules).
COMMAND_MODULES = {"spark-plan": "kafkagroup.spark.cli", "serve": "kafkagroup.server.cli",
                   "simulate": "kafkagroup.sim.cli", "bench": "kafkagroup.bench.cli", "ctl": "kafkagroup.testing.cli"}


def _command(name: str) -> tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]:
    if name not in EXTRA_COMMANDS:
        import importlib

        module = importlib.import_module(COMMAND_MODULES[name])
        EXTRA_COMMANDS[name] = (module.HELP, module.add_arguments, module.run)
    return EXTRA_COMMANDS[name]


def make_console() -> Any:
    """The console results are printed on (stdout): tables never cut to a width when piped, strings never
    read as markup (kafkagroup.textout; rich when installed, plain text otherwise)."""
    return text_console()


def warn(message: str) -> None:
    print(f"kafkagroup: warning: {message}", file=sys.stderr)


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


def metrics_json(result: AssignmentResult) -> dict[str, int | None]:
    """The metrics as JSON: moved_lower_bound is null where the engine cannot bound the moves (-1)."""
    out: dict[str, int | None] = dict(result.metrics.as_dict())
    if result.metrics.moved_lower_bound < 0:
        out["moved_lower_bound"] = None
    return out


def load_histogram(result: AssignmentResult) -> dict[int, int]:
    """partitions held -> number of members holding that many."""
    import numpy as np

    loads = np.fromiter((len(tps) for tps in result.assignment.values()), dtype=np.int64,
                        count=len(result.assignment))
    values, counts = np.unique(loads, return_counts=True)
    return dict(zip(values.tolist(), counts.tolist()))


def result_json(result: AssignmentResult, summary: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if summary:
        out["members"] = len(result.assignment)
        out["load_histogram"] = {str(k): v for k, v in load_histogram(result).items()}
    else:
        out["assignment"] = {m: [[tp.topic, tp.partition] for tp in tps] for m, tps in result.assignment.items()}
    out.update({
        "withheld": [[tp.topic, tp.partition] for tp in result.withheld],
        "metrics": metrics_json(result),
        "engine_us": round(result.engine_us, 1),
        "unknown_topics": result.unknown_topics,
        "dropped_claims": result.dropped_claims,
    })
    return out


QUALITY_LEGEND = """\
balance_gap        0 = as balanced as the subscriptions allow. Members with the same subscriptions: max - min - 1
                   (at least 0). Different subscriptions: the number of partitions that could still move, directly
                   or through a chain of members sharing topics, to an eligible member holding at least 2 fewer;
                   so it can exceed max - min.
max, min           most and fewest partitions held by one member.
moved              partitions taken from their previous owner (the member of this file with the highest-generation
                   claim on it, subscribed to its topic; a tie voids the claim), withheld ones included. A partition
                   nobody here owned (a new one, or one of a member no longer in the group) is not counted.
moved_lower_bound  the fewest moves any optimally balanced assignment needs (exact for identical subscriptions);
                   unknown when subscriptions differ and the result is unbalanced or withholds partitions.
withheld           cooperative-sticky: partitions revoked this round, assigned to their new owner next round.
unassigned         partitions of subscribed topics left without an owner (0 whenever a topic has a subscriber)."""


def metrics_table(title: str, rows: list[tuple[str, AssignmentResult]]) -> Table:
    table = Table(title, [(col, "left" if col == "strategy" else "right") for col in (
        "strategy", "balance_gap", "max", "min", "moved", "moved_lower_bound", "withheld", "unassigned",
        "engine ms", "total ms")])
    for name, r in rows:
        m = r.metrics
        table.add_row(name, str(m.balance_gap), str(m.max_load), str(m.min_load), str(m.moved),
                      "unknown" if m.moved_lower_bound < 0 else str(m.moved_lower_bound), str(m.withheld),
                      str(m.unassigned), f"{r.engine_us / 1000:.3f}", f"{r.total_us / 1000:.3f}")
    return table


def assignment_table(name: str, result: AssignmentResult) -> Table:
    table = Table(f"{name}: assignment", [("member", "left"), ("#", "right"), ("partitions", "left")])
    for member, tps in result.assignment.items():
        table.add_row(member, str(len(tps)), compact_partitions(tps))
    if result.withheld:
        table.add_row("[withheld]", str(len(result.withheld)), compact_partitions(result.withheld))
    return table


def load_summary_table(title: str, rows: list[tuple[str, AssignmentResult]]) -> Table:
    """One row per strategy: how many members hold how many partitions."""
    import numpy as np

    table = Table(title, [(col, "left" if col in ("strategy", "members by load") else "right") for col in (
        "strategy", "members", "assigned", "withheld", "min", "median", "max", "members by load")])
    for name, r in rows:
        hist = load_histogram(r)
        loads = np.repeat(np.array(list(hist), dtype=np.int64), list(hist.values()))
        shown = sorted(hist.items())
        text = "  ".join(f"{load}: {count:,}" for load, count in shown[:8])
        if len(shown) > 8:
            text += f"  ... ({len(shown)} distinct loads)"
        table.add_row(name, f"{len(r.assignment):,}", f"{r.metrics.assigned:,}", f"{r.metrics.withheld:,}",
                      str(r.metrics.min_load), f"{float(np.median(loads)) if len(loads) else 0:g}",
                      str(r.metrics.max_load), text)
    return table


def print_results(console: Any, label: str, group: GroupFile, rows: list[tuple[str, AssignmentResult]],
                  summary: bool) -> None:
    if summary:
        console.print(load_summary_table(f"{label}: partitions per member", rows))
    else:
        for name, r in rows:
            console.print(assignment_table(name, r))
    console.print(metrics_table(f"{label}: quality", rows))
    console.print(QUALITY_LEGEND)
    subscribed = {t for spec in group.members.values() for t in spec["topics"] if t in group.topics}
    total = sum(group.topics[t] if isinstance(group.topics[t], int) else len(group.topics[t]) for t in subscribed)
    claimed = sum(1 for tp in group.previous_owner if tp[0] in subscribed)
    console.print(f"moved counts the {claimed:,} of {total:,} subscribed partitions that had a previous owner "
                  f"here; the other {total - claimed:,} are assigned without counting as moved.")


def check_plot_output(command: str, path: str) -> None:
    """``--plot PATH``: matplotlib installed and PATH writable, before any work."""
    from kafkagroup.output_paths import check_output_file

    require(f"{command} --plot", ("matplotlib",), "plot")
    check_output_file(path, f"{command} --plot {path}")


def write_plot(path: str, group: GroupFile, rows: list[tuple[str, AssignmentResult]], title: str) -> None:
    from kafkagroup.plots import plot_assignment   # matplotlib loads only for --plot

    try:
        plot_assignment(group, rows, path, title=title)
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from None
    print(f"kafkagroup: plot written to {path}", file=sys.stderr)


def run_strategies(group: GroupFile, names: Sequence[str], strict: bool) -> list[tuple[str, AssignmentResult]]:
    from kafkagroup.api import assign

    return [(n, assign(n, group.topics, group.members, strict=strict)) for n in names]


def cmd_assign(args: argparse.Namespace) -> int:
    from kafkagroup.groupfile import EXAMPLE_JSON, load_group_file

    if args.example_json:
        sys.stdout.write(EXAMPLE_JSON)
        return 0
    if args.group is None:
        raise UsageError("assign: give a group file (or '-' for standard input); "
                         "kafkagroup assign --example-json prints one")
    if args.summary and args.all_members:
        raise UsageError("assign: --summary and --all-members exclude each other")
    if args.plot:
        check_plot_output("assign", args.plot)
    try:
        group = load_group_file(args.group)
    except KafkaGroupError as e:
        raise UsageError(f"{args.group}: {e}") from None
    for message in group.warnings:
        warn(f"{args.group}: {message}")
    from kafkagroup.api import assign
    from kafkagroup.engine import strategies

    names = [args.strategy] if args.strategy else strategies()
    results = []
    for name in names:
        try:
            results.append((name, assign(name, group.topics, group.members, strict=not args.lenient)))
        except KafkaGroupError as e:  # what only the model sees (a claim past a topic's end, shared instance ids)
            if args.strategy is None and name.startswith("server-"):
                # a classic group's claims may be shared (the tie voids them); a server assignor's input cannot
                warn(f"{args.group}: {name} skipped: {e}")
                continue
            raise UsageError(f"{args.group}: {e}") from None
    summary = args.summary or (not args.all_members and len(group.members) > SUMMARY_MEMBERS)
    if args.plot:
        write_plot(args.plot, group, results, title=Path(args.group).name)
    if args.format == "json":
        print(json.dumps({n: result_json(r, summary=summary) for n, r in results}, indent=2))
        return 0
    console = make_console()
    if summary and not args.summary:
        console.print(f"{len(group.members):,} members: a load summary per strategy "
                      f"(--all-members lists every member)")
    print_results(console, args.group, group, results, summary)
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from kafkagroup.engine import assign_arrays, strategies
    from kafkagroup.groupfile import parse_group
    from kafkagroup.scenarios import sample_group, uniform_group

    for name in ("topics", "partitions", "members"):
        value = getattr(args, name)
        if value < 1:
            raise UsageError(f"demo: --{name} must be at least 1, got {value}")
    if args.topics * args.partitions > 10_000_000:
        raise UsageError(f"demo: {args.topics:,} x {args.partitions:,} partitions is more than the 10,000,000 "
                         f"the demo runs")
    console = make_console()
    topics, members = sample_group()
    group = parse_group({"topics": topics, "members": members})
    console.print(f"Sample group: {len(members)} members, {len(topics)} topics, "
                  "owned partitions from generation 3, one member left, one joined, racks r0/r1")
    rows = run_strategies(group, strategies(), strict=True)
    print_results(console, "sample group", group, rows, summary=False)

    scale = uniform_group(topics=args.topics, partitions=args.partitions, members=args.members)
    arrays = scale.arrays()
    table = Table(f"native engine at scale: {args.topics} topics x {args.partitions} partitions, "
                  f"{args.members} members, uniform, fresh (median of 5)",
                  [(col, "left" if col == "strategy" else "right")
                   for col in ("strategy", "engine ms", "balance_gap", "max", "min")])
    for n in strategies():
        runs = sorted((assign_arrays(n, **arrays) for _ in range(5)), key=lambda r: r.engine_us)
        r = runs[len(runs) // 2]
        table.add_row(n, f"{r.engine_us / 1000:.2f}", str(r.metrics.balance_gap), str(r.metrics.max_load),
                      str(r.metrics.min_load))
    console.print(table)
    return 0


def _assign_arguments(p: argparse.ArgumentParser) -> None:
    from kafkagroup.engine import strategies

    p.add_argument("group", nargs="?", help="group JSON file ('-' for standard input)")
    p.add_argument("--strategy", choices=strategies(), help="one strategy (default: every strategy)")
    p.add_argument("--format", choices=("table", "json"), default="table",
                   help="table: tables and a legend (default); json: one object per strategy")
    p.add_argument("--summary", action="store_true",
                   help=f"a load summary per strategy instead of one row per member (the default above "
                        f"{SUMMARY_MEMBERS} members)")
    p.add_argument("--all-members", action="store_true",
                   help=f"list every member even above {SUMMARY_MEMBERS} members")
    p.add_argument("--plot", metavar="PNG", help="also draw each member's load before/after and the moves to PNG "
                                                 "(extra kafkagroup[plot])")
    p.add_argument("--lenient", action="store_true",
                   help="drop owned claims on unknown topics or partitions (as a group leader does) instead of failing")
    p.add_argument("--example-json", action="store_true", help="print a complete, commented example group file")
    p.description = ("Assign a consumer group read from a JSON group file (format: kafkagroup assign --example-json) "
                     "and report each strategy's quality.")


def _demo_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--topics", type=int, default=100, help="topics of the timed group (default 100)")
    p.add_argument("--partitions", type=int, default=1000, help="partitions per topic (default 1000)")
    p.add_argument("--members", type=int, default=1000, help="member count of the timed group (default 1000)")


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; given ``argv``, only the chosen command's options are set up (a command's options may
    import what it needs: ``kafkagroup serve`` never loads the engine)."""
    parser = argparse.ArgumentParser(prog="kafkagroup", description="Kafka consumer-group rebalance engine")
    parser.add_argument("--version", action="version", version=f"kafkagroup {__version__}",
                        help="print the version and exit")
    sub = parser.add_subparsers(dest="command", required=True)
    builtin = {
        "assign": ("assign a group described in a JSON group file, with every strategy", _assign_arguments,
                   cmd_assign),
        "demo": ("assign a sample group with every strategy, then time the engine at scale", _demo_arguments,
                 cmd_demo),
    }
    chosen = None if argv is None else next((a for a in argv if not a.startswith("-")), None)
    for name in [*builtin, *COMMAND_MODULES]:
        if chosen is not None and chosen != name:
            sub.add_parser(name)          # listed among the choices; its module is not loaded
            continue
        help_text, add_arguments, run = builtin[name] if name in builtin else _command(name)
        p = sub.add_parser(name, help=help_text)
        add_arguments(p)
        p.set_defaults(run=run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 ok, 2 a user's mistake, 130 interrupted)."""
    try:
        args = build_parser(sys.argv[1:] if argv is None else argv).parse_args(argv)
    except SystemExit as done:           # --help, --version, or argparse's own usage error (exit 2)
        return done.code if isinstance(done.code, int) else 2
    try:
        return int(args.run(args))
    except KafkaGroupError as e:
        print(f"kafkagroup: {_one_line(str(e))}", file=sys.stderr)
        return 2
    except SystemExit as e:              # a subcommand's own one-line exit
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            return 2
        return e.code or 0
    except KeyboardInterrupt:
        print("kafkagroup: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:              # e.g. piped into head: nothing left to say
        return 0


def _one_line(message: str) -> str:
    return " ".join(message.split("\n")).strip()


if __name__ == "__main__":
    sys.exit(main())
