"""Seeded group churn on the real coordinator, members and assignors, judged only by the members' callbacks.

:func:`run_churn` drives one group through ``steps`` random actions -- dynamic and static members joining,
leaving cleanly, crashing, static instances restarting, subscriptions changing, partitions being added,
rejoins requested -- with per-member network latency and poll delays, and a :class:`CallbackTracker` fed only
by each member's ``on_assign`` / ``on_revoke`` / ``on_lost`` (plus "the process died" for a crash: a dead
process consumes nothing).  It raises :class:`ChurnFailure` naming the seed and step:

* at the first partition assigned to a member while another member still owns it (both named);
* when a member's own ``assignment`` disagrees with what its callbacks said;
* after every quiet period (metadata refreshed, two minutes with no action) unless every partition of every
  topic some live member subscribes to has exactly one owner, a live member subscribed to that topic.

What the model assumes, and why:

* Time moves in one of two ways (``clock``).  "timer": timer by timer, each timer runs at its own deadline.
  "coarse": ``ManualClock.advance(ms)`` by the whole step, as issue 10's repro does; it runs every due timer
  with ``now`` at the *end* of the step (spec section 7.1), so a coarse step turns a 5 ms network hop into a
  hop of up to the whole step (5 s), and the coordinator expires members whose answers are merely late.  A
  member then learns of its expiry only afterwards; its session guard (kafkagroup/client/session_guard.py)
  reports its partitions lost before the coordinator can hand them on, so the property holds in both modes.
  Quiet periods advance 1 s at a time in "coarse" mode, timer by timer in "timer" mode.
* No false losses: once a quiet period has run for QUIET_SETTLE_MS, no member may report a partition lost
  (nothing happens then; a loss would be the session guard firing in a healthy group).  In "timer" mode the
  guard may never fire at all.
* A member that hits a fatal error reports its partitions lost at once (``FencedInstanceIdException``:
  another process now holds its ``group.instance.id``, e.g. a crashed incarnation's JoinGroup still in flight);
  the application closes it one poll delay later, as a Java application must.
* A static instance starts with the subscription it last had, and an instance the group may still hold
  (down for less than its session timeout) comes back only once the group has caught up with the last
  change (partitions added, a subscription changed, a static member gone down in the middle of a rebalance
  or of a cooperative handover): a rebalance completed since, every running member stable and on the
  current metadata.  Kafka does not rebalance when a static member rejoins a Stable group
  (KIP-345: only a change of the selected protocol triggers one), and a returning static leader skips the
  assignment (KIP-814) and takes the metadata it sees on its return as the metadata of the group's
  assignment; so an instance that returns before the group has caught up -- under topics the group has not
  seen, after partitions the group has not assigned yet, or in place of a member that had revoked partitions
  for a follow-up rebalance it never asked for (its restarted process owns nothing and has nothing to
  revoke, so nobody triggers it) -- leaves partitions unassigned until the next change, in Kafka as here
  (``GroupMember._on_leader_elected``).  For the same reason no partitions are added while a static instance's
  first JoinGroup is unanswered: if that instance returns as the leader, it takes the metadata it sees on its
  return as the group's, so partitions added meanwhile stay unassigned (seen with the coarse clock, where a
  JoinGroup takes seconds).
"""
from __future__ import annotations

import collections
import itertools
import random
from dataclasses import dataclass, field
from typing import Iterable

from kafkagroup.client import ClusterMetadata, GroupMember
from kafkagroup.client.generation import MemberState
from kafkagroup.coordinator import GroupCoordinator
from kafkagroup.coordinator.group import GroupState
from kafkagroup.messages.clock import ManualClock
from kafkagroup.structs import TopicPartition

TOPIC_SETS = (("a", "b"), ("a", "b"), ("a", "b", "c"), ("c",), ("a",), ("b",))
STEP_MS = (0, 1, 3, 10, 50, 200, 1000, 5000)
QUIET_EVERY = 60          # steps between quiet periods
QUIET_MS = 120_000        # length of a quiet period
QUIET_SETTLE_MS = 20_000  # from then on, nothing may be lost in a quiet period
COARSE_QUIET_STEP_MS = 1000


class ChurnFailure(AssertionError):
    """The property failed; the message names seed, step, partition and members."""


@dataclass
class ChurnStats:
    steps: int = 0
    actions: collections.Counter = field(default_factory=collections.Counter)
    assigned: int = 0                # partitions handed to a member (sum over on_assign calls)
    quiet_checks: int = 0
    simulated_ms: int = 0
    session_lapses: int = 0          # times a member's session guard fired


class CallbackTracker:
    """Who owns what, from callbacks alone.  The first offence is kept in :attr:`failure` (a callback that
    raised would only be kept by the member as the application's error) and raised by :meth:`check`."""

    def __init__(self, where: "Where") -> None:
        self.where = where
        self.owners: dict[TopicPartition, set[str]] = collections.defaultdict(set)
        self.owned: dict[str, set[TopicPartition]] = collections.defaultdict(set)
        self.assigned_total = 0
        self.quiet = False               # inside a settled quiet period: a loss is a failure
        self.failure: str | None = None

    def _fail(self, message: str) -> None:
        if self.failure is None:
            self.failure = f"{self.where}: {message}"

    def check(self) -> None:
        if self.failure is not None:
            raise ChurnFailure(self.failure)

    def assigned(self, member: str, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            others = self.owners[tp] - {member}
            if others:
                self._fail(f"{tp} assigned to {member} while {sorted(others)} still own it")
            self.owners[tp].add(member)
            self.owned[member].add(tp)
            self.assigned_total += 1

    def released(self, member: str, partitions: Iterable[TopicPartition], how: str) -> None:
        if how == "lost" and self.quiet and partitions:
            self._fail(f"{member} reported {sorted(partitions)[:4]} lost in a quiet period (false loss)")
        for tp in partitions:
            if member not in self.owners[tp]:
                self._fail(f"{member} reported {tp} {how} without owning it")
            self.owners[tp].discard(member)
            self.owned[member].discard(tp)

    def process_died(self, member: str) -> None:
        self.released(member, set(self.owned[member]), "gone with its crashed process")


@dataclass
class Where:
    seed: int
    strategy: str
    membership: str
    step: int = -1
    clock: ManualClock | None = None

    def __str__(self) -> str:
        now = self.clock.now_ms() if self.clock is not None else 0
        return f"seed {self.seed} ({self.strategy}, {self.membership}) step {self.step} t={now}ms"


def advance_timer_by_timer(clock: ManualClock, ms: int) -> None:
    """Move ``clock`` forward by ``ms``, stopping at every deadline so each timer runs at its own time."""
    target = clock.now_ms() + ms
    while True:
        due = clock.next_deadline()
        step_to = target if due is None or due > target else max(due, clock.now_ms())
        clock.advance_to(step_to)
        if step_to >= target:
            return


def run_churn(seed: int, steps: int, strategy: str, membership: str = "dynamic", clock_mode: str = "timer"
              ) -> ChurnStats:
    """One seeded churn run (module docstring); ``membership`` is "dynamic" (mostly dynamic members, a few
    static) or "static" (mostly static members, restarted after most crashes); ``clock_mode`` is "timer" or
    "coarse"."""
    if clock_mode not in ("timer", "coarse"):
        raise ValueError(f"clock_mode must be 'timer' or 'coarse', not {clock_mode!r}")
    rng = random.Random(f"{seed}/{strategy}/{membership}" + ("" if clock_mode == "timer" else "/coarse"))
    clock = ManualClock(0, tie_break=rng.choice(["fifo", "lifo"]))
    ids = itertools.count(1)
    coordinator = GroupCoordinator(
        {"group.initial.rebalance.delay.ms": rng.choice([0, 100, 3000])}, clock=clock, store=":memory:",
        enable_offset_expiration=False, member_id_factory=lambda prefix: f"{prefix}-{next(ids):06d}",
    )
    cluster = ClusterMetadata({"a": 6, "b": 3, "c": 10})
    where = Where(seed, strategy, membership, clock=clock)
    if clock_mode == "coarse":
        where.membership += ", coarse clock"
        advance = clock.advance
    else:
        def advance(ms: int) -> None:
            advance_timer_by_timer(clock, ms)
    tracker = CallbackTracker(where)
    stats = ChurnStats()
    members: dict[str, GroupMember] = {}
    incarnation: collections.Counter = collections.Counter()
    dynamic_names = itertools.count()
    static_share = 0.25 if membership == "dynamic" else 0.8
    instance_topics = {f"s{i}": list(rng.choice(TOPIC_SETS)) for i in range(6)}
    away: dict[str, int] = {}        # static instance -> time until which the group may still hold it
    changed_at: list[int | None] = [None]   # generation at the last change the group has not caught up with

    def note_change() -> None:
        group = coordinator.group("g")
        changed_at[0] = group.generation_id if group is not None else 0

    def caught_up() -> bool:
        group = coordinator.group("g")
        if changed_at[0] is None or group is None or not group.members:
            return True
        running = [m for m in members.values() if m.alive]
        # _metadata: the member's metadata snapshot (no public accessor; tests only)
        if group.state is GroupState.STABLE and group.generation_id > changed_at[0] and all(
                m.state is MemberState.STABLE and not m.rejoin_pending and m._metadata.version == cluster.version
                for m in running):
            changed_at[0] = None
        return changed_at[0] is None

    def may_start(instance: str) -> bool:
        return away.get(instance, -1) < clock.now_ms() or caught_up()

    def went_down(key: str) -> None:
        instance = key.split("#")[0]
        if instance in instance_topics:
            member = members[key]
            away[instance] = clock.now_ms() + member.config.session_timeout_ms + 1
            group = coordinator.group("g")
            if member.rejoin_pending or member.state is not MemberState.STABLE or (
                    group is not None and group.state is not GroupState.STABLE):
                note_change()     # it went down in the middle of a rebalance or of a cooperative handover

    def start(instance: str | None = None) -> None:
        name = instance or f"m{next(dynamic_names)}"
        incarnation[name] += 1
        key = f"{name}#{incarnation[name]}"
        config = {"group.id": "g", "partition.assignment.strategy": [strategy],
                  "session.timeout.ms": rng.choice([6000, 10000]), "heartbeat.interval.ms": rng.choice([500, 3000]),
                  "max.poll.interval.ms": 300_000}
        if instance:
            config["group.instance.id"] = instance
        member = GroupMember(
            coordinator, clock=clock, cluster=cluster, config=config, name=key,
            topics=instance_topics[instance] if instance else list(rng.choice(TOPIC_SETS)),
            on_assign=lambda p, k=key: tracker.assigned(k, p),
            on_revoke=lambda p, k=key: tracker.released(k, p, "revoked"),
            on_lost=lambda p, k=key: tracker.released(k, p, "lost"),
            poll_delay_ms=rng.choice([0, 10, 200]), network_latency_ms=rng.choice([0, 1, 5, 40]),
        )

        def observe(m: GroupMember, event: str, detail: object) -> None:
            if event == "fatal":   # the application's next poll raises; it closes the consumer
                clock.call_at(clock.now_ms() + m.poll_delay_ms, m.close)
            elif event == "closed" and m.fatal_error is not None:
                went_down(m.name)

        member.observer = observe
        members[key] = member
        away.pop(name, None)
        member.start()
        stats.actions["start_static" if instance else "start_dynamic"] += 1

    def free_instance() -> str | None:
        running = {k.split("#")[0] for k, m in members.items() if m.alive}
        free = [i for i in instance_topics if i not in running and may_start(i)]
        return rng.choice(free) if free else None

    for _ in range(rng.randint(1, 5)):
        start(free_instance() if rng.random() < static_share else None)

    for step in range(steps):
        where.step = step
        live = [k for k, m in members.items() if m.alive]
        r = rng.random()
        if r < .12 and len(live) < 12:
            start(free_instance() if rng.random() < static_share else None)
        elif r < .20 and live:
            key = rng.choice(live)
            members[key].close()
            went_down(key)
            stats.actions["close"] += 1
            tracker.check()
            if tracker.owned[key]:
                raise ChurnFailure(f"{where}: {key} closed but its callbacks left it owning "
                                   f"{sorted(tracker.owned[key])[:5]}")
        elif r < .28 and live:
            key = rng.choice(live)
            members[key].crash()
            tracker.process_died(key)
            went_down(key)
            stats.actions["crash"] += 1
            instance = key.split("#")[0]
            if instance in instance_topics and rng.random() < .7 and may_start(instance):
                start(instance)           # the same static instance restarts at once
        elif r < .32 and live:
            key = rng.choice(live)
            topics = list(rng.choice(TOPIC_SETS))
            members[key].subscribe(topics)
            instance = key.split("#")[0]
            if instance in instance_topics:
                instance_topics[instance] = topics
            note_change()
            stats.actions["subscribe"] += 1
        elif r < .36:
            topic = rng.choice("abc")
            count = cluster.partitions_per_topic[topic] + rng.randint(1, 4)
            restarting = any(m.alive and m.group_instance_id and not m.generation_history for m in members.values())
            if count <= 40 and not restarting:
                cluster.set_partitions(topic, count)
                note_change()
                stats.actions["add_partitions"] += 1
            for key in live:
                if rng.random() < .5:
                    members[key].refresh_metadata()
        elif r < .40 and live:
            members[rng.choice(live)].request_rejoin()
            stats.actions["request_rejoin"] += 1
        advance(rng.choice(STEP_MS))
        tracker.check()
        for key, member in members.items():
            if member.alive and set(member.assignment) != tracker.owned[key]:
                diff = sorted(set(member.assignment) ^ tracker.owned[key])[:4]
                raise ChurnFailure(f"{where}: {key}'s assignment disagrees with its callbacks on {diff}")
        if step % QUIET_EVERY == QUIET_EVERY - 1:
            _quiet_period(members, cluster, clock, tracker, where, clock_mode)
            stats.quiet_checks += 1
    stats.steps = steps
    stats.session_lapses = sum(m.stats["session_lapses"] for m in members.values())
    if clock_mode == "timer" and stats.session_lapses:
        raise ChurnFailure(f"{where}: the session guard fired {stats.session_lapses} times with the clock moved "
                           f"timer by timer")
    stats.assigned = tracker.assigned_total
    stats.simulated_ms = clock.now_ms()
    return stats


def _quiet_period(members: dict[str, GroupMember], cluster: ClusterMetadata, clock: ManualClock,
                  tracker: CallbackTracker, where: Where, clock_mode: str) -> None:
    """Nothing happens for QUIET_MS (every live member refreshes its metadata first); after QUIET_SETTLE_MS
    nothing may be lost; at the end every partition of a subscribed topic must have exactly one owner, live and
    subscribed to it."""
    for member in members.values():
        if member.alive:
            member.refresh_metadata()
    if clock_mode == "coarse":
        for _ in range(QUIET_SETTLE_MS // COARSE_QUIET_STEP_MS):
            clock.advance(COARSE_QUIET_STEP_MS)
        tracker.quiet = True
        for _ in range((QUIET_MS - QUIET_SETTLE_MS) // COARSE_QUIET_STEP_MS):
            clock.advance(COARSE_QUIET_STEP_MS)
    else:
        advance_timer_by_timer(clock, QUIET_SETTLE_MS)
        tracker.quiet = True
        advance_timer_by_timer(clock, QUIET_MS - QUIET_SETTLE_MS)
    tracker.quiet = False
    tracker.check()
    live = {k: m for k, m in members.items() if m.alive}
    subscribed = set().union(*(m.subscription for m in live.values())) if live else set()
    for topic in sorted(subscribed):
        for p in range(cluster.partitions_per_topic[topic]):
            tp = TopicPartition(topic, p)
            owners = sorted(tracker.owners[tp])
            ok = len(owners) == 1 and owners[0] in live and topic in live[owners[0]].subscription
            if not ok:
                raise ChurnFailure(f"{where}: after a quiet period {tp} is owned by {owners} "
                                   f"(live members: {sorted(live)})")
