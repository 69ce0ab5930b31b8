"""What a simulation measured, from the end of the initial settling (time 0) to the end of the last step.

Headline: **partition-seconds without a consuming owner** -- for every partition, the time nobody owned it
(revoked and not yet assigned, owner restarting or dead), summed over partitions; also per member (the
partition-time its newly gained partitions had waited) and per partition (distribution and the worst ones);
then the longest single pause of a partition and the number of rebalances (generations).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from kafkagroup.sim.timeline import OwnershipTimeline

__all__ = ["MemberReport", "StepReport", "PartitionPause", "SimulationReport", "Refusal"]


@dataclass(frozen=True)
class Refusal:
    """The coordinator refused a member for good: when, whom, on which protocol, with which error."""

    at_ms: int
    member: str
    protocol: str
    api: str
    error: str
    message: Optional[str] = None


@dataclass
class MemberReport:
    name: str
    protocol: str                      # group protocol of its last incarnation: "classic" or "consumer"
    incarnations: int
    down_ms: int                       # time its process was not running (restarts)
    owned_nothing_ms: int              # time running while owning nothing (the eager stop-the-world)
    partition_wait_ms: int             # partition-ms its newly gained partitions had been without an owner
    gained: int
    moved_in: int
    revoked: int
    lost: int
    rebalances: int
    generations: list[int]
    final_partitions: int
    poll_timeouts: int = 0             # times it left the group because a batch exceeded max.poll.interval.ms


@dataclass
class StepReport:
    action: str
    started_ms: int
    settled_ms: Optional[int]          # time from the step's start until the group was stable again (None: never)
    generations: int                   # generations the group went through during the step


@dataclass
class PartitionPause:
    partition: str
    unowned_ms: int
    max_pause_ms: int
    moves: int


@dataclass
class SimulationReport:
    name: str
    description: str
    strategy: list[str]
    rebalance_protocol: str
    members: int
    partitions: int
    duration_ms: int
    stable: bool
    start_generation: int
    end_generation: int
    moved_partitions: int
    partition_unowned_ms: int          # headline: partition-milliseconds without a consuming owner
    max_partition_pause_ms: int        # longest single stretch a partition had no owner
    paused_partitions: int             # partitions that were without an owner at some point
    pause_p50_ms: int                  # per-partition unowned time: median over all partitions
    pause_p99_ms: int
    double_ownership: int              # callbacks that gave a partition to a member while another owned it
    final_min_load: int
    final_max_load: int
    settings: dict[str, Any] = field(default_factory=dict)
    steps: list[StepReport] = field(default_factory=list)
    worst_partitions: list[PartitionPause] = field(default_factory=list)
    member_reports: list[MemberReport] = field(default_factory=list)
    #: requests the members sent after time 0, by API (heartbeat, join_group, sync_group, leave_group, ...)
    requests: dict[str, int] = field(default_factory=dict)
    #: the members' group protocols at the end ("classic", "consumer", or "classic+consumer")
    group_protocol: str = "classic"
    remote_assignor: Optional[str] = None   # group.remote.assignor of consumer-protocol members (None: default)
    group_kind: Optional[str] = None        # what the coordinator held under the group id at the end
    #: members the coordinator refused for good (time relative to time 0), e.g. a consumer-protocol member
    #: joining a non-empty classic group on a coordinator without mixed groups
    refusals: list[Refusal] = field(default_factory=list)
    timeline: Optional[OwnershipTimeline] = field(default=None, repr=False, compare=False)

    @property
    def generations(self) -> int:
        """Rebalances: generations the group went through after time 0."""
        return self.end_generation - self.start_generation

    @property
    def label(self) -> str:
        """The strategy (classic) or ``consumer/<remote assignor>`` (KIP-848), and "static" when members have
        group.instance.ids."""
        if self.group_protocol == "consumer":
            base = f"consumer/{self.remote_assignor or 'uniform'}"
        elif "consumer" in self.group_protocol:
            base = ",".join(self.strategy) + f" + consumer/{self.remote_assignor or 'uniform'}"
        else:
            base = ",".join(self.strategy)
        return base + (" (static)" if self.settings.get("static") else "")

    @property
    def partition_unowned_s(self) -> float:
        return self.partition_unowned_ms / 1000

    @property
    def members_idle(self) -> int:
        """Members that owned nothing for a while although running (newcomers until their first assignment too)."""
        return sum(1 for m in self.member_reports if m.owned_nothing_ms > 0)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.pop("timeline", None)
        out["generations"] = self.generations
        out["partition_unowned_s"] = round(self.partition_unowned_s, 3)
        return out

    def summary(self) -> str:
        """Human-readable text: group totals, steps, worst partitions, then one line per member."""
        lines = [
            f"{self.name} [{self.label}, {self.rebalance_protocol}]: {self.members} members, "
            f"{self.partitions} partitions",
            f"  {self.partition_unowned_s:,.1f} partition-s without a consuming owner; longest pause "
            f"{self.max_partition_pause_ms:,} ms; {self.generations} rebalance(s) in {self.duration_ms:,} ms; "
            f"stable={self.stable}",
            f"  per partition: {self.paused_partitions} paused, median {self.pause_p50_ms} ms, p99 "
            f"{self.pause_p99_ms} ms; moved {self.moved_partitions}; double ownership {self.double_ownership}; "
            f"final load {self.final_min_load}..{self.final_max_load}",
        ]
        for x in self.refusals:
            lines.append(f"  refused at {x.at_ms:,} ms: {x.member} ({x.protocol} protocol) -- {x.api} answered "
                         f"{x.error}" + (f": {x.message}" if x.message else ""))
        for s in self.steps:
            settled = "never settled" if s.settled_ms is None else f"settled after {s.settled_ms:,} ms"
            lines.append(f"  step {s.action} at {s.started_ms:,} ms: {settled}, {s.generations} generation(s)")
        if self.worst_partitions:
            lines.append("  longest without an owner: " + ", ".join(
                f"{p.partition} {p.unowned_ms:,} ms" for p in self.worst_partitions[:5]))
        lines.append("  member         protocol   idle ms   wait partition-ms  gained  moved  revoked  lost  rebal  "
                     "timeouts")
        for r in self.member_reports:
            lines.append(f"  {r.name:<14} {r.protocol:<8} {r.owned_nothing_ms:>9,} {r.partition_wait_ms:>18,} "
                         f"{r.gained:>7} {r.moved_in:>6} {r.revoked:>8} {r.lost:>5} {r.rebalances:>6} "
                         f"{r.poll_timeouts:>9}")
        return "\n".join(lines)
