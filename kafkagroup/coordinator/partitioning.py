"""Which offsets-topic partition (hence which coordinator) owns a group: spec §5.

``partition_for(group_id, n) = Utils.abs(groupId.hashCode()) % n`` where ``hashCode`` is Java's
``String.hashCode`` over UTF-16 code units (a character outside the BMP counts as its two surrogates) with
32-bit wrap-around, and Kafka's ``Utils.abs`` maps ``Integer.MIN_VALUE`` to 0::

    >>> partition_for("my-group")
    12
    >>> java_string_hash("polygenelubricants"), partition_for("polygenelubricants")
    (-2147483648, 0)
"""
from __future__ import annotations

from functools import lru_cache

from kafkagroup.java_order import java_string_hash

__all__ = ["kafka_abs", "partition_for"]

_INT_MIN = -(1 << 31)


def kafka_abs(n: int) -> int:
    """Kafka's ``Utils.abs``: ``Math.abs`` except that ``Integer.MIN_VALUE`` maps to 0 (not to itself)."""
    return 0 if n == _INT_MIN else abs(n)


def partition_for(group_id: str, num_partitions: int = 50) -> int:
    """The ``__consumer_offsets`` partition of ``group_id`` (``offsets.topic.num.partitions`` defaults to 50).

    Every request computes it, so results are memoised (bounded LRU of 65,536 ids): the hash is a Python
    loop over the id's characters.
    """
    if num_partitions < 1:
        raise ValueError(f"offsets.topic.num.partitions must be at least 1, got {num_partitions}")
    return _partition_for(group_id, num_partitions)


@lru_cache(maxsize=65_536)
def _partition_for(group_id: str, num_partitions: int) -> int:
    return kafka_abs(java_string_hash(group_id)) % num_partitions
