"""The simulator's ownership ledger: who owns which partition, on numpy arrays (one slot per partition).

Same rules and figures as :class:`kafkagroup.client.ledger.OwnershipLedger` (fed by the members' rebalance
callbacks; a partition assigned while another member owns it is a double-ownership incident; per partition
the time without an owner, the longest pause and the moves; per member the time owning nothing, the waits of
what it gained, gains, moves in, revocations, losses), for groups of 1,000 members and 100,000 partitions: a
callback costs O(k log k) numpy work for its k partitions instead of a dozen dict and set operations per
partition, and the ledger holds no Python object per partition.

Layout: every partition ever seen gets a dense id (``pid``) on first sight, and an entry in a dict from its
``(topic, partition)`` pair to the pid (a callback's partitions become pids with one C-level ``map`` over that
dict); per pid ``owner`` (the member index when exactly one member owns it, else -1), ``n_owners``,
``unowned_since`` (-1: owned now or removed), ``unowned_ms``, ``max_pause_ms``, ``moves``, ``last_owner`` and
``exists``.  Partitions with two or more owners (only zombies of an eager group, or a defect) keep their owner
set in a dict.  A member keeps a count of what it owns; its partitions are found in ``owner`` when needed (a
crash, a stop, a query: O(partitions) numpy).  "Partitions of a topic not owned by exactly one member" is
counted on demand from the arrays (the harness asks only when the group otherwise looks settled).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

import numpy as np

from kafkagroup.client.ledger import DoubleOwnership, PartitionStats
from kafkagroup.errors import InvariantError
from kafkagroup.messages.clock import Clock
from kafkagroup.structs import TopicPartition

__all__ = ["PartitionLedger", "MemberOwnership"]

_NONE = -1
_EMPTY = np.zeros(0, dtype=np.int64)


@dataclass
class MemberOwnership:
    """A member's figures (as :class:`kafkagroup.client.ledger.MemberStats`); ``owned`` is a count."""

    owned_nothing_ms: int = 0
    waited_ms: int = 0
    gained: int = 0
    moved_in: int = 0
    revoked: int = 0
    lost: int = 0
    empty_since: Optional[int] = None
    alive: bool = False
    owned: int = 0                      # partitions owned now


class PartitionLedger:
    """Array-backed ownership ledger (module docstring); the simulator's :class:`GroupHarness` feeds it."""

    #: double-ownership incidents kept in full in :attr:`violations`; later ones are only counted
    KEPT_VIOLATIONS = 100

    def __init__(self, clock: Clock, *, strict: bool = False, exclusive: bool = True) -> None:
        self.clock = clock
        self.strict = strict
        self.exclusive = exclusive   # False: several owners per partition are by design (no violation; settled
        #                              means at least one owner), as OwnershipLedger(exclusive=False)
        self.members: dict[str, MemberOwnership] = {}
        self._member_index: dict[str, int] = {}
        self._member_names: list[str] = []
        self._topic_index: dict[str, int] = {}
        self._topic_names: list[str] = []
        self._topic_pids: list[np.ndarray] = []        # per topic: partition number -> pid (-1 never seen)
        self._topic_existing: list[int] = []
        self._pid: dict[tuple[str, int], int] = {}      # (topic, partition) -> pid, every partition ever seen
        # per member: the frozenset its last on_assign received and its pids.  A member revokes or loses the very
        # set it was assigned (eager: every rebalance; any protocol: a stop), so that release reuses the pids
        # instead of looking up every partition again.  Only frozensets (immutable; the reference kept here
        # keeps the identity from being reused); pids never change once given.
        self._assigned_pids: dict[str, tuple[frozenset, np.ndarray]] = {}
        self._size = 0
        cap = 1024
        self._topic_of = np.zeros(cap, dtype=np.int32)
        self._partition_of = np.zeros(cap, dtype=np.int32)
        self._owner = np.full(cap, _NONE, dtype=np.int32)
        self._n_owners = np.zeros(cap, dtype=np.int32)
        self._unowned_since = np.full(cap, _NONE, dtype=np.int64)
        self._unowned_ms = np.zeros(cap, dtype=np.int64)
        self._max_pause = np.zeros(cap, dtype=np.int64)
        self._moves = np.zeros(cap, dtype=np.int64)
        self._last_owner = np.full(cap, _NONE, dtype=np.int32)
        self._exists = np.zeros(cap, dtype=bool)
        self._shared: dict[int, set[int]] = {}          # pid -> owners (member indexes), when two or more
        self.violations: list[DoubleOwnership] = []
        self.violation_count = 0
        self.window_start = clock.now_ms()

    # ------------------------------------------------------------------ members
    def _member(self, name: str) -> int:
        i = self._member_index.get(name)
        if i is None:
            i = self._member_index[name] = len(self._member_names)
            self._member_names.append(name)
        return i

    def started(self, member: str) -> None:
        """A member process (re)started: it owns nothing yet."""
        self._member(member)
        st = self.members.setdefault(member, MemberOwnership())
        if not st.alive:
            st.alive = True
            st.empty_since = self.clock.now_ms() if not st.owned else None

    def crashed(self, member: str) -> int:
        """The process ended without callbacks: it owns nothing from now on.  Returns the partitions left
        without any owner."""
        st = self.members.setdefault(member, MemberOwnership())
        orphaned = self._release_pids(member, self._owned_pids(member), "crashed")
        self._close_member(st)
        return orphaned

    def stopped(self, member: str) -> int:
        """Clean close: whatever the callbacks left is released as revoked.  Returns the partitions left
        without any owner."""
        st = self.members.setdefault(member, MemberOwnership())
        orphaned = self._release_pids(member, self._owned_pids(member), "revoked") if st.owned else 0
        self._close_member(st)
        return orphaned

    def _close_member(self, st: MemberOwnership) -> None:
        now = self.clock.now_ms()
        if st.empty_since is not None:
            st.owned_nothing_ms += now - max(st.empty_since, self.window_start)
        st.empty_since = None
        st.alive = False

    # ------------------------------------------------------------------ partitions
    def _grow(self, need: int) -> None:
        cap = len(self._owner)
        if need <= cap:
            return
        new = max(need, 2 * cap)
        for name, fill in (("_topic_of", 0), ("_partition_of", 0), ("_owner", _NONE), ("_n_owners", 0),
                           ("_unowned_since", _NONE), ("_unowned_ms", 0), ("_max_pause", 0), ("_moves", 0),
                           ("_last_owner", _NONE), ("_exists", False)):
            old = getattr(self, name)
            arr = np.full(new, fill, dtype=old.dtype)
            arr[:cap] = old
            setattr(self, name, arr)

    def _topic(self, topic: str) -> int:
        t = self._topic_index.get(topic)
        if t is None:
            t = self._topic_index[topic] = len(self._topic_names)
            self._topic_names.append(topic)
            self._topic_pids.append(np.full(0, _NONE, dtype=np.int64))
            self._topic_existing.append(0)
        return t

    def _pids(self, t: int, partitions: np.ndarray, register: bool) -> np.ndarray:
        """pids of ``partitions`` (numbers) of topic ``t``; unseen ones get new pids when ``register``
        (and exist from now on, unowned), else -1."""
        table = self._topic_pids[t]
        if len(partitions) and int(partitions.min()) < 0:
            raise InvariantError(f"partition {self._topic_names[t]}-{int(partitions.min())}: a partition number "
                                 "is never negative")
        top = int(partitions.max()) + 1 if len(partitions) else 0
        if top > len(table):
            grown = np.full(max(top, 2 * len(table)), _NONE, dtype=np.int64)
            grown[:len(table)] = table
            table = self._topic_pids[t] = grown
        pids = table[partitions]
        if register:
            fresh = partitions[pids < 0]
            if len(fresh):
                new = np.arange(self._size, self._size + len(fresh), dtype=np.int64)
                self._grow(self._size + len(fresh))
                self._size += len(fresh)
                table[fresh] = new
                self._topic_of[new] = t
                self._partition_of[new] = fresh
                topic = self._topic_names[t]
                self._pid.update(zip(zip([topic] * len(fresh), fresh.tolist()), new.tolist()))
                pids = table[partitions]
            gone = np.unique(pids[~self._exists[pids]])
            if len(gone):   # first seen, or removed before and back now: exists, unowned
                self._exists[gone] = True
                self._unowned_since[gone] = self.clock.now_ms()
                self._topic_existing[t] += len(gone)
        return pids

    def _pids_of(self, partitions: Iterable[tuple[str, int]], register: bool) -> np.ndarray:
        """Sorted unique pids of ``(topic, partition)`` pairs (unknown ones dropped when not registering).

        The pairs are split with ``zip`` and the topics mapped with ``map`` (C loops); what remains per
        partition is numpy work."""
        by_topic = getattr(partitions, "by_topic", None)   # a member's decoded assignment (AssignedPartitions)
        if by_topic is not None:
            return self._pids_by_topic(by_topic, register)
        pairs = partitions if isinstance(partitions, (frozenset, set, list, tuple)) else list(partitions)
        if not pairs:
            return _EMPTY
        try:   # every pair seen before (the usual case): one C-level pass over the index
            pids = np.fromiter(map(self._pid.__getitem__, pairs), dtype=np.int64, count=len(pairs))
        except KeyError:
            pass
        else:
            pids.sort()
            if isinstance(pairs, (frozenset, set)) or len(pids) < 2 or (pids[1:] != pids[:-1]).all():
                if not register or self._exists[pids].all():
                    return pids
        topics, numbers = zip(*pairs)
        number = np.fromiter(numbers, dtype=np.int64, count=len(numbers))
        distinct = set(topics)
        if len(distinct) == 1:
            groups = [(next(iter(distinct)), number)]
        else:
            code = {t: i for i, t in enumerate(distinct)}
            codes = np.fromiter(map(code.__getitem__, topics), dtype=np.int64, count=len(topics))
            groups = [(t, number[codes == i]) for t, i in code.items()]
        chunks = []
        for topic, numbers_of_topic in groups:
            if not register and topic not in self._topic_index:
                continue
            pids = self._pids(self._topic(topic), numbers_of_topic, register)
            chunks.append(pids if register else pids[pids >= 0])
        if not chunks:
            return _EMPTY
        return np.unique(np.concatenate(chunks) if len(chunks) > 1 else chunks[0])

    def _pids_by_topic(self, by_topic: Iterable[tuple[str, Iterable[int]]], register: bool) -> np.ndarray:
        """``_pids_of`` for partitions given per topic: one table lookup per topic."""
        index, tables = self._topic_index, self._topic_pids
        try:   # the usual case: every partition seen before, none twice, all exist
            numbers = [np.array(nums, dtype=np.int64) for _, nums in by_topic]
            if not all(len(a) and a.min() >= 0 for a in numbers):
                raise IndexError   # an empty or a negative number (wraps around in numpy): the general path
            chunks = [tables[index[topic]][a] for (topic, _), a in zip(by_topic, numbers)]
        except (KeyError, IndexError):
            pass
        else:
            if not chunks:
                return _EMPTY
            pids = np.concatenate(chunks) if len(chunks) > 1 else chunks[0]
            if pids.min() >= 0:
                pids.sort()
                if (len(pids) < 2 or (pids[1:] != pids[:-1]).all()) and (not register or self._exists[pids].all()):
                    return pids
        chunks = []
        for topic, numbers in by_topic:
            if not register and topic not in self._topic_index:
                continue
            pids = self._pids(self._topic(topic), np.fromiter(numbers, dtype=np.int64), register)
            chunks.append(pids if register else pids[pids >= 0])
        if not chunks:
            return _EMPTY
        return np.unique(np.concatenate(chunks) if len(chunks) > 1 else chunks[0])

    def add_topic_partitions(self, topic: str, start: int, stop: int) -> None:
        """Partitions ``start .. stop-1`` of ``topic`` exist from now on (unowned until assigned)."""
        if stop > start:
            self._pids(self._topic(topic), np.arange(start, stop, dtype=np.int64), True)

    def add_partitions(self, partitions: Iterable[tuple[str, int]]) -> None:
        """Partitions that exist from now on (unowned until assigned)."""
        self._pids_of(partitions, True)

    def remove_partitions(self, partitions: Iterable[tuple[str, int]]) -> None:
        """Partitions that no longer exist: their owners stop owning them without a callback; their figures
        so far are kept.  Later callbacks naming them register them again."""
        pids = self._pids_of(partitions, False)
        pids = pids[self._exists[pids]]
        if not len(pids):
            return
        now = self.clock.now_ms()
        holders = [int(o) for o in self._owner[pids].tolist() if o >= 0]
        for pid in pids.tolist():
            holders.extend(self._shared.pop(pid, ()))
        for t, k in zip(*np.unique(self._topic_of[pids], return_counts=True)):
            self._topic_existing[int(t)] -= int(k)
        self._account_open_pauses(pids[self._unowned_since[pids] >= 0], now, reopen=False)
        self._exists[pids] = False
        self._owner[pids] = _NONE
        self._n_owners[pids] = 0
        for m, k in zip(*np.unique(np.asarray(holders, dtype=np.int64), return_counts=True)):
            st = self.members[self._member_names[int(m)]]
            st.owned -= int(k)
            if not st.owned and st.alive and st.empty_since is None:
                st.empty_since = now

    def _account_open_pauses(self, pids: np.ndarray, now: int, *, reopen: bool) -> int:
        """Add the open pauses of ``pids`` (all unowned) up to ``now``; returns their sum."""
        if not len(pids):
            return 0
        pause = now - np.maximum(self._unowned_since[pids], self.window_start)
        self._unowned_ms[pids] += pause
        self._max_pause[pids] = np.maximum(self._max_pause[pids], pause)
        self._unowned_since[pids] = now if reopen else _NONE
        return int(pause.sum())

    # ------------------------------------------------------------------ transitions
    def assigned(self, member: str, partitions: Iterable[tuple[str, int]]) -> int:
        """``member``'s on_assign callback.  Returns how many of the partitions had no owner before."""
        now = self.clock.now_ms()
        m = self._member(member)
        st = self.members.setdefault(member, MemberOwnership(alive=True))
        pids = self._pids_of(partitions, True)
        if isinstance(partitions, frozenset):
            self._assigned_pids[member] = (partitions, pids)
        if not len(pids):
            return 0
        n = self._n_owners[pids]
        if not n.any():   # the usual case (eager: everything was revoked first): all new, none owned
            return self._assigned_unowned(st, m, pids, now)
        own = self._owner[pids]
        mine = own == m
        multi = np.flatnonzero(n > 1)
        for k in multi.tolist():
            mine[k] = m in self._shared[int(pids[k])]
        others = (n - mine) > 0
        if self.exclusive and others.any():
            self._violations(member, m, pids[others], now)
        new = pids[~mine]
        was_free = 0
        if len(new):
            before = self._n_owners[new]
            free = new[before == 0]
            was_free = len(free)
            self._count_gain(st, m, new, free, now)
            self._owner[free] = m
            for pid, holder in zip(new[before >= 1].tolist(), self._owner[new[before >= 1]].tolist()):
                owners = self._shared.get(pid)
                if owners is None:
                    owners = self._shared[pid] = {holder}
                owners.add(m)
            self._owner[new[before >= 1]] = _NONE
            self._n_owners[new] = before + 1
            st.owned += len(new)
        self._end_empty_stretch(st, now)
        return was_free

    def _assigned_unowned(self, st: MemberOwnership, m: int, pids: np.ndarray, now: int) -> int:
        """``assigned`` when none of ``pids`` has an owner: the general path with its sharing cases left out."""
        self._count_gain(st, m, pids, pids, now)
        self._owner[pids] = m
        self._n_owners[pids] = 1
        st.owned += len(pids)
        self._end_empty_stretch(st, now)
        return len(pids)

    def _count_gain(self, st: MemberOwnership, m: int, new: np.ndarray, free: np.ndarray, now: int) -> None:
        """The figures of partitions ``new`` that member ``m`` gains (``free``: those of them nobody owned):
        gains, the waits of the free ones, moves in (their last owner was another member); ``m`` becomes
        their last owner.  Ownership itself is the caller's."""
        st.gained += len(new)
        st.waited_ms += self._account_open_pauses(free[self._unowned_since[free] >= 0], now, reopen=False)
        last = self._last_owner[new]
        moved = new[(last >= 0) & (last != m)]
        self._moves[moved] += 1
        st.moved_in += len(moved)
        self._last_owner[new] = m

    def _end_empty_stretch(self, st: MemberOwnership, now: int) -> None:
        """A member that owns something again stops counting time owning nothing."""
        if st.owned and st.empty_since is not None:
            st.owned_nothing_ms += now - max(st.empty_since, self.window_start)
            st.empty_since = None

    def _violations(self, member: str, m: int, pids: np.ndarray, now: int) -> None:
        names = self._member_names
        for pid in pids.tolist():
            if len(self.violations) >= self.KEPT_VIOLATIONS and not self.strict:
                break
            owners = self._shared.get(pid) or {int(self._owner[pid])}
            others = sorted(names[o] for o in owners if o != m)
            tp = self._tp(pid)
            if len(self.violations) < self.KEPT_VIOLATIONS:
                self.violations.append(DoubleOwnership(now, tp, (*others, member)))
            if self.strict:
                self.violation_count += 1
                raise InvariantError(f"t={now}: partition {tp!r} assigned to {member!r} while owned by {others}")
        self.violation_count += len(pids)

    def released(self, member: str, partitions: Iterable[tuple[str, int]], kind: str) -> int:
        """``member``'s on_revoke (``kind="revoked"``) or on_lost (``"lost"``) callback.  Returns how many of
        the partitions are left without any owner."""
        self.members.setdefault(member, MemberOwnership(alive=True))
        self._member(member)
        cached = self._assigned_pids.get(member)
        if cached is not None and cached[0] is partitions:
            return self._release_pids(member, cached[1], kind)
        return self._release_pids(member, self._pids_of(partitions, False), kind)

    def _owned_pids(self, member: str) -> np.ndarray:
        """pids ``member`` owns now (sorted): O(partitions) numpy, for stops and queries."""
        m = self._member(member)
        pids = np.flatnonzero(self._owner[:self._size] == m)
        shared = [pid for pid, owners in self._shared.items() if m in owners]
        return np.union1d(pids, shared) if shared else pids

    def _release_pids(self, member: str, pids: np.ndarray, kind: str) -> int:
        now = self.clock.now_ms()
        st = self.members[member]
        m = self._member(member)
        orphaned = 0
        if len(pids) and st.owned:
            held = self._owner[pids] == m   # Kafka may name partitions already dropped: only owned ones count
            if self._shared:
                for k in np.flatnonzero(self._n_owners[pids] > 1).tolist():
                    held[k] = m in self._shared[int(pids[k])]
            held = pids[held]
            if len(held):
                before = self._n_owners[held]
                single = held[before == 1]
                self._owner[single] = _NONE
                self._unowned_since[single] = now
                orphaned = len(single)
                for pid in held[before > 1].tolist():
                    owners = self._shared[pid]
                    owners.discard(m)
                    if len(owners) == 1:
                        self._owner[pid] = next(iter(owners))
                        del self._shared[pid]
                self._n_owners[held] = before - 1
                st.owned -= len(held)
                if kind == "revoked":
                    st.revoked += len(held)
                elif kind in ("lost", "crashed"):
                    st.lost += len(held)
        if not st.owned and st.alive and st.empty_since is None:
            st.empty_since = now
        return orphaned

    # ------------------------------------------------------------------ windows
    def reset_window(self) -> None:
        """Start measuring now: pause counters restart, ownership is kept."""
        now = self.clock.now_ms()
        self.window_start = now
        size = self._size
        self._unowned_ms[:size] = 0
        self._max_pause[:size] = 0
        self._moves[:size] = 0
        open_ = self._unowned_since[:size] >= 0
        self._unowned_since[:size][open_] = now
        for st in self.members.values():
            st.owned_nothing_ms = st.waited_ms = st.gained = st.moved_in = st.revoked = st.lost = 0
            if st.empty_since is not None:
                st.empty_since = now

    def close_window(self) -> None:
        """Account the open intervals up to now (call before reading the figures)."""
        now = self.clock.now_ms()
        self._account_open_pauses(np.flatnonzero(self._unowned_since[:self._size] >= 0), now, reopen=True)
        for st in self.members.values():
            if st.empty_since is not None:
                st.owned_nothing_ms += now - max(st.empty_since, self.window_start)
                st.empty_since = now
        self.window_start = now

    # ------------------------------------------------------------------ queries
    def _tp(self, pid: int) -> TopicPartition:
        return TopicPartition(self._topic_names[int(self._topic_of[pid])], int(self._partition_of[pid]))

    def partition_count(self, topic: str) -> int:
        """Partitions of ``topic`` that exist now."""
        t = self._topic_index.get(topic)
        return 0 if t is None else self._topic_existing[t]

    def partition_total(self) -> int:
        """Partitions that exist now, every topic."""
        return sum(self._topic_existing)

    def unsettled(self, topic: str) -> int:
        """Existing partitions of ``topic`` not owned by exactly one member (by none, when not ``exclusive``):
        numpy over the topic's partitions."""
        t = self._topic_index.get(topic)
        if t is None:
            return 0
        pids = self._topic_pids[t]
        pids = pids[pids >= 0]
        owners = self._n_owners[pids]
        return int(np.count_nonzero(self._exists[pids] & ((owners != 1) if self.exclusive else (owners < 1))))

    def owned_count(self, member: str) -> int:
        st = self.members.get(member)
        return st.owned if st is not None else 0

    def owned_by(self, member: str) -> frozenset[TopicPartition]:
        if member not in self.members:
            return frozenset()
        return frozenset(self._tp(p) for p in self._owned_pids(member).tolist())

    def owner_of(self, tp: TopicPartition) -> set[str]:
        pids = self._pids_of([tp], False)
        if not len(pids):
            return set()
        pid = int(pids[0])
        if pid in self._shared:
            return {self._member_names[o] for o in self._shared[pid]}
        o = int(self._owner[pid])
        return {self._member_names[o]} if o >= 0 else set()

    def double_owned(self) -> dict[TopicPartition, set[str]]:
        """Partitions owned by more than one member right now (O(result))."""
        return {self._tp(pid): {self._member_names[o] for o in owners} for pid, owners in self._shared.items()}

    def assert_exclusive(self) -> None:
        """InvariantError if any partition is (or was, at some callback) owned by two members at once."""
        if not self._shared and not self.violations:
            return
        now = self.double_owned()
        first = self.violations[0] if self.violations else None
        raise InvariantError(
            f"double ownership: now {sorted((repr(k), sorted(v)) for k, v in now.items())[:5]}; "
            f"{self.violation_count} violation(s) recorded, first {first}"
        )

    def unowned(self) -> set[TopicPartition]:
        size = self._size
        return {self._tp(p) for p in np.flatnonzero(self._exists[:size] & (self._n_owners[:size] == 0)).tolist()}

    def partition_figures(self) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every partition ever seen, sorted by (topic, partition): (topic names, topic index per partition,
        partition numbers, unowned ms, longest pause ms, moves)."""
        size = self._size
        names = self._topic_names
        rank = np.argsort(np.argsort(np.array(names, dtype=object), kind="stable"), kind="stable")
        topic = self._topic_of[:size]
        order = np.lexsort((self._partition_of[:size], rank[topic] if size else topic))
        return (names, topic[order], self._partition_of[:size][order], self._unowned_ms[:size][order],
                self._max_pause[:size][order], self._moves[:size][order])

    @property
    def owners(self) -> dict[TopicPartition, set[str]]:
        """Every existing partition and its owners right now (built on each read: for tests and small groups)."""
        names = self._member_names
        out: dict[TopicPartition, set[str]] = {}
        for pid in np.flatnonzero(self._exists[:self._size]).tolist():
            shared = self._shared.get(pid)
            owner = int(self._owner[pid])
            out[self._tp(pid)] = ({names[o] for o in shared} if shared is not None
                                  else {names[owner]} if owner >= 0 else set())
        return out

    @property
    def partitions(self) -> dict[TopicPartition, PartitionStats]:
        """Per-partition figures as objects (built on each read: for tests and small groups)."""
        names, topic, part, unowned, pause, moves = self.partition_figures()
        return {TopicPartition(names[t], p): PartitionStats(u, x, v)
                for t, p, u, x, v in zip(topic.tolist(), part.tolist(), unowned.tolist(), pause.tolist(),
                                         moves.tolist())}
