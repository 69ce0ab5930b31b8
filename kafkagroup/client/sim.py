"""Rebalance simulator: a coordinator and N members on one test clock, driven through a scripted scenario.

"What moves, and how long does consumption stop, if we scale group X from 40 to 48 members / roll-restart it /
switch it to cooperative-sticky?"  :func:`simulate` answers with a :class:`SimulationReport`::

    report = simulate({
        "topics": {"orders": 96},
        "members": 40,
        "strategy": "range",
        "steps": [{"action": "scale", "members": 48}],
    })
    print(report.summary())

Everything is the real thing -- :class:`~kafkagroup.coordinator.GroupCoordinator`, :class:`GroupMember`, the
native assignors, Kafka wire bytes -- on a :class:`~kafkagroup.messages.clock.ManualClock`.  Member ids come
from a counter, so a scenario always produces the same report.  Ownership is tracked by an
:class:`~kafkagroup.client.ledger.OwnershipLedger` fed by the members' callbacks.

Scenario keys (all optional except ``topics``; Kafka config keys as Kafka spells them):

==========================  ===========================================================================
``name``                    label of the report
``group_id``                default ``"sim-group"``
``topics``                  ``{topic: partition count}``
``members``                 initial member count (default 3)
``strategy``                ``partition.assignment.strategy`` (name or list), default ``"range"``
``static``                  give members ``group.instance.id``s (``member-<i>``), default False
``config``                  member config (``session.timeout.ms``, ``heartbeat.interval.ms``, ...)
``coordinator``             broker config (``group.initial.rebalance.delay.ms``, ...), default delay 3000
``network_latency_ms``      one-way request latency, default 1
``poll_delay_ms``           time from a rejoin request to the application's next poll (how long a batch
                            takes to process), default 10; ``[lo, hi]`` draws one value per member
``seed``                    seed of those draws (a member's draw depends only on seed and its name)
``settle_timeout_ms``       bound on waiting for a stable group after each step, default 600000
``steps``                   list of actions, run in order, each followed by waiting for a stable group:
                            ``{"action": "scale", "members": N}``, ``{"action": "add_members", "count": k}``,
                            ``{"action": "remove_members", "count": k}`` (clean close),
                            ``{"action": "crash", "count": k}`` (no LeaveGroup: session expiry),
                            ``{"action": "roll_restart", "downtime_ms": d, "interval_ms": i}``,
                            ``{"action": "switch_strategy", "strategy": s, "downtime_ms": d, "interval_ms": i}``
                            (eager -> cooperative runs KIP-429's two rolling bounces),
                            ``{"action": "add_partitions", "topic": t, "partitions": n}``,
                            ``{"action": "wait", "ms": n}``
==========================  ===========================================================================

Measured from the end of the initial settling (the report's time 0) to the end:
per member -- time owning nothing while running (``owned_nothing_ms``, the eager stop-the-world), how long
the partitions it gained had been without an owner (``partition_wait_ms``), partitions gained / moved in /
revoked / lost, completed rebalances and the generations it went through; per group -- generations, partition
moves, partition-ms without an owner, the longest single pause, double-ownership incidents.
"""
from __future__ import annotations

import itertools
import random
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Mapping, Optional, Sequence

from kafkagroup.client.cluster import ClusterMetadata
from kafkagroup.client.config import MemberConfig
from kafkagroup.client.ledger import OwnershipLedger
from kafkagroup.client.member import GroupMember, MemberState
from kafkagroup.client.rebalance_protocol import RebalanceProtocol, assignor_name, select_rebalance_protocol
from kafkagroup.messages.clock import ManualClock
from kafkagroup.coordinator.coordinator import GroupCoordinator
from kafkagroup.coordinator.group import GroupState
from kafkagroup.errors import InvalidGroupError
from kafkagroup.structs import TopicPartition

__all__ = ["GroupHarness", "simulate", "SimulationReport", "MemberReport", "StepReport"]


# ======================================================================================== harness
class GroupHarness:
    """A coordinator, a cluster and named members on one ManualClock, with an ownership ledger.

    Members are addressed by a stable *name*; :meth:`restart` replaces a member's process by a new
    incarnation of the same name (and the same ``group.instance.id`` when static).  :meth:`advance` moves the
    clock in ``check_every_ms`` steps and checks after each step that no partition has two owners when
    ``exclusive`` is set (it always holds under COOPERATIVE; eager groups can violate it only with zombies).
    """

    def __init__(
        self,
        topics: Mapping[str, int],
        *,
        group_id: str = "sim-group",
        coordinator_config: Optional[Mapping[str, Any]] = None,
        member_config: Optional[Mapping[str, Any]] = None,
        network_latency_ms: int = 0,
        poll_delay_ms: int | tuple[int, int] = 0,
        seed: int = 0,
        exclusive: bool = True,
        check_every_ms: int = 100,
        clock: Optional[ManualClock] = None,
    ) -> None:
        self.clock = clock or ManualClock()
        self.group_id = group_id
        counter = itertools.count(1)
        cc = {"group.initial.rebalance.delay.ms": 3000, **(coordinator_config or {})}
        self.coordinator = GroupCoordinator(   # a simulation keeps nothing across runs: in-memory store
            cc, clock=self.clock, store=":memory:", enable_offset_expiration=False,
            member_id_factory=lambda prefix: f"{prefix}-{next(counter):06d}",
        )
        self.cluster = ClusterMetadata(dict(topics))
        self.ledger = OwnershipLedger(self.clock)
        self.ledger.add_partitions(self._all_partitions())
        self.member_config = {"group.id": group_id, **(member_config or {})}
        self.network_latency_ms = network_latency_ms
        self.poll_delay_ms = poll_delay_ms
        self.seed = seed
        self.exclusive = exclusive
        self.check_every_ms = max(1, int(check_every_ms))
        self.members: dict[str, GroupMember] = {}          # name -> current incarnation
        self.incarnations: dict[str, int] = {}
        self.down_since: dict[str, int] = {}
        self.down_ms: dict[str, int] = {}
        self._retired: list[GroupMember] = []
        self._names = itertools.count(0)

    # ------------------------------------------------------------------ membership
    def add(
        self,
        name: Optional[str] = None,
        *,
        static: bool = False,
        topics: Optional[Iterable[str]] = None,
        start: bool = True,
        poll_delay_ms: Optional[int] = None,
        **config: Any,
    ) -> GroupMember:
        """Start a new member (``config``: Kafka keys with underscores, e.g. partition_assignment_strategy)."""
        if name is None:
            name = f"member-{next(self._names)}"
        if name in self.members and self.members[name].alive:
            raise InvalidGroupError(f"member {name!r} is already running")
        merged = {k.replace(".", "_"): v for k, v in self.member_config.items()}
        merged.update({k.replace(".", "_"): v for k, v in config.items()})
        if static:
            merged.setdefault("group_instance_id", name)
        cfg = MemberConfig.from_kafka(merged)
        member = GroupMember(
            self.coordinator, clock=self.clock, cluster=self.cluster,
            topics=list(topics) if topics is not None else sorted(self.cluster.partitions_per_topic),
            config=cfg, name=name, network_latency_ms=self.network_latency_ms,
            poll_delay_ms=self.poll_delay_of(name) if poll_delay_ms is None else poll_delay_ms,
            **self.ledger.callbacks(name),
        )
        self.members[name] = member
        self.incarnations[name] = self.incarnations.get(name, 0) + 1
        if name in self.down_since:
            self.down_ms[name] = self.down_ms.get(name, 0) + self.clock.now_ms() - self.down_since.pop(name)
        if start:
            member.start()
        return member

    def stop(self, name: str) -> None:
        """Clean shutdown (revoke callbacks; LeaveGroup if dynamic)."""
        member = self.members[name]
        member.close()
        self.ledger.stopped(name)
        self.down_since[name] = self.clock.now_ms()

    def crash(self, name: str) -> None:
        """Kill the process: no callback, no LeaveGroup."""
        member = self.members[name]
        member.crash()
        self.ledger.crashed(name)
        self.down_since[name] = self.clock.now_ms()

    def restart(self, name: str, **config: Any) -> GroupMember:
        """New incarnation of ``name`` with the previous config, ``config`` overriding (e.g. a new strategy)."""
        old = self.members[name]
        if old.alive:
            raise InvalidGroupError(f"member {name!r} is still running; stop or crash it first")
        self._retired.append(old)
        cfg = old.config
        base = {
            "partition_assignment_strategy": cfg.partition_assignment_strategy,
            "session_timeout_ms": cfg.session_timeout_ms,
            "heartbeat_interval_ms": cfg.heartbeat_interval_ms,
            "max_poll_interval_ms": cfg.max_poll_interval_ms,
            "client_rack": cfg.client_rack,
            "metadata_max_age_ms": cfg.metadata_max_age_ms,
        }
        if cfg.group_instance_id is not None:
            base["group_instance_id"] = cfg.group_instance_id
        base.update(config)
        return self.add(name, topics=sorted(old.subscription) or None, **base)

    def remove(self, name: str) -> None:
        """Forget a stopped/crashed member (no restart planned)."""
        self._retired.append(self.members.pop(name))

    def poll_delay_of(self, name: str) -> int:
        """The member's poll delay: fixed, or drawn from ``(lo, hi)`` by a generator seeded with (seed, name)."""
        if isinstance(self.poll_delay_ms, int):
            return self.poll_delay_ms
        lo, hi = self.poll_delay_ms
        return random.Random(f"{self.seed}/{name}").randint(int(lo), int(hi))

    @property
    def running(self) -> list[GroupMember]:
        return [m for m in self.members.values() if m.alive]

    # ------------------------------------------------------------------ time
    def advance(self, ms: int) -> None:
        """Move time forward by ``ms``, timer by timer, checking exclusive ownership at least every
        ``check_every_ms`` (the ledger also checks at every callback).

        The clock is moved to each next deadline in turn rather than by fixed steps: ManualClock runs a timer
        with ``now`` at the end of the step (spec §7.1), so a coarse step would delay every network hop and
        every heartbeat to the step's end.
        """
        target = self.clock.now_ms() + int(ms)
        next_check = self.clock.now_ms() + self.check_every_ms
        while True:
            due = self.clock.next_deadline()   # amortised O(log timers): cancelled timers leave the heap top
            step_to = target if due is None or due > target else max(due, self.clock.now_ms())
            self.clock.advance_to(step_to)
            if self.exclusive and step_to >= next_check:
                self.ledger.assert_exclusive()
                next_check = step_to + self.check_every_ms
            if step_to >= target:
                if self.exclusive:
                    self.ledger.assert_exclusive()
                return

    def settle(self, timeout_ms: int = 600_000) -> Optional[int]:
        """Advance until :meth:`is_stable` (checked every step); the time it took, or None on timeout."""
        start = self.clock.now_ms()
        self.clock.advance(0)
        while not self.is_stable():
            now = self.clock.now_ms()
            if now - start >= timeout_ms:
                return None
            due = self.clock.next_deadline()
            # event by event, so that the time reported is exact; nothing scheduled -> nothing will change
            step_to = now + self.check_every_ms if due is None else min(max(due, now), start + timeout_ms)
            self.clock.advance_to(step_to)
            if self.exclusive:
                self.ledger.assert_exclusive()
        return self.clock.now_ms() - start

    def group_state(self) -> Optional[GroupState]:
        g = self.coordinator.group(self.group_id)
        return g.state if g is not None else None

    def generation(self) -> int:
        g = self.coordinator.group(self.group_id)
        return g.generation_id if g is not None else 0

    def is_stable(self) -> bool:
        """Coordinator Stable; every running member STABLE in its generation with nothing pending; every
        partition of a subscribed topic owned by exactly one running member.

        Cost O(members + subscribed topics): the ledger keeps per topic the count of partitions without a
        single owner, so nothing scans the partitions (this runs after every event while settling)."""
        g = self.coordinator.group(self.group_id)
        if g is not None and g.state in (GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE):
            return False   # cheap exit first: this runs after every event while settling
        running = self.running
        if not running:
            return g is None or g.state in (GroupState.EMPTY, GroupState.DEAD)
        if g is None or g.state is not GroupState.STABLE:
            return False
        if len(g.members) != len(running):
            return False
        for m in running:
            if m.state is not MemberState.STABLE or m.generation.generation_id != g.generation_id:
                return False
            if m.rejoin_pending:
                return False
        subscribed = set().union(*(m.subscription for m in running))
        counts = self.cluster.partitions_per_topic
        for topic in subscribed:
            self._sync_ledger(topic, counts.get(topic, 0))
            if self.ledger.unsettled(topic):
                return False
        return True

    def _sync_ledger(self, topic: str, count: int) -> None:
        """Make the ledger's partitions of ``topic`` those of the cluster (also after a test changed
        ``self.cluster`` directly).  Assumes partitions 0..n-1 are registered, as this harness does."""
        known = self.ledger.partition_count(topic)
        if known < count:
            self.ledger.add_partitions(TopicPartition(topic, p) for p in range(known, count))
        elif known > count:
            self.ledger.remove_partitions(TopicPartition(topic, p) for p in range(count, known))

    # ------------------------------------------------------------------ cluster
    def set_partitions(self, topic: str, count: int, *, refresh: bool = False) -> None:
        """Grow (or create) a topic; members notice at their next metadata refresh (or now with ``refresh``)."""
        self.cluster.set_partitions(topic, count)
        self._sync_ledger(topic, count)
        if refresh:
            for m in self.running:
                m.refresh_metadata()

    def _all_partitions(self) -> list[TopicPartition]:
        return [TopicPartition(t, p) for t, n in self.cluster.partitions_per_topic.items() for p in range(n)]

    def assignment(self) -> dict[str, frozenset[TopicPartition]]:
        return {name: m.assignment for name, m in self.members.items() if m.alive}


# ======================================================================================== report
@dataclass
class MemberReport:
    name: str
    incarnations: int
    down_ms: int
    owned_nothing_ms: int
    partition_wait_ms: int
    gained: int
    moved_in: int
    revoked: int
    lost: int
    rebalances: int
    generations: list[int]
    final_partitions: int


@dataclass
class StepReport:
    action: str
    started_ms: int
    settled_ms: Optional[int]          # time from the step's start until the group was stable again
    generations: int                   # generations the group went through during the step


@dataclass
class SimulationReport:
    name: str
    strategy: list[str]
    rebalance_protocol: str
    members: int
    partitions: int
    duration_ms: int
    stable: bool
    start_generation: int
    end_generation: int
    moved_partitions: int
    partition_unowned_ms: int          # partition-milliseconds without an owner
    max_partition_pause_ms: int        # longest single stretch a partition had no owner
    double_ownership: int              # callbacks that gave a partition to a member while another owned it
    final_min_load: int
    final_max_load: int
    steps: list[StepReport] = field(default_factory=list)
    member_reports: list[MemberReport] = field(default_factory=list)

    @property
    def generations(self) -> int:
        return self.end_generation - self.start_generation

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["generations"] = self.generations
        return out

    def summary(self) -> str:
        """Human-readable text: group totals, steps, then one line per member."""
        lines = [
            f"{self.name}: {self.members} members, {self.partitions} partitions, strategy {self.strategy} "
            f"({self.rebalance_protocol})",
            f"  {self.generations} generation(s) in {self.duration_ms} ms, stable={self.stable}; "
            f"moved {self.moved_partitions} partitions; unowned {self.partition_unowned_ms} partition-ms, "
            f"longest pause {self.max_partition_pause_ms} ms; double ownership {self.double_ownership}; "
            f"final load {self.final_min_load}..{self.final_max_load}",
        ]
        for s in self.steps:
            lines.append(f"  step {s.action} at {s.started_ms} ms: settled after {s.settled_ms} ms, "
                         f"{s.generations} generation(s)")
        lines.append("  member          idle_ms  wait_ms  gained  moved  revoked  lost  rebal  gens")
        for r in self.member_reports:
            gens = ",".join(map(str, r.generations[-6:]))
            lines.append(f"  {r.name:<14} {r.owned_nothing_ms:>8} {r.partition_wait_ms:>8} {r.gained:>7} "
                         f"{r.moved_in:>6} {r.revoked:>8} {r.lost:>5} {r.rebalances:>6}  {gens}")
        return "\n".join(lines)


# ======================================================================================== scenario
_KNOWN_KEYS = {
    "name", "group_id", "topics", "members", "strategy", "static", "config", "coordinator",
    "network_latency_ms", "poll_delay_ms", "settle_timeout_ms", "steps", "check_every_ms", "seed",
}


def _poll_delay(value: Any) -> int | tuple[int, int]:
    if isinstance(value, (list, tuple)):
        if len(value) != 2 or not 0 <= int(value[0]) <= int(value[1]):
            raise InvalidGroupError(f"poll_delay_ms range must be [lo, hi] with 0 <= lo <= hi, got {value!r}")
        return int(value[0]), int(value[1])
    if int(value) < 0:
        raise InvalidGroupError(f"poll_delay_ms must not be negative, got {value!r}")
    return int(value)


def _strategy_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [s.strip() for s in value.split(",") if s.strip()]
    return [assignor_name(v) for v in value]


def simulate(scenario: Mapping[str, Any]) -> SimulationReport:
    """Run a scenario (module docstring) and report; deterministic for a given scenario."""
    unknown = set(scenario) - _KNOWN_KEYS
    if unknown:
        raise InvalidGroupError(f"unknown scenario key(s) {sorted(unknown)}; known: {sorted(_KNOWN_KEYS)}")
    if "topics" not in scenario or not scenario["topics"]:
        raise InvalidGroupError("scenario needs 'topics': {topic: partition count}")
    strategy = _strategy_list(scenario.get("strategy", "range"))
    settle_timeout = int(scenario.get("settle_timeout_ms", 600_000))
    member_cfg = dict(scenario.get("config", {}))
    member_cfg.setdefault("partition.assignment.strategy", strategy)
    harness = GroupHarness(
        scenario["topics"],
        group_id=scenario.get("group_id", "sim-group"),
        coordinator_config=scenario.get("coordinator"),
        member_config=member_cfg,
        network_latency_ms=int(scenario.get("network_latency_ms", 1)),
        poll_delay_ms=_poll_delay(scenario.get("poll_delay_ms", 10)),
        seed=int(scenario.get("seed", 0)),
        exclusive=False,            # recorded and reported instead of raised
        check_every_ms=int(scenario.get("check_every_ms", 100)),
    )
    static = bool(scenario.get("static", False))
    for _ in range(int(scenario.get("members", 3))):
        harness.add(static=static)
    if harness.settle(settle_timeout) is None:
        raise InvalidGroupError(f"the initial group did not settle within {settle_timeout} ms")
    harness.ledger.reset_window()
    for m in harness.running:
        m.stats["rebalances"] = 0
        m.generation_history.clear()
    t0 = harness.clock.now_ms()
    start_gen = harness.generation()
    current = list(strategy)
    steps: list[StepReport] = []
    for step in scenario.get("steps", ()):
        action = step.get("action")
        begun, gen0 = harness.clock.now_ms(), harness.generation()
        current = _run_step(harness, step, current, static)
        settled = harness.settle(settle_timeout)
        steps.append(StepReport(str(action), begun - t0, None if settled is None else harness.clock.now_ms() - begun,
                                harness.generation() - gen0))
    harness.ledger.close_window()
    return _report(harness, scenario, current, t0, start_gen, steps)


def _run_step(h: GroupHarness, step: Mapping[str, Any], current: list[str], static: bool) -> list[str]:
    action = step.get("action")
    if action == "scale":
        target = int(step["members"])
        names = [n for n, m in h.members.items() if m.alive]
        for _ in range(target - len(names)):
            h.add(static=static, partition_assignment_strategy=current)
        for name in names[target:] if target < len(names) else ():
            h.stop(name)
            h.remove(name)
    elif action == "add_members":
        for _ in range(int(step["count"])):
            h.add(static=static, partition_assignment_strategy=current)
    elif action == "remove_members":
        for name in [n for n, m in h.members.items() if m.alive][-int(step["count"]):]:
            h.stop(name)
            h.remove(name)
    elif action == "crash":
        for name in [n for n, m in h.members.items() if m.alive][-int(step["count"]):]:
            h.crash(name)
            h.remove(name)
    elif action == "roll_restart":
        _roll(h, int(step.get("downtime_ms", 5_000)), int(step.get("interval_ms", 10_000)), current)
    elif action == "switch_strategy":
        new = _strategy_list(step["strategy"])
        down, interval = int(step.get("downtime_ms", 5_000)), int(step.get("interval_ms", 10_000))
        old_proto, new_proto = select_rebalance_protocol(current), select_rebalance_protocol(new)
        if old_proto is RebalanceProtocol.EAGER and new_proto is RebalanceProtocol.COOPERATIVE:
            # KIP-429 upgrade: first bounce lists the new assignor first and keeps the old ones (the group still
            # votes for a common protocol and runs EAGER), second bounce drops the old ones.
            bridge = new + [s for s in current if s not in new]
            _roll(h, down, interval, bridge)
            h.settle()
        _roll(h, down, interval, new)
        return new
    elif action == "add_partitions":
        h.set_partitions(step["topic"], int(step["partitions"]), refresh=bool(step.get("refresh", True)))
    elif action == "wait":
        h.advance(int(step["ms"]))
    else:
        raise InvalidGroupError(f"unknown scenario action {action!r}")
    return current


def _roll(h: GroupHarness, downtime_ms: int, interval_ms: int, strategy: Sequence[str]) -> None:
    """Rolling bounce: each running member in turn stops cleanly and comes back ``downtime_ms`` later."""
    names = [n for n, m in h.members.items() if m.alive]
    for name in names:
        h.stop(name)
        h.advance(downtime_ms)
        h.restart(name, partition_assignment_strategy=list(strategy))
        h.advance(max(0, interval_ms - downtime_ms))


def _report(h: GroupHarness, scenario: Mapping[str, Any], strategy: list[str], t0: int, start_gen: int,
            steps: list[StepReport]) -> SimulationReport:
    ledger = h.ledger
    reports = []
    every = list(h._retired) + list(h.members.values())
    for name in sorted({m.name for m in every}, key=lambda n: (len(n), n)):
        incarnations = [m for m in every if m.name == name]
        st = ledger.members.get(name)
        gens: list[int] = []
        for m in incarnations:
            gens.extend(g for t, g in m.generation_history if t >= t0)
        live = h.members.get(name)
        down = h.down_ms.get(name, 0) + (h.clock.now_ms() - h.down_since[name] if name in h.down_since else 0)
        reports.append(MemberReport(
            name=name,
            incarnations=len(incarnations),
            down_ms=down,
            owned_nothing_ms=st.owned_nothing_ms if st else 0,
            partition_wait_ms=st.waited_ms if st else 0,
            gained=st.gained if st else 0,
            moved_in=st.moved_in if st else 0,
            revoked=st.revoked if st else 0,
            lost=st.lost if st else 0,
            rebalances=len(gens),
            generations=gens,
            final_partitions=len(live.assignment) if live is not None and live.alive else 0,
        ))
    loads = [len(m.assignment) for m in h.running] or [0]
    parts = ledger.partitions.values()
    return SimulationReport(
        name=str(scenario.get("name", "scenario")),
        strategy=list(strategy),
        rebalance_protocol=select_rebalance_protocol(strategy).name,
        members=len(h.running),
        partitions=sum(h.cluster.partitions_per_topic.values()),
        duration_ms=h.clock.now_ms() - t0,
        stable=h.is_stable(),
        start_generation=start_gen,
        end_generation=h.generation(),
        moved_partitions=sum(p.moves for p in parts),
        partition_unowned_ms=sum(p.unowned_ms for p in parts),
        max_partition_pause_ms=max((p.max_pause_ms for p in parts), default=0),
        double_ownership=ledger.violation_count,
        final_min_load=min(loads),
        final_max_load=max(loads),
        steps=steps,
        member_reports=reports,
    )
