"""``kafkagroup bench``: the assignor grid against every peer present, one checker, a report.

Wiring (kafkagroup/cli.py): ``EXTRA_COMMANDS["bench"] = (HELP, add_arguments, run)``.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

HELP = "benchmark the assignors against kafka-python and Kafka's own Java assignors (report.md/json/png)"

_DESCRIPTION = """\
Runs range, roundrobin, sticky and cooperative-sticky on a grid of seeded groups (fresh and after churn,
uniform and random 50% subscriptions, with and without racks) through every peer present: kafkagroup's
engine, kafka-python (always; each call capped), and Apache Kafka's own Java assignors from the
kafka-clients jar (a small driver compiled once with javac and run as one JVM). Every peer's output on
the same input goes through one checker (valid, max-min spread, Kafka's isBalanced, moves).
Writes OUT/report.md, OUT/report.json and OUT/report.png.

--quick: the 10k-partition rows, about a minute. Full grid (up to 1M partitions x 2,000 members): about
7 minutes on 2 cores with --cap 10, up to about 20 minutes with the default 60 s cap (most of it
kafka-python's sticky assignors and Java's sticky assignors on the big random and rack rows reaching the
cap). Each peer call is capped (Java: the JVM is restarted past 2 x cap + 5 s) and shown as "> cap"."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = _DESCRIPTION
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--out", type=Path, default=Path("bench-report"),
                        help="directory for report.md, report.json and report.png (default: ./bench-report)")
    parser.add_argument("--quick", action="store_true", help="only the 10k-partition rows (about a minute)")
    parser.add_argument("--strategies", default="range,roundrobin,sticky,cooperative-sticky",
                        help="comma-separated strategies (default: all four)")
    parser.add_argument("--cap", type=float, default=None, metavar="SECONDS",
                        help="time limit per peer call (kafka-python, Java), reported as '> cap' (default 3 with --quick, else 60)")
    parser.add_argument("--java-jars", metavar="DIR", default=None,
                        help="folder with kafka-clients*.jar and its dependencies (default: $KAFKAGROUP_KAFKA_JARS, "
                             "else <repo>/build/kafka-jars; run make kafka-jars)")
    parser.add_argument("--no-java", action="store_true", help="leave the Java peer out")


def run(args: argparse.Namespace) -> int:
    from kafkagroup.bench.grid import scenarios
    from kafkagroup.bench.java_peer import JavaAssignors, JavaUnavailable
    from kafkagroup.bench.peers import JavaPeer, KafkaPythonPeer, KafkagroupPeer
    from kafkagroup.bench.report import machine, write
    from kafkagroup.bench.run import STRATEGIES, run_grid

    strategies = tuple(s.strip() for s in args.strategies.split(",") if s.strip())
    unknown = [s for s in strategies if s not in STRATEGIES]
    if unknown or not strategies:
        print(f"kafkagroup bench: unknown strategy {', '.join(unknown) or '(none given)'}; "
              f"choose from {', '.join(STRATEGIES)}", file=sys.stderr)
        return 2
    cap = args.cap if args.cap is not None else (3.0 if args.quick else 60.0)
    if cap <= 0:
        print("kafkagroup bench: --cap must be positive", file=sys.stderr)
        return 2
    from kafkagroup.extras import require
    from kafkagroup.output_paths import check_output_dir
    from kafkagroup.textout import progress

    require("bench (report.png)", ("matplotlib",), "plot")
    check_output_dir(args.out, f"bench --out {args.out}")       # before minutes of work
    peers: list = [KafkagroupPeer()]
    unavailable: list[str] = []
    try:
        peers.append(KafkaPythonPeer())
    except ImportError as e:
        unavailable.append(f"kafka-python: not available ({e}; pip install kafka-python)")
    java = None
    if args.no_java:
        unavailable.append("Java: left out (--no-java)")
    else:
        try:
            java = JavaAssignors(args.java_jars)
            peers.append(JavaPeer(java))
        except JavaUnavailable as e:
            unavailable.append(f"Java: {e}")
    for note in unavailable:
        print(f"kafkagroup bench: {note}", file=sys.stderr)
    start = time.monotonic()

    def row_done(row) -> None:
        # a progress bar on a terminal (rich), one line per row on a terminal without rich, quiet when piped
        shown = f"{row.median_ms:,.2f} ms" if row.median_ms is not None else row.status
        q = row.quality
        quality = "" if q is None else (f"  spread {q.spread} moves {q.moves}" + ("" if q.valid else f"  INVALID: {q.problem}"))
        line = f"{row.scenario:<30} {row.strategy:<18} {row.peer:<26} {shown}{quality}"
        if bar.shown:
            bar.advance()
            bar.update(description=f"bench: {line.split()[0]} {row.strategy}")
        elif sys.stderr.isatty():
            print(f"{time.monotonic() - start:6.1f}s  {line}", file=sys.stderr, flush=True)

    grid = scenarios(args.quick)
    try:
        with progress("bench", total=len(grid) * len(strategies) * len(peers)) as bar:
            rows = run_grid(grid, peers, strategies=strategies, cap_s=cap, progress=row_done)
    finally:
        if java is not None:
            java.close()
    meta = {"machine": machine(), "peers": [p.name for p in peers], "unavailable": unavailable,
            "quick": bool(args.quick), "cap_s": cap, "strategies": list(strategies)}
    try:
        paths = write(rows, meta, args.out)
    except OSError as e:
        print(f"kafkagroup bench: cannot write the report to {args.out}: {e.strerror or e}", file=sys.stderr)
        return 2
    print(f"wrote {paths['md']}, {paths['json']}, {paths['png']}")
    return 0
