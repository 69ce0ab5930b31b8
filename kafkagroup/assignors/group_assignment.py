"""What an assignor answers for a decoded group: :class:`GroupAssignment`, in one of two shapes.

- ``owner[P]`` (member index per global partition id, -1 = nobody): the native assignors' answer, one owner
  per partition at most, encoded by the bulk codec with no per-partition Python object;
- ``partitions`` (member id -> partitions): what a Python assignor returns. Kafka puts no limit on how many
  members get one partition (a broadcast assignor gives every member every partition of its topics) and
  even lets an assignor hand out partitions of topics nobody subscribed to; this shape keeps both.

Both shapes answer the two questions the leader's checks ask, over the compact group's ids:
:meth:`GroupAssignment.holds` (is partition p assigned to member m?) and :meth:`GroupAssignment.pairs_of`
(which members is each of these partitions assigned to?).

    C0, C1 on t0 (2 partitions), broadcast: partitions {"C0": (t0-0, t0-1), "C1": (t0-0, t0-1)}
    pairs_of([0, 1]) -> members [0, 0, 1, 1], partitions [0, 1, 0, 1]
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from kafkagroup.errors import InvalidGroupError
from kafkagroup.model import CompactGroup
from kafkagroup.protocol import MAX_VERSION, Assignment, Subscription, encode_assignment
from kafkagroup.protocol.leader import encode_assignments
from kafkagroup.structs import TopicPartition

__all__ = ["GroupAssignment"]


@dataclass
class GroupAssignment:
    """An assignor's answer for ``group`` (module docstring); exactly one of ``owner`` / ``partitions`` is set."""

    group: CompactGroup
    owner: Optional[np.ndarray] = None                                 # owner[P], -1 = unassigned
    partitions: Optional[dict[str, tuple[TopicPartition, ...]]] = None  # member id -> partitions, any owners
    user_data: dict[str, bytes] = field(default_factory=dict)           # member id -> Assignment user data
    withheld: int = 0                       # partitions held back this round (cooperative-sticky)
    metrics: Any = None                     # kafkagroup.Metrics (native assignors)
    engine_us: float = 0.0
    # member id -> its Subscription as sent, when the assignor decoded them (a Python assignor's assign_group)
    subscriptions: Optional[Mapping[str, Subscription]] = None
    _pairs: Optional[tuple[np.ndarray, np.ndarray]] = field(default=None, repr=False, compare=False)

    @classmethod
    def from_assignments(cls, group: CompactGroup, assignments: Mapping[str, Any], assignor: str) -> GroupAssignment:
        """From ``{member id: Assignment}`` (kafka-python's ``assign`` result): every member of ``group`` gets an
        entry (none returned = nothing assigned, as Java's leader sends an empty assignment); an entry for a
        member that is not in the group is refused, naming it."""
        unknown = set(assignments) - set(group.members)
        if unknown:
            raise InvalidGroupError(f"assignor {assignor!r} assigned to unknown member(s) {sorted(unknown)}")
        partitions: dict[str, tuple[TopicPartition, ...]] = {}
        user_data: dict[str, bytes] = {}
        for member in group.members:
            got = assignments.get(member)
            if got is None:
                partitions[member] = ()
                continue
            got = got if isinstance(got, Assignment) else Assignment(got.partitions, getattr(got, "user_data", None))
            partitions[member] = got.partitions
            if got.user_data is not None:
                user_data[member] = got.user_data
        return cls(group, partitions=partitions, user_data=user_data)

    def encode(self, version: int = MAX_VERSION) -> dict[str, bytes]:
        """member id -> ConsumerProtocolAssignment bytes (Java's ``serializeAssignment``), every member."""
        if self.owner is not None:
            return encode_assignments(self.group, self.owner, version=version)
        return {member: encode_assignment(Assignment(parts, self.user_data.get(member)), version)
                for member, parts in self.partitions.items()}

    def member_partitions(self) -> dict[str, frozenset[TopicPartition]]:
        """member id -> the partitions assigned to it, every member (an ``owner[]`` answer turned into
        TopicPartitions: one object per assigned partition, for the leader's cooperative check only)."""
        if self.partitions is not None:
            return {member: frozenset(parts) for member, parts in self.partitions.items()}
        owner = np.asarray(self.owner, dtype=np.int64)
        ids = np.flatnonzero(owner >= 0)
        by_member: list[set[TopicPartition]] = [set() for _ in self.group.members]
        topics, numbers = self.group.partition_names(ids)
        for m, topic, p in zip(owner[ids].tolist(), topics, numbers):
            by_member[m].add(TopicPartition(topic, p))
        return {member: frozenset(parts) for member, parts in zip(self.group.members, by_member)}

    # ------------------------------------------------------------------ the checks' two questions
    def holds(self, members: np.ndarray, partitions: np.ndarray) -> np.ndarray:
        """Per (member index, global partition id) pair: is that partition assigned to that member?"""
        if self.owner is not None:
            return np.asarray(self.owner, dtype=np.int64)[partitions] == members
        assigned_members, assigned_partitions = self._assigned_pairs()
        total = self._partition_total()
        return np.isin(members * total + partitions, assigned_members * total + assigned_partitions)

    def pairs_of(self, partitions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(member indexes, global ids): every assignment of one of ``partitions`` (global ids) to a member."""
        if self.owner is not None:
            target = np.asarray(self.owner, dtype=np.int64)[partitions]
            kept = target >= 0
            return target[kept], np.asarray(partitions, dtype=np.int64)[kept]
        assigned_members, assigned_partitions = self._assigned_pairs()
        chosen = np.isin(assigned_partitions, partitions)
        return assigned_members[chosen], assigned_partitions[chosen]

    def _partition_total(self) -> int:
        return int(self.group.topic_base[-1])

    def _assigned_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """The ``partitions`` shape as (member index, global id) pairs. Partitions outside the group's ids (a
        topic nobody subscribes to, or missing from the metadata; a partition number out of range) are left
        out: no member can own them, so no check about owned partitions concerns them."""
        if self._pairs is None:
            index = {topic: t for t, topic in enumerate(self.group.topics)}
            counts = self.group.partition_count.tolist()
            base = self.group.topic_base.tolist()
            members: list[int] = []
            ids: list[int] = []
            for m, member in enumerate(self.group.members):
                for topic, p in self.partitions.get(member, ()):
                    t = index.get(topic)
                    if t is not None and 0 <= p < counts[t]:
                        members.append(m)
                        ids.append(base[t] + p)
            self._pairs = (np.asarray(members, dtype=np.int64), np.asarray(ids, dtype=np.int64))
        return self._pairs
