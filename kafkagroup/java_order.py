"""Java's string semantics that Kafka's behaviour depends on, in one place.

Used by the assignors' ordering (kafkagroup.model), the wire codec (sorted topics, the sticky user data's
topic order), the coordinator (partition_for, HashMap-ordered vote ties and leader choice) and Spark.

- :func:`java_string_hash`: ``String.hashCode()`` over UTF-16 code units, a signed int32;
  :func:`hashmap_spread`: ``HashMap.hash`` of a String key (high half folded into the low half).
- :func:`java_string_key`: ``String.compareTo`` compares UTF-16 code units, which differs from Python's
  code-point order for characters above U+FFFF (a surrogate pair sorts before U+E000..U+FFFF in
  Java). Sorting by the UTF-16-BE bytes gives exactly Java's order.
- :func:`java_hashmap_order`: ``CollectionUtils.groupPartitionsByTopic`` (used by the StickyAssignor to
  write its user data) groups into a ``java.util.HashMap`` by calling ``computeIfAbsent`` once per
  partition, so the topics come out in HashMap iteration order. That order is a pure function of the
  call sequence: table size 16 doubling when a call starts with ``size > 0.75 * capacity``; bucket
  ``(h ^ (h >>> 16)) & (capacity - 1)`` of ``String.hashCode``; ``computeIfAbsent`` puts a new key at
  the *head* of its bucket; a resize splits each bucket keeping relative order.

Limit: when a bucket would hold 8+ keys in a table of 64+ buckets Java turns the bucket into a
red-black tree, whose iteration order this model does not follow (it keeps the list order). That needs
8+ topic names of one member colliding in one bucket, which ordinary names do not do; the bytes stay a
valid encoding of the same data either way, only the topic order could differ from Java's.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

_TREEIFY_THRESHOLD = 8
_MIN_TREEIFY_CAPACITY = 64


def java_string_key(s: str) -> bytes:
    """Sort key equal to Java's ``String.compareTo`` order (UTF-16 code units)."""
    return s.encode("utf-16-be", "surrogatepass")


def java_sort(items: list[Any], key: Callable[[Any], str]) -> None:
    """Sort ``items`` in place by Java's ``String.compareTo`` of ``key(item)``, stably. Without characters
    beyond U+FFFF the UTF-16 code units are the code points, so Python's own str order is Java's and no
    UTF-16 key (a bytes object per item) is built."""
    if max("".join(map(key, items)), default="") < "\U00010000":   # the largest character decides
        items.sort(key=key)
    else:
        items.sort(key=lambda item: java_string_key(key(item)))


def java_string_hash(s: str) -> int:
    """``String.hashCode()`` as a signed int32: s[0]*31^(n-1) + ... over UTF-16 code units."""
    raw = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(raw), 2):
        h = (31 * h + ((raw[i] << 8) | raw[i + 1])) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def hashmap_spread(key: str) -> int:
    """``HashMap.hash(key)`` for a String key: its hashCode with the high half folded into the low half."""
    u = java_string_hash(key) & 0xFFFFFFFF
    return u ^ (u >> 16)


def java_hashmap_order(keys: Iterable[str]) -> list[str]:
    """Distinct keys in the iteration order of a ``new HashMap<>()`` filled by ``computeIfAbsent(k)``
    for each ``k`` of ``keys`` in turn (repeats included: every call may trigger a resize).

    >>> java_hashmap_order(["foo", "bar", "foo"])   # "bar" hashes to bucket 2, "foo" to bucket 7
    ['bar', 'foo']
    """
    capacity = 0
    threshold = 0
    size = 0
    buckets: list[list[str]] = []  # each bucket in Java's iteration (linked-list) order
    spread_of: dict[str, int] = {}

    def resize() -> None:
        nonlocal capacity, threshold, buckets
        if capacity == 0:
            capacity, threshold = 16, 12
            buckets = [[] for _ in range(16)]
            return
        new_capacity = capacity * 2
        grown: list[list[str]] = [[] for _ in range(new_capacity)]
        for index, bucket in enumerate(buckets):
            for key in bucket:  # split keeps relative order inside the low and high halves
                grown[spread_of[key] & (new_capacity - 1)].append(key)
        capacity, threshold, buckets = new_capacity, threshold * 2, grown

    for key in keys:
        if size > threshold or capacity == 0:
            resize()
        if key in spread_of:
            continue
        h = hashmap_spread(key)
        spread_of[key] = h
        bucket = buckets[h & (capacity - 1)]
        bucket.insert(0, key)
        size += 1
        if len(bucket) - 1 >= _TREEIFY_THRESHOLD - 1 and capacity < _MIN_TREEIFY_CAPACITY:
            resize()  # treeifyBin on a small table resizes instead of building a tree
    return [key for bucket in buckets for key in bucket]
