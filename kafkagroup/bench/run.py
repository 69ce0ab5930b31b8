"""Run the grid: every scenario x strategy x peer on the same input, each output through the one checker."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kafkagroup.assignors import RebalanceProtocol, get_assignor
from kafkagroup.bench.checker import Quality, check
from kafkagroup.bench.grid import Scenario
from kafkagroup.bench.peers import PeerRun

STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky")


@dataclass
class Row:
    scenario: str
    partitions: int
    members: int
    churn: bool
    racks: bool
    strategy: str
    peer: str
    status: str                 # "ok", "> 60 s", "n/a: ...", "fails: ..."
    median_ms: float | None
    times_ms: list[float]
    quality: Quality | None

    def as_dict(self) -> dict[str, Any]:
        out = {k: getattr(self, k) for k in ("scenario", "partitions", "members", "churn", "racks", "strategy",
                                             "peer", "status", "median_ms", "times_ms")}
        out["quality"] = self.quality.as_dict() if self.quality else None
        return out


def run_grid(scenarios: list[Scenario], peers: list[Any], *, strategies: tuple[str, ...] = STRATEGIES,
             cap_s: float = 60.0, progress: Callable[[Row], None] | None = None) -> list[Row]:
    rows = []
    for scenario in scenarios:
        for strategy in strategies:
            # a consumer configured with this assignor alone runs COOPERATIVE if the assignor supports it: its
            # result may then withhold partitions that change owner
            cooperative = RebalanceProtocol.COOPERATIVE in get_assignor(strategy).supported_protocols()
            for peer in peers:
                if strategy not in peer.strategies:
                    continue
                for other in peers:   # (a JVM peer keeps compiling after its call: not while one is timed)
                    if hasattr(other, "settle"):
                        other.settle()
                run: PeerRun = peer.run(strategy, scenario.group, racks=scenario.racks, rounds=scenario.rounds,
                                        cap_s=cap_s)
                quality = (check(scenario.group, run.per_member, cooperative=cooperative)
                           if run.per_member is not None else None)
                row = Row(scenario.name, scenario.partitions, len(scenario.group.members), scenario.churn,
                          scenario.racks, strategy, peer.name, run.status, run.median_ms, run.times_ms, quality)
                rows.append(row)
                if progress:
                    progress(row)
    return rows
