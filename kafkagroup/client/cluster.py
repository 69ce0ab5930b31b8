"""The topic metadata a member sees (Kafka's ``ConsumerMetadata`` reduced to what rebalancing needs).

A :class:`ClusterMetadata` is the cluster's truth (topics, partition counts, optional replica racks); every
change bumps ``version``.  Members take a :class:`MetadataSnapshot` of it when they refresh
(``metadata.max.age.ms``, or explicitly); the group leader compares the snapshot it assigned with against
later ones and rejoins when a subscribed topic changed (spec §6.8)::

    cluster = ClusterMetadata({"orders": 12})
    cluster.set_partitions("orders", 16)     # a leader notices at its next refresh and triggers a rebalance
"""
from __future__ import annotations

import re
from types import MappingProxyType
from typing import AbstractSet, Iterable, Mapping, Sequence

from kafkagroup.errors import InvalidGroupError
from kafkagroup.protocol.consumer_protocol import string_problem

__all__ = ["ClusterMetadata", "MetadataSnapshot"]


class MetadataSnapshot:
    """Immutable view: ``partitions`` (topic -> count) and ``racks`` (topic -> per-partition rack lists)."""

    __slots__ = ("partitions", "racks", "version")

    def __init__(
        self,
        partitions: Mapping[str, int],
        racks: Mapping[str, Sequence[Sequence[str]]] | None = None,
        version: int = 0,
    ) -> None:
        self.partitions: Mapping[str, int] = MappingProxyType(dict(partitions))
        self.racks: Mapping[str, tuple[tuple[str, ...], ...]] = MappingProxyType(
            {t: tuple(tuple(r) for r in per_p) for t, per_p in (racks or {}).items()}
        )
        self.version = version

    def restricted(self, topics: AbstractSet[str], *, with_racks: bool) -> tuple:
        """Comparable key of the metadata of ``topics`` (what a leader's rejoin check compares, §6.8)."""
        counts = tuple(sorted((t, self.partitions[t]) for t in topics if t in self.partitions))
        if not with_racks:
            return counts
        racks = tuple(sorted((t, self.racks[t]) for t in topics if t in self.racks))
        return counts, racks

    def matching(self, pattern: "re.Pattern[str]") -> frozenset[str]:
        """Topics whose whole name matches ``pattern`` (pattern subscriptions)."""
        return frozenset(t for t in self.partitions if pattern.fullmatch(t))


class ClusterMetadata:
    """Mutable cluster topic metadata shared by the members of a simulation or test."""

    def __init__(
        self,
        partitions_per_topic: Mapping[str, int] | None = None,
        partition_racks: Mapping[str, Sequence[Sequence[str]]] | None = None,
    ) -> None:
        self._partitions: dict[str, int] = {}
        self._racks: dict[str, tuple[tuple[str, ...], ...]] = {}
        self.version = 0
        for topic, count in (partitions_per_topic or {}).items():
            self._check(topic, count)
            self._partitions[topic] = int(count)
        for topic, racks in (partition_racks or {}).items():
            self.set_racks(topic, racks, _bump=False)

    @staticmethod
    def _check(topic: str, count: int) -> None:
        if not isinstance(topic, str) or not topic:
            raise InvalidGroupError(f"topic name must be a non-empty string, got {topic!r}")
        problem = string_problem(topic)
        if problem is not None:   # a broker never has such a topic; a pattern subscription could not carry it
            shown = repr(topic) if len(topic) <= 60 else f"{topic[:40]!r}...({len(topic)} chars)"
            raise InvalidGroupError(f"topic name {shown} {problem}")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise InvalidGroupError(f"topic {topic!r}: partition count must be a non-negative int, got {count!r}")

    def set_partitions(self, topic: str, count: int) -> None:
        """Create ``topic`` or change its partition count (Kafka only ever grows it; shrinking is allowed here)."""
        self._check(topic, count)
        if self._partitions.get(topic) != count:
            self._partitions[topic] = int(count)
            self.version += 1

    def delete_topic(self, topic: str) -> None:
        if topic not in self._partitions:
            raise InvalidGroupError(f"cannot delete unknown topic {topic!r}")
        del self._partitions[topic]
        self._racks.pop(topic, None)
        self.version += 1

    def set_racks(self, topic: str, racks: Iterable[Iterable[str]], *, _bump: bool = True) -> None:
        """Replica racks of each partition of ``topic`` (KIP-881), one list per partition."""
        if topic not in self._partitions:
            raise InvalidGroupError(f"racks given for unknown topic {topic!r}")
        value = tuple(tuple(r) for r in racks)
        if len(value) != self._partitions[topic]:
            raise InvalidGroupError(
                f"topic {topic!r}: {len(value)} rack lists for {self._partitions[topic]} partitions"
            )
        if self._racks.get(topic) != value:
            self._racks[topic] = value
            if _bump:
                self.version += 1

    @property
    def partitions_per_topic(self) -> Mapping[str, int]:
        return MappingProxyType(self._partitions)

    def snapshot(self) -> MetadataSnapshot:
        return MetadataSnapshot(self._partitions, self._racks, self.version)
