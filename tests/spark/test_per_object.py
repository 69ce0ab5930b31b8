"""PerObjectCache: one computation per live object, forgotten with the object, bounded."""
from __future__ import annotations

import gc

from kafkagroup.spark.per_object import PerObjectCache


class Table:   # stands in for a pyarrow table: immutable by convention, weakly referenceable
    def __init__(self, value: int) -> None:
        self.value = value


def test_computed_once_per_object_and_forgotten_with_it():
    calls: list[int] = []
    cache: PerObjectCache[int] = PerObjectCache(keep=3)

    def compute(t: Table) -> int:
        calls.append(t.value)
        return t.value * 10

    a = Table(1)
    assert cache.get(a, compute) == 10 and cache.get(a, compute) == 10
    assert calls == [1]
    for round_ in range(20):   # freed objects' ids get reused: a new object is never served an old value
        t = Table(100 + round_)
        assert cache.get(t, compute) == (100 + round_) * 10
        del t
        gc.collect()
    assert calls == [1] + [100 + r for r in range(20)]
    assert cache.live_objects() == [a]


def test_keeps_the_most_recently_used():
    cache: PerObjectCache[int] = PerObjectCache(keep=2)
    a, b, c = Table(1), Table(2), Table(3)
    calls: list[int] = []

    def compute(t: Table) -> int:
        calls.append(t.value)
        return t.value

    cache.get(a, compute), cache.get(b, compute), cache.get(a, compute), cache.get(c, compute)
    assert cache.live_objects() == [a, c]   # b was least recently used
    cache.get(b, compute)
    assert calls == [1, 2, 3, 2]


class _RecordingLock:
    """A lock that records (instead of deadlocking) an attempt to take it again on the thread holding it."""

    def __init__(self) -> None:
        self.held = False
        self.reentered = False

    def __enter__(self) -> None:
        if self.held:
            self.reentered = True
            return
        self.held = True

    def __exit__(self, *exc: object) -> None:
        self.held = False


def test_an_object_freed_while_the_cache_is_locked_does_not_take_the_lock_again():
    """A garbage collection started by an allocation inside get() can free a cached object on the same
    thread; its weakref callback must not wait for the lock that thread holds (a plain Lock would hang)."""
    cache: PerObjectCache[int] = PerObjectCache(keep=4)
    lock = _RecordingLock()
    cache._lock = lock   # type: ignore[assignment]
    a, b = Table(1), Table(2)
    cache.get(a, lambda t: t.value)
    cache.get(b, lambda t: t.value)
    with cache._lock:      # as inside get(): the object is freed while the lock is held
        del a
        gc.collect()
    assert not lock.reentered
    assert cache.live_objects() == [b]   # the freed object's entry was removed by the next call
