"""Which offsets-topic partition (hence which coordinator) owns a group: spec §5.

``partition_for(group_id, n) = Utils.abs(groupId.hashCode()) % n`` where ``hashCode`` is Java's
``String.hashCode`` over UTF-16 code units (a character outside the BMP counts as its two surrogates) with
32-bit wrap-around, and Kafka's ``Utils.abs`` maps ``Integer.MIN_VALUE`` to 0::

    >>> partition_for("my-group")
    12
    >>> java_string_hashcode("polygenelubricants"), partition_for("polygenelubricants")
    (-2147483648, 0)
"""
from __future__ import annotations

from functools import lru_cache

__all__ = ["java_string_hashcode", "kafka_abs", "partition_for"]

_MASK = 0xFFFFFFFF
_INT_MIN = -(1 << 31)


def java_string_hashcode(s: str) -> int:
    """Java's ``String.hashCode()``: ``h = 31*h + c`` over UTF-16 code units, as a signed 32-bit int."""
    h = 0
    for ch in s:
        c = ord(ch)
        if c > 0xFFFF:  # supplementary character: two UTF-16 code units (high, low surrogate)
            c -= 0x10000
            h = (31 * h + (0xD800 | (c >> 10))) & _MASK
            h = (31 * h + (0xDC00 | (c & 0x3FF))) & _MASK
        else:
            h = (31 * h + c) & _MASK
    return h - (1 << 32) if h & 0x80000000 else h


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
    return kafka_abs(java_string_hashcode(group_id)) % num_partitions
