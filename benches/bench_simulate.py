"""The simulator's cost: a rolling restart of a 200-member group over 20,000 partitions (the shape of
``kafkagroup/sim/examples/rolling-restart-1000.json`` at a fifth of its size: each member down 1 s, the next one stopping as
soon as the previous one is back), dynamic eager (range), dynamic cooperative (cooperative-sticky) and static.

Timed: one whole ``simulate()`` -- building and settling the group, the restart, the report -- with the real
coordinator, members, wire bytes and native assignors.  There is no other simulator of Kafka's group protocol
to run next to it; the peer is the group it simulates: the simulated duration (what the restart takes in a
real deployment) against our CPU time (``time.process_time``: the machine is shared), so the ratio reads
"times faster than real time".  The note gives the rebalances and the simulated events per CPU
second (requests the members sent -- heartbeats, JoinGroups, SyncGroups, LeaveGroups -- each a request, its
answer and the callbacks it triggers).

The full-size figures (1,000 members x 100,000 partitions) are measured by ``python benches/bench_simulate.py
full`` (minutes; not part of the pytest run).
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest
from conftest import Row

from kafkagroup.sim.runner import simulate
from kafkagroup.sim.scenario import parse_scenario

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
MEMBERS, PARTITIONS = 200, 20_000


def scenario(static: bool, members: int = MEMBERS, partitions: int = PARTITIONS) -> dict:
    data = json.loads((EXAMPLES / ("rolling-restart-1000-static.json" if static else "rolling-restart-1000.json"))
                      .read_text())
    data.update(members=members, topics={"orders": partitions * 4 // 5, "payments": partitions // 5})
    return data


def run(data: dict, strategy: str) -> tuple[float, object]:
    sc = parse_scenario(data).with_strategy(strategy)
    start = time.process_time()
    report = simulate(sc)
    return time.process_time() - start, report


def describe(cpu_s: float, report) -> str:
    events = sum(report.requests.values())
    return (f"{report.members} members x {report.partitions:,} partitions: {cpu_s:.1f} s cpu, "
            f"{report.generations} rebalances, {events:,} requests ({events / cpu_s:,.0f}/cpu s), "
            f"{report.duration_ms / 1000:,.0f} s simulated")


@pytest.mark.parametrize("strategy,static", [("range", False), ("cooperative-sticky", False), ("range", True)],
                         ids=["eager", "cooperative", "static"])
def test_rolling_restart_200_members_20k_partitions(benchmark, report, strategy, static):
    data = scenario(static)
    out: list = []
    benchmark.pedantic(lambda: out.append(run(data, strategy)), rounds=1, warmup_rounds=0)
    cpu_s, result = out[-1]
    assert result.stable and result.double_ownership == 0
    note = describe(cpu_s, result)
    benchmark.extra_info.update(cpu_s=cpu_s, requests=result.requests, simulated_ms=result.duration_ms)
    kind = "static" if static else f"dynamic, {result.rebalance_protocol.lower()}"
    # the row's "ours" is CPU time (the benchmark's own figure is wall time, which a shared machine inflates)
    report.rows.append(Row(f"simulate: rolling restart ({strategy}, {kind})", cpu_s * 1000, "real time (simulated)",
                           float(result.duration_ms), 0.0, note))


if __name__ == "__main__":   # python benches/bench_simulate.py full: the 1,000 x 100k target, CPU seconds
    if sys.argv[1:] != ["full"]:
        raise SystemExit("usage: python benches/bench_simulate.py full")
    for strategy, static in [("range", True), ("cooperative-sticky", False), ("range", False)]:
        cpu_s, result = run(scenario(static, 1_000, 100_000), strategy)
        print(f"{strategy:<20} {'static' if static else 'dynamic':<8} {describe(cpu_s, result)}", flush=True)
