"""A value computed once per live object, for immutable objects such as pyarrow tables.

Why: the fleet's topic table can hold a million names, and both its hash index (the loop's TopicMeta)
and its content digest (Spark's shared broadcast) cost tens of milliseconds or more to compute. A
pyarrow table does not change, so the same object gives the same value -- as long as nobody writes into
memory it shares: ``pa.array(numpy_array)`` wraps the numpy buffer without a copy, and writing into that
numpy array afterwards changes the table under the cache (callers must not do that with a table they pass). Entries are keyed by the
object's identity and held through a weak reference: when the object is freed its entry goes with it,
so a later object that reuses the id never sees a value computed from another. At most `keep` objects
are remembered (least recently used first out). Do not use it for mutable objects.

Thread safety: `get` may be called from many threads. The weak-reference callback runs wherever the
object is freed -- possibly inside `get` itself, on the same thread, when an allocation made under the
lock starts a garbage collection -- so it never takes the lock: it queues the dead entry, and `get`
removes queued entries under the lock.
"""
from __future__ import annotations

import threading
import weakref
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any, Generic, TypeVar

V = TypeVar("V")


class PerObjectCache(Generic[V]):
    def __init__(self, keep: int) -> None:
        self.keep = keep
        self._lock = threading.Lock()
        self._entries: OrderedDict[int, tuple[weakref.ref, V]] = OrderedDict()   # id(obj) -> (weak ref, value)
        self._dead: deque[tuple[int, weakref.ref]] = deque()   # freed objects' entries, removed by the next get

    def _purge(self) -> None:   # under the lock
        while self._dead:
            key, ref = self._dead.popleft()
            entry = self._entries.get(key)
            if entry is not None and entry[0] is ref:
                del self._entries[key]

    def get(self, obj: Any, compute: Callable[[Any], V]) -> V:
        """`compute(obj)`, computed the first time `obj` is seen (outside the lock) and kept while it lives."""
        key = id(obj)
        with self._lock:
            self._purge()
            entry = self._entries.get(key)
            if entry is not None and entry[0]() is obj:
                self._entries.move_to_end(key)
                return entry[1]
        value = compute(obj)

        dead = self._dead

        def forget(ref: Any, key: int = key) -> None:   # the object is gone: its id may be reused
            dead.append((key, ref))   # deque.append is atomic; no lock here (see the module docstring)

        ref = weakref.ref(obj, forget)
        with self._lock:
            self._purge()
            self._entries[key] = (ref, value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.keep:
                self._entries.popitem(last=False)
        return value

    def live_objects(self) -> list[Any]:
        """The objects remembered now (None for one freed but not yet forgotten: never expected)."""
        with self._lock:
            self._purge()
            return [ref() for ref, _ in self._entries.values()]
