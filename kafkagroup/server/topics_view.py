"""The log's topics as the coordinator sees them (a :class:`kafkagroup.messages.topics.TopicsView`).

Consumer groups need topic ids, partition counts and the names a regex may match.  ``version`` combines
the log's creation counter with the topic and partition totals, so a topic deleted or grown by any code
path (even one that forgets the counter) still moves it; O(topics) per call, one call per heartbeat.
"""
from __future__ import annotations

import uuid
from typing import Hashable, Iterable

from kafkagroup.server.log import InMemoryLog

__all__ = ["LogTopics"]


class LogTopics:
    def __init__(self, log: InMemoryLog) -> None:
        self._log = log
        self._ids: dict[uuid.UUID, str] = {}
        self._ids_at: Hashable = None

    @property
    def version(self) -> Hashable:
        topics = self._log.topics
        return (getattr(self._log, "metadata_version", 0), len(topics), sum(map(len, topics.values())))

    def names(self) -> Iterable[str]:
        return self._log.topics.keys()

    def partition_count(self, name: str) -> int | None:
        parts = self._log.topics.get(name)
        return None if parts is None else len(parts)

    def topic_id(self, name: str) -> uuid.UUID | None:
        return self._log.topic_id(name) if name in self._log.topics else None

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        version = self.version
        if version != self._ids_at:
            self._ids = {self._log.topic_id(n): n for n in self._log.topics}
            self._ids_at = version
        return self._ids.get(topic_id)
