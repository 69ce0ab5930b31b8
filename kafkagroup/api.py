"""The object API: names in, ``TopicPartition`` lists out.

>>> r = assign("range", {"t0": 3, "t1": 3}, {"C0": {"topics": ["t0", "t1"]}, "C1": {"topics": ["t0", "t1"]}})
>>> r.assignment["C0"], r.assignment["C1"]
([t0-0, t0-1, t1-0, t1-1], [t0-2, t1-2])
"""
from __future__ import annotations

import gc
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kafkagroup.engine import IGNORES_PREVIOUS, Metrics, assign_arrays
from kafkagroup.errors import InvalidGroupError
from kafkagroup.model import CompactGroup, DroppedClaim, TopicSpec, build_group
from kafkagroup.structs import TopicPartition


class MemberAssignment(Mapping[str, list[TopicPartition]]):
    """member id -> its partitions, ascending by (topic, partition), built when a member is first read.

    A read-only mapping over the engine's ``owner[]``: a 1M-partition group costs no per-partition Python
    object until the caller asks for a member's list (``counts()`` and ``owner`` need none at all). Reading
    every member builds every list once (~0.5 us per partition); lists are cached, do not mutate them.

    >>> r = assign("range", {"t0": 3}, {"C0": {"topics": ["t0"]}, "C1": {"topics": ["t0"]}})
    >>> r.assignment["C0"], r.assignment.counts()
    ([t0-0, t0-1], {'C0': 2, 'C1': 1})
    """

    def __init__(self, group: CompactGroup, owner: np.ndarray) -> None:
        self._group = group
        self.owner = owner
        self._positions: dict[str, int] | None = None   # member id -> index, built on the first lookup
        self._starts: np.ndarray | None = None
        self._order: np.ndarray | None = None
        self._lists: dict[str, list[TopicPartition]] = {}

    @property
    def _index(self) -> dict[str, int]:
        """member id -> its index in ``members`` (built when first asked: a caller that only iterates, counts
        or reads ``owner`` never needs it)."""
        if self._positions is None:
            self._positions = dict(zip(self._group.members, range(len(self._group.members))))
        return self._positions

    def _grouped(self) -> tuple[np.ndarray, np.ndarray]:
        """Partition ids grouped by owner (ascending within each), and each member's start in them."""
        if self._order is None:
            owner = self.owner
            assigned = np.flatnonzero(owner >= 0)
            self._order = assigned[np.argsort(owner[assigned], kind="stable")]
            counts = np.bincount(owner[assigned], minlength=len(self._group.members))
            self._starts = np.zeros(len(counts) + 1, dtype=np.int64)
            np.cumsum(counts, out=self._starts[1:])
        assert self._starts is not None
        return self._order, self._starts

    def __getitem__(self, member: str) -> list[TopicPartition]:
        cached = self._lists.get(member)
        if cached is not None:
            return cached
        i = self._index[member]
        order, starts = self._grouped()
        with _no_cyclic_gc():
            topics, partitions = self._group.partition_names(order[starts[i]:starts[i + 1]])
            tps = list(map(TopicPartition, topics, partitions))
        self._lists[member] = tps
        return tps

    def __iter__(self) -> Iterator[str]:
        return iter(self._group.members)

    def __len__(self) -> int:
        return len(self._group.members)

    def __contains__(self, member: object) -> bool:
        return member in self._index

    def counts(self) -> dict[str, int]:
        """Partitions per member, without building any list."""
        counts = np.bincount(self.owner[self.owner >= 0], minlength=len(self._group.members)).tolist()
        return dict(zip(self._group.members, counts))

    def __repr__(self) -> str:
        return repr(dict(self.items()))


@dataclass(frozen=True)
class AssignmentResult:
    """What one assignment produced.

    ``assignment`` maps every member id to its partitions, sorted by (topic, partition) -- Java's
    order for roundrobin and rack-aware range; plain range and the sticky assignors return Java
    lists in HashMap order, which carries no meaning. It is a read-only :class:`MemberAssignment`
    whose lists are built on first read (``dict(result.assignment)`` builds them all); ``owner`` is
    the engine's array (member index in ``members`` order, -1 unassigned). ``withheld`` lists what a
    cooperative assignor holds back this round. ``metrics`` is the engine's quality certificate, or None when
    the call asked for none (``metrics=False``). ``engine_us`` is the native call alone; ``total_us``
    includes interning names (and not the lists, which are built when read).
    """

    strategy: str
    assignment: MemberAssignment
    withheld: list[TopicPartition]
    metrics: Metrics | None   # None when assign(..., metrics=False)
    engine_us: float
    total_us: float
    unknown_topics: list[str] = field(default_factory=list)
    dropped_claims: int = 0
    dropped: list[DroppedClaim] = field(default_factory=list)   # what strict=False dropped: member, topic, partition, why

    @property
    def owner(self) -> np.ndarray:
        return self.assignment.owner

    @property
    def members(self) -> list[str]:
        """Member ids in the engine's order (Kafka's MemberInfo order): ``owner`` indexes this list."""
        return self.assignment._group.members


@contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """Pause the cyclic collector while building many small tuples: at 1M partitions its generation
    passes, triggered by the allocations alone (tuples hold no cycles), doubled the time to build the
    lists. Reference counting still frees everything; the collector resumes as it was."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _check_single_owner(group: CompactGroup) -> None:
    """The engine's refusal of a partition held by two members (server/uniform.cpp), worded with names."""
    if group.owned_partitions is None or group.owned_offsets is None or group.owned_partitions.size == 0:
        return
    if np.bincount(group.owned_partitions).max() < 2:   # O(P): no partition listed twice, the usual case
        return
    holder = np.repeat(np.arange(len(group.members)), np.diff(group.owned_offsets))
    order = np.lexsort((holder, group.owned_partitions))
    part, who = group.owned_partitions[order], holder[order]
    clash = np.flatnonzero((part[1:] == part[:-1]) & (who[1:] != who[:-1]))
    if clash.size:
        i = int(clash[0])
        topics, partitions = group.partition_names(part[i:i + 1])
        raise InvalidGroupError(f"members {group.members[who[i]]!r} and {group.members[who[i + 1]]!r} both hold "
                                f"partition {topics[0]}-{partitions[0]} in their previous target assignment "
                                "(a partition has at most one owner)")


def assign(strategy: str, partitions_per_topic: Mapping[str, TopicSpec], subscriptions: Mapping[str, Any], *,
           partition_racks: Mapping[str, Sequence[Sequence[str | None] | None]] | None = None,
           strict: bool = True, rack_aware: bool = False, metrics: bool = True) -> AssignmentResult:
    """Assign the partitions of `partitions_per_topic` to the members of `subscriptions`.

    `strategy` is a Kafka protocol name ("range", "roundrobin", ...) or one of Kafka 4's server-side
    assignors ("server-uniform", "server-range": a member's ``owned`` is its previous *target* assignment,
    ``instance`` its static id; pass ``strict=False`` to drop claims on deleted topics, as a coordinator
    must: the result's ``dropped`` names each claim dropped); `partitions_per_topic` maps a
    topic to its partition count or to one replica-rack list per partition; `subscriptions` maps a
    member id to ``{"topics": [...], "owned": [(topic, p), ...], "generation": g, "rack": r,
    "instance": group_instance_id}`` (every key but topics optional; Subscription objects work too).
    ``rack_aware=True`` makes the server assignors prefer partitions with a replica in the member's rack
    where balance allows (beyond Kafka, whose server assignors ignore racks; see
    :func:`kafkagroup.assign_arrays`); off, they give Kafka's answer whatever racks are given.
    ``metrics=False``: the result's ``metrics`` is None and the engine skips what only feeds them; the
    assignment is the same. For "server-range" the members' ``owned`` is then not read at all (not checked,
    nothing ``dropped``), exactly as Kafka's RangeAssignor, whose answer never depends on it
    (``assign("server-range", {"t0": 2}, {"C0": {"topics": ["t0"], "owned": [("t0", 7)]}}, metrics=False)``
    gives C0 both partitions; with metrics it raises, t0-7 being no partition).
    Raises :class:`~kafkagroup.errors.InvalidGroupError` naming the member, topic or partition at fault.
    """
    start = time.perf_counter()
    if not isinstance(strategy, str):
        raise InvalidGroupError(f"strategy must be a protocol name, got {strategy!r}")
    group = build_group(partitions_per_topic, subscriptions, partition_racks=partition_racks, strict=strict,
                        claims=metrics or strategy not in IGNORES_PREVIOUS)
    try:
        result = assign_arrays(strategy, **group.arrays(shared=True), rack_aware=rack_aware, metrics=metrics)
    except InvalidGroupError:
        if strategy == "server-uniform":   # the engine refused a partition held twice: say which, with names
            _check_single_owner(group)     # (only now: an O(P) pass that a valid group never needs)
        raise
    assignment = MemberAssignment(group, result.owner)
    withheld: list[TopicPartition] = []
    if result.withheld.size:   # (only cooperative assignors withhold)
        topics, partitions = group.partition_names(result.withheld)
        withheld = list(map(TopicPartition, topics, partitions))
    return AssignmentResult(strategy=strategy, assignment=assignment, withheld=withheld, metrics=result.metrics,
                            engine_us=result.engine_us, total_us=(time.perf_counter() - start) * 1e6,
                            unknown_topics=group.unknown_topics, dropped_claims=group.dropped_claims,
                            dropped=group.dropped)
