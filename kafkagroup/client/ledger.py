"""Ownership ledger: who owns which partition right now, built only from the members' rebalance callbacks.

Each member's ``on_assign`` / ``on_revoke`` / ``on_lost`` report to the ledger (:meth:`OwnershipLedger.callbacks`);
a crashed process is reported with :meth:`OwnershipLedger.crashed` (a dead consumer stops consuming without a
callback).  The ledger flags the moment a partition is assigned to a member while another member still owns
it -- the thing the cooperative protocol (KIP-429) promises never happens::

    ledger = OwnershipLedger(clock)
    member = GroupMember(..., **ledger.callbacks("m1"))
    ...
    ledger.assert_exclusive()          # InvariantError naming the partition and both owners otherwise

It also keeps per-partition "unowned since" and per-member "owns nothing since" times so that a simulator can
report pauses, and per topic the number of partitions not owned by exactly one member (:meth:`unsettled`, what
"the group is settled" needs without scanning every partition).

An assignor may give one partition to several members on purpose (a broadcast assignor; Kafka's classic
protocol allows it): ``OwnershipLedger(clock, exclusive=False)`` then records no double ownership, and a
partition counts as settled when at least one member owns it.

Cost: O(partitions in the callback) per callback.  Memory: O(partitions + members); no per-callback history is
kept, and only the first :attr:`OwnershipLedger.KEPT_VIOLATIONS` double-ownership incidents are kept in full
(all are counted in :attr:`OwnershipLedger.violation_count`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterable, NamedTuple, Optional

from kafkagroup.messages.clock import Clock
from kafkagroup.errors import InvariantError
from kafkagroup.structs import TopicPartition

__all__ = ["OwnershipLedger", "DoubleOwnership", "PartitionStats", "MemberStats"]


class DoubleOwnership(NamedTuple):
    time_ms: int
    partition: TopicPartition
    owners: tuple[str, ...]            # previous owner(s), then the member it was assigned to


@dataclass
class PartitionStats:
    unowned_ms: int = 0                # total time nobody owned it (inside the measured window)
    max_pause_ms: int = 0              # longest single stretch without an owner
    moves: int = 0                     # assignments to a member other than its last owner
    unowned_since: Optional[int] = None
    last_owner: Optional[str] = None


@dataclass
class MemberStats:
    owned_nothing_ms: int = 0          # time alive (between start and stop) owning nothing
    waited_ms: int = 0                 # sum over its newly assigned partitions of how long they had been unowned
    gained: int = 0                    # partitions assigned that it did not own before
    moved_in: int = 0                  # ... of which the last owner was another member
    revoked: int = 0
    lost: int = 0
    empty_since: Optional[int] = None
    alive: bool = False
    owned: set = field(default_factory=set)


class OwnershipLedger:
    """Partition ownership from callbacks, with exclusivity checks and pause accounting (module docstring).

    ``owners`` holds the partitions that exist now (each with its current owners); ``partitions`` keeps the
    statistics of every partition ever seen, including removed ones (their pauses stay in the report).
    """

    #: double-ownership incidents kept in full in :attr:`violations`; later ones are only counted
    KEPT_VIOLATIONS = 100

    def __init__(self, clock: Clock, *, strict: bool = False, exclusive: bool = True) -> None:
        self.clock = clock
        self.strict = strict                 # raise at the offending callback instead of recording
        self.exclusive = exclusive           # False: several owners per partition are by design, not a violation
        self.owners: dict[TopicPartition, set[str]] = {}
        self._shared: set[TopicPartition] = set()   # partitions with more than one owner right now
        self._topic_partitions: dict[str, int] = {}  # existing partitions per topic
        self._unsettled: dict[str, int] = {}         # ... of which not settled (see _settled)
        self.violations: list[DoubleOwnership] = []
        self.violation_count = 0
        self.partitions: dict[TopicPartition, PartitionStats] = {}
        self.members: dict[str, MemberStats] = {}
        self.window_start = clock.now_ms()

    # ------------------------------------------------------------------ wiring
    def callbacks(self, member: str) -> dict[str, Callable[[frozenset[TopicPartition]], None]]:
        """``on_assign`` / ``on_revoke`` / ``on_lost`` keyword arguments for a GroupMember named ``member``."""
        self.started(member)
        return {
            "on_assign": lambda p: self.assigned(member, p),
            "on_revoke": lambda p: self.released(member, p, "revoked"),
            "on_lost": lambda p: self.released(member, p, "lost"),
        }

    def started(self, member: str) -> None:
        """A member process (re)started: it owns nothing yet."""
        st = self.members.setdefault(member, MemberStats())
        if not st.alive:
            st.alive = True
            st.empty_since = self.clock.now_ms() if not st.owned else None

    def crashed(self, member: str) -> None:
        """The member's process ended without callbacks (crash, kill): it owns nothing from now on."""
        st = self.members.setdefault(member, MemberStats())
        owned = frozenset(st.owned)
        self._release(member, owned, "crashed")
        self._close_member(st)

    def stopped(self, member: str) -> None:
        """The member closed cleanly.  Its callbacks normally released everything already; whatever is left
        is released as *revoked* (an orderly hand-over, as Kafka's close() revokes), not as lost."""
        st = self.members.setdefault(member, MemberStats())
        if st.owned:
            self._release(member, frozenset(st.owned), "revoked")
        self._close_member(st)

    def add_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        """Partitions that exist from now on (unowned until assigned)."""
        now = self.clock.now_ms()
        for tp in partitions:
            if tp not in self.owners:
                self._register(tp, now)

    def remove_partitions(self, partitions: Iterable[TopicPartition]) -> None:
        """Partitions that no longer exist (a topic shrank or was deleted): their owners stop owning them
        without a callback; their statistics so far are kept.  Later callbacks naming them are ignored."""
        now = self.clock.now_ms()
        for tp in partitions:
            owners = self.owners.pop(tp, None)
            if owners is None:
                continue
            self._topic_partitions[tp.topic] -= 1
            if not self._settled(len(owners)):
                self._unsettled[tp.topic] -= 1
            self._shared.discard(tp)
            for member in owners:
                st = self.members[member]
                st.owned.discard(tp)
                if not st.owned and st.alive and st.empty_since is None:
                    st.empty_since = now
            ps = self.partitions[tp]
            if ps.unowned_since is not None:
                pause = now - max(ps.unowned_since, self.window_start)
                ps.unowned_ms += pause
                ps.max_pause_ms = max(ps.max_pause_ms, pause)
                ps.unowned_since = None

    def _register(self, tp: TopicPartition, now: int) -> set[str]:
        owners: set[str] = set()
        self.owners[tp] = owners
        ps = self.partitions.get(tp)
        if ps is None:
            self.partitions[tp] = PartitionStats(unowned_since=now)
        else:   # it existed before, was removed, and exists again
            ps.unowned_since = now
        self._topic_partitions[tp.topic] = self._topic_partitions.get(tp.topic, 0) + 1
        self._unsettled[tp.topic] = self._unsettled.get(tp.topic, 0) + 1   # no owner yet
        return owners

    def _settled(self, owners: int) -> bool:
        """One owner (exclusive ledger) or at least one (exclusive=False)."""
        return owners == 1 if self.exclusive else owners >= 1

    def _owner_count_changed(self, tp: TopicPartition, before: int, after: int) -> None:
        was, now = self._settled(before), self._settled(after)
        if was != now:
            self._unsettled[tp.topic] += 1 if was else -1

    def reset_window(self) -> None:
        """Start measuring now: pause counters restart, ownership is kept."""
        now = self.clock.now_ms()
        self.window_start = now
        for ps in self.partitions.values():
            ps.unowned_ms = ps.max_pause_ms = ps.moves = 0
            if ps.unowned_since is not None:
                ps.unowned_since = now
        for st in self.members.values():
            st.owned_nothing_ms = st.waited_ms = st.gained = st.moved_in = st.revoked = st.lost = 0
            if st.empty_since is not None:
                st.empty_since = now

    # ------------------------------------------------------------------ transitions
    def assigned(self, member: str, partitions: frozenset[TopicPartition]) -> None:
        now = self.clock.now_ms()
        st = self.members.setdefault(member, MemberStats(alive=True))
        for tp in partitions:
            owners = self.owners.get(tp)
            if owners is None:
                owners = self._register(tp, now)
            others = owners - {member}
            if others and self.exclusive:
                self.violation_count += 1
                if len(self.violations) < self.KEPT_VIOLATIONS:
                    self.violations.append(DoubleOwnership(now, tp, (*sorted(others), member)))
                if self.strict:
                    raise InvariantError(f"t={now}: partition {tp!r} assigned to {member!r} while owned by "
                                         f"{sorted(others)}")
            ps = self.partitions[tp]
            if member not in owners:
                st.gained += 1
                if ps.unowned_since is not None:
                    pause = now - max(ps.unowned_since, self.window_start)
                    ps.unowned_ms += pause
                    ps.max_pause_ms = max(ps.max_pause_ms, pause)
                    st.waited_ms += pause
                    ps.unowned_since = None
                if ps.last_owner is not None and ps.last_owner != member:
                    ps.moves += 1
                    st.moved_in += 1
                ps.last_owner = member
                owners.add(member)
                self._owner_count_changed(tp, len(owners) - 1, len(owners))
            if len(owners) > 1:
                self._shared.add(tp)
            st.owned.add(tp)
        if st.owned and st.empty_since is not None:
            st.owned_nothing_ms += now - max(st.empty_since, self.window_start)
            st.empty_since = None

    def released(self, member: str, partitions: frozenset[TopicPartition], kind: str) -> None:
        self._release(member, frozenset(partitions), kind)

    def _release(self, member: str, partitions: frozenset[TopicPartition], kind: str) -> None:
        now = self.clock.now_ms()
        st = self.members.setdefault(member, MemberStats(alive=True))
        for tp in partitions:
            owners = self.owners.get(tp)
            if owners is None or member not in owners:
                continue   # Kafka may call revoke/lost with partitions already dropped (e.g. empty eager revoke)
            owners.discard(member)
            self._owner_count_changed(tp, len(owners) + 1, len(owners))
            if len(owners) <= 1:
                self._shared.discard(tp)
            st.owned.discard(tp)
            if kind == "revoked":
                st.revoked += 1
            elif kind in ("lost", "crashed"):
                st.lost += 1
            if not owners:
                self.partitions[tp].unowned_since = now
        if not st.owned and st.alive and st.empty_since is None:
            st.empty_since = now

    def _close_member(self, st: MemberStats) -> None:
        now = self.clock.now_ms()
        if st.empty_since is not None:
            st.owned_nothing_ms += now - max(st.empty_since, self.window_start)
        st.empty_since = None
        st.alive = False

    # ------------------------------------------------------------------ queries
    def partition_count(self, topic: str) -> int:
        """Partitions of ``topic`` that exist now."""
        return self._topic_partitions.get(topic, 0)

    def unsettled(self, topic: str) -> int:
        """Partitions of ``topic`` not owned by exactly one member right now (by at least one when not
        ``exclusive``); kept incrementally: O(1)."""
        return self._unsettled.get(topic, 0)

    def owner_of(self, tp: TopicPartition) -> set[str]:
        return set(self.owners.get(tp, ()))

    def owned_by(self, member: str) -> frozenset[TopicPartition]:
        st = self.members.get(member)
        return frozenset(st.owned) if st else frozenset()

    def double_owned(self) -> dict[TopicPartition, set[str]]:
        """Partitions owned by more than one member right now (kept incrementally: O(result))."""
        return {tp: set(self.owners[tp]) for tp in self._shared}

    def assert_exclusive(self) -> None:
        """InvariantError if any partition is (or was, at some callback) owned by two members at once."""
        if not self._shared and not self.violations:
            return
        now = self.double_owned()
        if now or self.violations:
            first = self.violations[0] if self.violations else None
            raise InvariantError(
                f"double ownership: now {sorted((repr(k), sorted(v)) for k, v in now.items())[:5]}; "
                f"{self.violation_count} violation(s) recorded, first {first}"
            )

    def unowned(self) -> set[TopicPartition]:
        return {tp for tp, o in self.owners.items() if not o}

    def close_window(self) -> None:
        """Account the open intervals up to now (call before reading the stats)."""
        now = self.clock.now_ms()
        for ps in self.partitions.values():
            if ps.unowned_since is not None:   # only existing partitions have an open interval
                pause = now - max(ps.unowned_since, self.window_start)
                ps.unowned_ms += pause
                ps.max_pause_ms = max(ps.max_pause_ms, pause)
                ps.unowned_since = now
        for st in self.members.values():
            if st.empty_since is not None:
                st.owned_nothing_ms += now - max(st.empty_since, self.window_start)
                st.empty_since = now
        self.window_start = now
