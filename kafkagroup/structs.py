"""Plain value types shared by every layer."""
from __future__ import annotations

from itertools import repeat
from typing import Iterable, Iterator, NamedTuple


class TopicPartition(NamedTuple):
    """A partition of a topic, as Kafka's clients name it (kafka-python's TopicPartition has the same fields)."""

    topic: str
    partition: int

    def __repr__(self) -> str:  # C0: t0-1, as Kafka prints a TopicPartition
        return f"{self.topic}-{self.partition}"


def topic_partitions(topic: str, partitions: Iterable[int]) -> Iterator[TopicPartition]:
    """``TopicPartition(topic, p)`` for each ``p``, made in C loops (``tuple.__new__`` over zip/repeat, no
    Python frame per partition): for decoders, whose partition numbers are ints already (no check here)."""
    return map(tuple.__new__, repeat(TopicPartition), zip(repeat(topic), partitions))
