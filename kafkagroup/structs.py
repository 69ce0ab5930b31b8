"""Plain value types shared by every layer."""
from __future__ import annotations

from typing import NamedTuple


class TopicPartition(NamedTuple):
    """A partition of a topic, as Kafka's clients name it (kafka-python's TopicPartition has the same fields)."""

    topic: str
    partition: int

    def __repr__(self) -> str:  # C0: t0-1, as Kafka prints a TopicPartition
        return f"{self.topic}-{self.partition}"
