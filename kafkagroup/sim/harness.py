"""GroupHarness: a coordinator, a cluster and named members on one ManualClock, with an ownership ledger.

The simulator (:mod:`kafkagroup.sim.runner`) and the client's end-to-end tests drive groups through it.
Everything is the real thing -- :class:`~kafkagroup.coordinator.GroupCoordinator`, :class:`GroupMember`, the
native assignors, Kafka wire bytes -- on a :class:`~kafkagroup.messages.clock.ManualClock`.  Member ids come
from a counter, so a run is reproducible.  Two application models:

- ``application=None``: each member polls ``poll_delay_ms`` after it needs to (fixed, or drawn per member from
  a range) -- the simple model the client tests use;
- ``application=ProcessingModel(...)``: each member runs Kafka's poll loop (:mod:`kafkagroup.sim.app`):
  batches of ``max.poll.records`` records with seeded processing times, group actions only at polls,
  ``max.poll.interval.ms`` enforced.  The simulator uses this one.

Each member speaks one group protocol (``add(protocol=...)``): ``"classic"`` (JoinGroup/SyncGroup, a
:class:`GroupMember`) or ``"consumer"`` (KIP-848 ConsumerGroupHeartbeat, a
:class:`~kafkagroup.sim.consumer_member.ConsumerProtocolMember`); both talk to the same coordinator, which
decides what a group id holds (one kind at a time on today's coordinator).  A member the coordinator refuses
for good (a fatal error, e.g. a consumer-protocol member joining a non-empty classic group) ends as a crashed
process would, and the refusal is kept in :attr:`GroupHarness.refusals`.
"""
from __future__ import annotations

import hashlib
import itertools
import random
from typing import Any, Iterable, Mapping, Optional

import numpy as np

from kafkagroup.client.cluster import ClusterMetadata
from kafkagroup.client.config import MemberConfig
from kafkagroup.client.member import GroupMember, MemberState
from kafkagroup.messages.clock import ManualClock
from kafkagroup.coordinator.coordinator import GroupCoordinator
from kafkagroup.coordinator.group import GroupState
from kafkagroup.messages.topics import StaticTopics
from kafkagroup.sim.app import PollGatedTransport, PollLoop, ProcessingModel
from kafkagroup.sim.consumer_member import ConsumerProtocolMember, ConsumerTransport
from kafkagroup.sim.errors import SimulationError
from kafkagroup.sim.ownership import PartitionLedger
from kafkagroup.sim.report import Refusal
from kafkagroup.sim.scenario import PROTOCOLS
from kafkagroup.sim.timeline import OwnershipTimeline
from kafkagroup.structs import TopicPartition

__all__ = ["GroupHarness"]




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
        application: Optional[ProcessingModel] = None,
    ) -> None:
        self.clock = clock or ManualClock()
        self.group_id = group_id
        counter = itertools.count(1)
        cc = {"group.initial.rebalance.delay.ms": 3000, **(coordinator_config or {})}
        # what the coordinator knows of the topics (consumer groups are assigned by it): same counts as the cluster
        self.topics = StaticTopics(dict(topics))
        self.coordinator = GroupCoordinator(   # a simulation keeps nothing across runs: in-memory store
            cc, clock=self.clock, store=":memory:", enable_offset_expiration=False,
            member_id_factory=lambda prefix: f"{prefix}-{next(counter):06d}", topics=self.topics,
        )
        self.cluster = ClusterMetadata(dict(topics))
        self.ledger = PartitionLedger(self.clock)
        for topic, count in self.cluster.partitions_per_topic.items():
            self.ledger.add_topic_partitions(topic, 0, count)
        self.member_config = {"group.id": group_id, **(member_config or {})}
        self.network_latency_ms = network_latency_ms
        self.poll_delay_ms = poll_delay_ms
        self.seed = seed
        self.exclusive = exclusive
        self.check_every_ms = max(1, int(check_every_ms))
        self.members: dict[str, Any] = {}                  # name -> current incarnation (either protocol)
        self.refusals: list[Refusal] = []
        self.incarnations: dict[str, int] = {}
        self.down_since: dict[str, int] = {}
        self.down_ms: dict[str, int] = {}
        self._retired: list[Any] = []
        self._names = itertools.count(0)
        self.application = application
        self._unready_hint: Optional[str] = None           # is_stable's shortcut (see there)
        self.loops: dict[str, PollLoop] = {}               # name -> current incarnation's poll loop
        self.all_loops: dict[str, list[PollLoop]] = {}     # name -> every incarnation's poll loop
        self.timeline = OwnershipTimeline()
        self.timeline.set_total(self.clock.now_ms(), self.ledger.partition_total())

    # ------------------------------------------------------------------ membership
    def add(
        self,
        name: Optional[str] = None,
        *,
        static: bool = False,
        topics: Optional[Iterable[str]] = None,
        start: bool = True,
        poll_delay_ms: Optional[int] = None,
        protocol: str = "classic",
        remote_assignor: Optional[str] = None,
        **config: Any,
    ) -> Any:
        """Start a new member (``config``: Kafka keys with underscores, e.g. partition_assignment_strategy).

        ``protocol``: ``"classic"`` or ``"consumer"`` (KIP-848; ``remote_assignor`` is its
        ``group.remote.assignor``, None = the coordinator's default)."""
        if protocol not in PROTOCOLS:
            raise SimulationError(f"member {name!r}: unknown group protocol {protocol!r} "
                                  f"(known: {', '.join(PROTOCOLS)})")
        if name is None:
            name = self.new_name()
        if name in self.members and self.members[name].alive:
            raise SimulationError(f"member {name!r} is already running")
        merged = {k.replace(".", "_"): v for k, v in self.member_config.items()}
        merged.update({k.replace(".", "_"): v for k, v in config.items()})
        if static:
            merged.setdefault("group_instance_id", name)
        max_poll_records = merged.pop("max_poll_records", None)
        cfg = MemberConfig.from_kafka(merged)
        subscription = list(topics) if topics is not None else sorted(self.cluster.partitions_per_topic)
        callbacks = self._callbacks(name)
        if protocol == "consumer":
            member: Any = self._consumer_member(name, cfg, subscription, remote_assignor, max_poll_records, callbacks)
        elif self.application is None:
            member = GroupMember(
                self.coordinator, clock=self.clock, cluster=self.cluster, topics=subscription,
                config=cfg, name=name, network_latency_ms=self.network_latency_ms,
                poll_delay_ms=self.poll_delay_of(name) if poll_delay_ms is None else poll_delay_ms,
                **callbacks,
            )
        else:
            model = self.application
            if max_poll_records is not None:
                model = ProcessingModel(int(max_poll_records), model.record_ms_median, model.record_ms_sigma, model.per)
            member = self._application_member(name, cfg, subscription, model, callbacks)
        if protocol == "classic":
            member.observer = self._classic_observer(name)
        self.members[name] = member
        self.incarnations[name] = self.incarnations.get(name, 0) + 1
        if name in self.down_since:
            self.down_ms[name] = self.down_ms.get(name, 0) + self.clock.now_ms() - self.down_since.pop(name)
        if start:
            member.start()
        return member

    def new_name(self) -> str:
        """The name the next member started without one gets (``member-0``, ``member-1``, ...)."""
        return f"member-{next(self._names)}"

    def stop(self, name: str) -> None:
        """Clean shutdown (revoke callbacks; LeaveGroup if dynamic)."""
        member = self.members[name]
        member.close()
        self._end_process(name, self.ledger.stopped)

    def crash(self, name: str) -> None:
        """Kill the process: no callback, no LeaveGroup."""
        member = self.members[name]
        member.crash()
        self._end_process(name, self.ledger.crashed)

    def _end_process(self, name: str, ledger_end: Any) -> None:
        orphaned = ledger_end(name)
        self.timeline.after_change(self.clock.now_ms(), name, 0, -orphaned)
        loop = self.loops.pop(name, None)
        if loop is not None:
            loop.stop()
        self.down_since[name] = self.clock.now_ms()

    def _callbacks(self, name: str) -> dict[str, Any]:
        """The ledger's callbacks for ``name``, also feeding the timeline and the member's poll loop."""
        ledger, timeline, clock = self.ledger, self.timeline, self.clock
        ledger.started(name)

        def owned_changed(owned: int) -> None:
            loop = self.loops.get(name)
            if loop is not None:
                loop.owned_changed(owned)

        def on_assign(partitions: frozenset[TopicPartition]) -> None:
            gained = ledger.assigned(name, partitions)
            owned = ledger.owned_count(name)
            timeline.after_change(clock.now_ms(), name, owned, gained)
            owned_changed(owned)

        def released(kind: str) -> Any:
            def on_release(partitions: frozenset[TopicPartition]) -> None:
                orphaned = ledger.released(name, partitions, kind)
                owned = ledger.owned_count(name)
                timeline.after_change(clock.now_ms(), name, owned, -orphaned)
                owned_changed(owned)
            return on_release

        return {"on_assign": on_assign, "on_revoke": released("revoked"), "on_lost": released("lost")}

    def _application_member(self, name: str, cfg: MemberConfig, topics: list[str], model: ProcessingModel,
                            callbacks: dict[str, Any]) -> GroupMember:
        """A member whose polls follow a seeded poll loop (seeded by (seed, name, incarnation))."""
        incarnation = self.incarnations.get(name, 0) + 1
        rng = np.random.default_rng([self.seed, _stable_hash(name), incarnation])
        holder: dict[str, GroupMember] = {}
        loop = PollLoop(self.clock, model, rng, cfg.max_poll_interval_ms,
                        on_poll_timeout=lambda: holder["m"].stall(),
                        on_late_poll=lambda: holder["m"].resume() if holder["m"].stalled else None)
        transport = PollGatedTransport(self.coordinator, self.clock, self.network_latency_ms, loop)
        member = GroupMember(transport, clock=self.clock, cluster=self.cluster, topics=topics, config=cfg,
                             name=name, next_poll_ms=loop.ms_to_next_poll, **callbacks)
        holder["m"] = member
        self.loops[name] = loop
        self.all_loops.setdefault(name, []).append(loop)
        return member

    def _consumer_member(self, name: str, cfg: MemberConfig, topics: list[str], remote_assignor: Optional[str],
                         max_poll_records: Optional[int], callbacks: dict[str, Any]) -> ConsumerProtocolMember:
        """A KIP-848 member; with an application model its reconciliations wait for its next poll."""
        incarnation = self.incarnations.get(name, 0) + 1
        transport = ConsumerTransport(self.coordinator, self.clock, self.network_latency_ms)
        at_next_poll = None
        if self.application is not None:
            model = self.application
            if max_poll_records is not None:
                model = ProcessingModel(int(max_poll_records), model.record_ms_median, model.record_ms_sigma, model.per)
            rng = np.random.default_rng([self.seed, _stable_hash(name), incarnation])
            holder: dict[str, ConsumerProtocolMember] = {}
            loop = PollLoop(self.clock, model, rng, cfg.max_poll_interval_ms,
                            on_poll_timeout=lambda: holder["m"].stall(),
                            on_late_poll=lambda: holder["m"].resume())
            self.loops[name] = loop
            self.all_loops.setdefault(name, []).append(loop)
            at_next_poll = loop.at_next_poll
        member = ConsumerProtocolMember(
            transport, clock=self.clock, topics=topics, config=cfg, name=name,
            member_id=f"{name}-{incarnation}-{_stable_hash(f'{self.seed}/{name}/{incarnation}'):016x}",
            remote_assignor=remote_assignor, at_next_poll=at_next_poll,
            on_fatal=lambda err: self._refused(name, "consumer", "ConsumerGroupHeartbeat", err.code.name, err.message),
            **callbacks)
        if self.application is not None:
            holder["m"] = member
        return member

    def _classic_observer(self, name: str) -> Any:
        def observe(member: GroupMember, event: str, detail: Any) -> None:
            if event == "fatal":
                self._refused(name, "classic", detail.api, detail.code.name, None)
        return observe

    def _refused(self, name: str, protocol: str, api: str, error: str, message: Optional[str]) -> None:
        """A member the coordinator refused for good: its process ends (it owns nothing from now on)."""
        self.refusals.append(Refusal(self.clock.now_ms(), name, protocol, api, error, message))
        self._end_process(name, self.ledger.stopped)

    def protocol_of(self, name: str) -> str:
        return getattr(self.members[name], "protocol", "classic")

    def restart(self, name: str, **config: Any) -> Any:
        """New incarnation of ``name`` with the previous config, ``config`` overriding (e.g. a new strategy)."""
        old = self.members[name]
        if old.alive:
            raise SimulationError(f"member {name!r} is still running; stop or crash it first")
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
        base["protocol"] = getattr(old, "protocol", "classic")
        if base["protocol"] == "consumer":
            base["remote_assignor"] = old.remote_assignor
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
    def running(self) -> list[Any]:
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

    def group_kind(self) -> Optional[str]:
        """What the coordinator holds under the group id now: "classic", "consumer", or None."""
        if self.coordinator.group(self.group_id) is not None:
            return "classic"
        return "consumer" if self.coordinator.consumer_group(self.group_id) is not None else None

    def generation(self) -> int:
        """The classic group's generation, or the consumer group's epoch (whichever holds the id)."""
        g = self.coordinator.group(self.group_id)
        if g is not None:
            return g.generation_id
        cg = self.coordinator.consumer_group(self.group_id)
        return cg.group_epoch if cg is not None else 0

    def is_stable(self) -> bool:
        """The group (either kind) at rest: every running member in it and done with its last change; every
        partition of a subscribed topic owned by exactly one running member.

        Classic: coordinator Stable, every member STABLE in its generation with nothing pending.  Consumer
        (KIP-848): the group Stable (target computed, every member at the target epoch) and every member has
        applied its last answer.  Cost O(members + subscribed topics): the ledger keeps per topic the count of
        partitions without a single owner, so nothing scans the partitions (this runs after every event while
        settling)."""
        cg = self.coordinator.consumer_group(self.group_id)
        if cg is not None and self.coordinator.group(self.group_id) is None:
            return self._consumer_group_stable(cg)
        g = self.coordinator.group(self.group_id)
        if g is not None and g.state in (GroupState.PREPARING_REBALANCE, GroupState.COMPLETING_REBALANCE):
            return False   # cheap exit first: this runs after every event while settling
        # the member that was not ready at the last call is usually still not ready: O(1) instead of a scan
        hint = self.members.get(self._unready_hint) if self._unready_hint is not None else None
        if g is not None and hint is not None and hint.alive and not self._member_ready(hint, g.generation_id):
            return False
        running = self.running
        if not running:
            return g is None or g.state in (GroupState.EMPTY, GroupState.DEAD)
        if g is None or g.state is not GroupState.STABLE:
            return False
        if len(g.members) != len(running):
            return False
        for m in running:
            if not self._member_ready(m, g.generation_id):
                self._unready_hint = m.name
                return False
        self._unready_hint = None
        return self._ledger_settled(running)

    def _consumer_group_stable(self, cg: Any) -> bool:
        running = self.running
        if not running:
            return cg.is_empty()
        if cg.state_name != "Stable" or len(cg.members) != len(running):
            return False
        epoch = cg.assignment_epoch
        hint = self.members.get(self._unready_hint) if self._unready_hint is not None else None
        if hint is not None and hint.alive and not self._member_ready(hint, epoch):
            return False
        for m in running:
            if not self._member_ready(m, epoch):
                self._unready_hint = m.name
                return False
        self._unready_hint = None
        return self._ledger_settled(running)

    def _ledger_settled(self, running: list[Any]) -> bool:
        subscribed = set().union(*(m.subscription for m in running))
        counts = self.cluster.partitions_per_topic
        for topic in subscribed:
            self._sync_ledger(topic, counts.get(topic, 0))
            if self.ledger.unsettled(topic):
                return False
        return True

    @staticmethod
    def _member_ready(m: Any, generation_id: int) -> bool:
        if isinstance(m, ConsumerProtocolMember):
            return m.ready(generation_id)
        return (m.state is MemberState.STABLE and m.generation.generation_id == generation_id
                and not m.rejoin_pending)

    def _sync_ledger(self, topic: str, count: int) -> None:
        """Make the ledger's partitions of ``topic`` those of the cluster (also after a test changed
        ``self.cluster`` directly).  Assumes partitions 0..n-1 are registered, as this harness does."""
        known = self.ledger.partition_count(topic)
        if known < count:
            self.ledger.add_topic_partitions(topic, known, count)
        elif known > count:
            self.ledger.remove_partitions(TopicPartition(topic, p) for p in range(count, known))

    # ------------------------------------------------------------------ cluster
    def set_partitions(self, topic: str, count: int, *, refresh: bool = False) -> None:
        """Grow (or create) a topic; members notice at their next metadata refresh (or now with ``refresh``)."""
        self.cluster.set_partitions(topic, count)
        self.topics.set(topic, count)
        self._sync_ledger(topic, count)
        self.timeline.set_total(self.clock.now_ms(), self.ledger.partition_total())
        if refresh:
            for m in self.running:
                m.refresh_metadata()

    def assignment(self) -> dict[str, frozenset[TopicPartition]]:
        return {name: m.assignment for name, m in self.members.items() if m.alive}


def _stable_hash(name: str) -> int:
    """A seed component from a name that does not change between runs (unlike ``hash``)."""
    return int.from_bytes(hashlib.blake2b(name.encode("utf-8"), digest_size=8).digest(), "big")
