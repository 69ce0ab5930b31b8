"""What the coordinator may know of the cluster's topics: the ``TopicsView`` it is given.

Consumer groups (KIP-848) are assigned by the coordinator, so it needs each subscribed topic's id and
partition count, and the names a subscription regex may match.  ``serve`` hands it a view of its log,
a test or the simulator a :class:`StaticTopics`.  ``version`` changes whenever a topic is created,
deleted or gains partitions, so a group can tell cheaply whether its subscribed metadata may have moved.
"""
from __future__ import annotations

import uuid
from typing import Hashable, Iterable, Mapping, Protocol

__all__ = ["TopicsView", "StaticTopics", "topic_id_for"]

_NAMESPACE = uuid.UUID("6b61666b-6167-726f-7570-2d746f706963")


def topic_id_for(name: str) -> uuid.UUID:
    """A stable id for a topic name (uuid5; the same rule as serve's log)."""
    return uuid.uuid5(_NAMESPACE, name)


class TopicsView(Protocol):
    @property
    def version(self) -> Hashable:
        """Equal values: no topic was created, deleted or grew since (compared for equality only)."""

    def names(self) -> Iterable[str]: ...

    def partition_count(self, name: str) -> int | None:
        """None when the topic does not exist."""

    def topic_id(self, name: str) -> uuid.UUID | None: ...

    def topic_name(self, topic_id: uuid.UUID) -> str | None: ...


class StaticTopics:
    """A mutable in-memory :class:`TopicsView`: ``set(name, partitions)``, ``delete(name)``."""

    def __init__(self, topics: Mapping[str, int] | None = None) -> None:
        self._partitions: dict[str, int] = {}
        self._ids: dict[uuid.UUID, str] = {}
        self.version = 0
        for name, count in (topics or {}).items():
            self.set(name, count)

    def set(self, name: str, partitions: int) -> None:
        if partitions < 1:
            raise ValueError(f"topic {name!r}: partition count must be at least 1, got {partitions}")
        self._partitions[name] = partitions
        self._ids[topic_id_for(name)] = name
        self.version += 1

    def delete(self, name: str) -> None:
        del self._partitions[name]
        del self._ids[topic_id_for(name)]
        self.version += 1

    def names(self) -> Iterable[str]:
        return self._partitions.keys()

    def partition_count(self, name: str) -> int | None:
        return self._partitions.get(name)

    def topic_id(self, name: str) -> uuid.UUID | None:
        return topic_id_for(name) if name in self._partitions else None

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        return self._ids.get(topic_id)
