"""``kafkagroup simulate``: run a scenario once per strategy and compare what each rebalance cost.

    kafkagroup simulate my-scenario.json
    kafkagroup simulate --example scale-out --strategies range,cooperative-sticky --plot scale.png
    kafkagroup simulate --example scale-out --members 100 --details
    kafkagroup simulate --example rolling-restart --members 20 --compare-protocols

``--compare-protocols`` runs the scenario once per classic strategy (``--strategies``) and once per KIP-848
remote assignor (``--remote-assignors``, default the scenario's ``group.remote.assignor`` or ``uniform``) with
every member on the consumer protocol: "what does moving to the new protocol change for my group".  A
scenario whose members all speak the consumer protocol (and never switch) runs once: the classic strategies
do not apply to it.

``--members N`` is a member count, as in ``demo`` (it replaces the scenario's ``members`` key);
``--details`` prints each strategy's steps and one line per member. Results (tables, JSON) go to stdout;
warnings, progress (a bar on a terminal, nothing when piped) and "plot written" to stderr.

Scenario files are described in :mod:`kafkagroup.sim.scenario` and the README; the shipped ones are package
data in ``kafkagroup/sim/examples/`` (``--example NAME`` runs ``NAME.json`` there), so they come with every
install, not only with a checkout.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


from kafkagroup.textout import Table

# kafkagroup.cli imports this module to register the command: the simulator itself (coordinator, client)
# is imported in run() only.

__all__ = ["HELP", "EXAMPLES_DIR", "add_arguments", "run", "example_names", "load_example"]

HELP = "simulate a group's rebalances (real coordinator + members on a test clock) and compare strategies"
EXAMPLES_DIR = Path(__file__).resolve().parent / "examples"


def example_names() -> list[str]:
    return sorted(p.stem for p in EXAMPLES_DIR.glob("*.json")) if EXAMPLES_DIR.is_dir() else []


def load_example(name: str) -> dict[str, Any]:
    path = EXAMPLES_DIR / f"{name}.json"
    if not path.is_file():
        known = ", ".join(example_names()) or f"none found in {EXAMPLES_DIR}"
        raise SystemExit(f"kafkagroup simulate: no example {name!r} (examples: {known})")
    return _read_json(str(path))


def _read_json(path: str) -> Any:
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text()
        return json.loads(text)
    except (OSError, UnicodeDecodeError) as e:
        raise SystemExit(f"kafkagroup simulate: cannot read {path}: {e}") from None
    except json.JSONDecodeError as e:
        raise SystemExit(f"kafkagroup simulate: {path}: not JSON: {e}") from None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from kafkagroup.sim.scenario import KNOWN_STRATEGIES as strategies_run

    parser.add_argument("scenario", nargs="?",
                        help="scenario JSON file ('-' for standard input); format in the README and "
                             "kafkagroup/sim/scenario.py")
    names = example_names()
    parser.add_argument("--example", metavar="NAME",
                        help="run a shipped scenario (kafkagroup/sim/examples/NAME.json) instead of a file"
                             + (f" ({', '.join(names)})" if names else ""))
    parser.add_argument("--strategies", metavar="LIST",
                        help="comma-separated strategies to compare (default: every strategy: "
                             f"{','.join(strategies_run)}); 'scenario' runs the scenario's own 'strategy'")
    parser.add_argument("--compare-protocols", action="store_true",
                        help="also run the scenario with every member on the consumer protocol (KIP-848), once per "
                             "--remote-assignors, next to the classic strategies")
    parser.add_argument("--remote-assignors", metavar="LIST",
                        help="comma-separated group.remote.assignor values for the consumer-protocol runs of "
                             "--compare-protocols (uniform, range; default: the scenario's, else uniform)")
    parser.add_argument("--members", type=int, metavar="N",
                        help="initial member count: replaces the scenario's 'members' key (as demo's --members, "
                             "a count)")
    parser.add_argument("--details", action="store_true",
                        help="also print each strategy's report with its steps and one line per member "
                             "(--format json has every member without it)")
    parser.add_argument("--plot", metavar="OUT.png", help="draw ownership over time per member and consuming "
                                                         "partitions per strategy into a PNG")
    parser.add_argument("--format", choices=("table", "json"), default="table",
                        help="table (default) or JSON with every figure")


def run(args: argparse.Namespace) -> int:
    from kafkagroup.sim.errors import ScenarioError
    from kafkagroup.sim.runner import simulate
    from kafkagroup.sim.scenario import KNOWN_STRATEGIES, parse_scenario, strategy_list
    from kafkagroup.textout import console, progress

    if args.example and args.scenario:
        raise SystemExit("kafkagroup simulate: give a scenario file or --example NAME, not both")
    if not args.example and not args.scenario:
        raise SystemExit("kafkagroup simulate: give a scenario file or --example NAME "
                         f"(examples: {', '.join(example_names())})")
    if args.plot:
        from kafkagroup.extras import require
        from kafkagroup.output_paths import check_output_file

        require("simulate --plot", ("matplotlib",), "plot")
        check_output_file(args.plot, f"simulate --plot {args.plot}")
    data = load_example(args.example) if args.example else _read_json(args.scenario)
    if args.members is not None:
        if not isinstance(data, dict):
            raise SystemExit("kafkagroup simulate: a scenario is a JSON object")
        data = {**data, "members": args.members}
    if args.remote_assignors and not args.compare_protocols:
        raise SystemExit("kafkagroup simulate: --remote-assignors goes with --compare-protocols")
    try:
        scenario = parse_scenario(data)
        consumer_only = scenario.consumer_only
        if args.strategies == "scenario" or (consumer_only and not args.compare_protocols):
            runs = [scenario]
        else:
            names = strategy_list(args.strategies, "--strategies") if args.strategies else list(KNOWN_STRATEGIES)
            classic = scenario.with_protocol("classic") if consumer_only else scenario
            runs = [classic.with_strategy(n) for n in names]
        if args.compare_protocols:
            assignors = _remote_assignors(args.remote_assignors, scenario)
            runs += [scenario.with_protocol("consumer", a) for a in assignors]
    except ScenarioError as e:
        where = "--members" if args.members is not None and str(e).startswith("members") else ""
        raise SystemExit(f"kafkagroup simulate: {where + ': ' if where else ''}{e}") from None
    for w in scenario.warnings:
        print(f"kafkagroup simulate: warning: {w}", file=sys.stderr)
    reports = []
    with progress(f"simulating {scenario.name}", total=len(runs) * (1 + len(scenario.steps))) as bar:
        for sc in runs:
            what = f"consumer/{sc.remote_assignor or 'uniform'}" if sc.protocols == {"consumer"} else sc.strategy[0]
            bar.update(description=f"simulating {scenario.name}: {what}")
            reports.append(simulate(sc, on_progress=bar.advance))
    if args.plot:
        from kafkagroup.sim.plot import plot_reports
        try:
            plot_reports(reports, args.plot)
        except (OSError, ValueError) as e:
            raise SystemExit(f"kafkagroup simulate: cannot write the plot {args.plot}: {e}") from None
        print(f"kafkagroup simulate: plot written to {args.plot}", file=sys.stderr)
    if args.format == "json":
        print(json.dumps([r.to_dict() for r in reports], indent=2))
        return 0
    out = console()
    if args.details:
        for r in reports:
            out.print(r.summary())
    out.print(_table(scenario, reports))
    for r in reports:
        for x in r.refusals:
            out.print(f"{r.label}: at {x.at_ms:,} ms the coordinator refused {x.member} ({x.protocol} protocol): "
                      f"{x.api} answered {x.error}" + (f" -- {x.message.rstrip('.')}" if x.message else "")
                      + "; the rollout stopped and the member went back to its previous protocol", markup=False)
    out.print(_legend(reports[0], reports))
    return 0


def _remote_assignors(value: str | None, scenario: Any) -> list[str]:
    from kafkagroup.sim.errors import ScenarioError
    from kafkagroup.sim.scenario import REMOTE_ASSIGNORS

    if value is None:
        return [scenario.remote_assignor or "uniform"]
    names = [n.strip() for n in value.split(",") if n.strip()]
    for n in names:
        if n not in REMOTE_ASSIGNORS:
            raise ScenarioError(f"--remote-assignors: unknown assignor {n!r} (known: {', '.join(REMOTE_ASSIGNORS)})")
    if not names:
        raise ScenarioError("--remote-assignors: give at least one assignor")
    return names


def _table(scenario: Any, reports: list[Any]) -> Table:
    table = Table(f"{scenario.name}: rebalance cost by strategy (simulated time)",
                  [(col, "left" if col in ("strategy", "protocol") else "right") for col in (
                      "strategy", "protocol", "partition-s without owner", "longest pause ms", "rebalances",
                      "members idle", "moved", "settled ms", "double owned", "final load")],
                  caption=scenario.description or None)
    for r in reports:
        settled = "never" if any(s.settled_ms is None for s in r.steps) else \
            f"{sum(s.settled_ms for s in r.steps):,}"
        table.add_row(r.label, r.rebalance_protocol, f"{r.partition_unowned_s:,.1f}",
                      f"{r.max_partition_pause_ms:,}", str(r.generations),
                      f"{r.members_idle}/{len(r.member_reports)}", str(r.moved_partitions), settled,
                      str(r.double_ownership), f"{r.final_min_load}..{r.final_max_load}")
    return table


def _legend(r: Any, reports: list[Any] | None = None) -> str:
    s = r.settings
    rp = s["record_processing_ms"]
    kip848 = next((x.settings for x in (reports or [r]) if "group.consumer.heartbeat.interval.ms" in x.settings), None)
    consumer = "" if kip848 is None else (
        f" KIP-848 members: group.consumer.heartbeat.interval.ms {kip848['group.consumer.heartbeat.interval.ms']}, "
        f"group.consumer.session.timeout.ms {kip848['group.consumer.session.timeout.ms']}, "
        f"group.consumer.assignment.interval.ms {kip848['group.consumer.assignment.interval.ms']} (the coordinator's).")
    return (
        "partition-s without owner: sum over partitions of the time no running member owned them "
        "(revoked and not yet reassigned, owner restarting or dead); longest pause: the longest such "
        "stretch of one partition; rebalances: generations; members idle: members that owned nothing for a "
        "while although running (newcomers and restarted members until their first assignment count too); "
        "moved: partitions that changed owner. KIP-848 rows: the members speak the consumer protocol "
        "(heartbeats; the coordinator assigns with group.remote.assignor), rebalances are group epochs.\n"
        f"Assumed: session.timeout.ms {s['session.timeout.ms']}, heartbeat.interval.ms "
        f"{s['heartbeat.interval.ms']}, max.poll.interval.ms {s['max.poll.interval.ms']}, max.poll.records "
        f"{s['max.poll.records']}, record processing log-normal median {rp['median']} ms sigma {rp['sigma']} "
        f"(per {rp['per']}; mean batch {s['batch_ms_mean'] / 1000:.2f} s), members started over "
        f"{s['start_spread_ms']} ms, network latency {s['network_latency_ms']} ms, seed {s['seed']}." + consumer
    )
