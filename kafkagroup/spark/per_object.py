"""A value computed once per live object, for immutable objects such as pyarrow tables.

Why: the fleet's topic table can hold a million names, and both its hash index (the loop's TopicMeta)
and its content digest (Spark's shared broadcast) cost tens of milliseconds or more to compute. A
pyarrow table cannot change, so the same object always gives the same value. Entries are keyed by the
object's identity and held through a weak reference: when the object is freed its entry goes with it,
so a later object that reuses the id never sees a value computed from another. At most `keep` objects
are remembered (least recently used first out). Do not use it for mutable objects.
"""
from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, TypeVar

V = TypeVar("V")


class PerObjectCache(Generic[V]):
    def __init__(self, keep: int) -> None:
        self.keep = keep
        self._lock = threading.Lock()
        self._entries: OrderedDict[int, tuple[weakref.ref, V]] = OrderedDict()   # id(obj) -> (weak ref, value)

    def get(self, obj: Any, compute: Callable[[Any], V]) -> V:
        """`compute(obj)`, computed the first time `obj` is seen (outside the lock) and kept while it lives."""
        key = id(obj)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry[0]() is obj:
                self._entries.move_to_end(key)
                return entry[1]
        value = compute(obj)

        def forget(ref: Any, key: int = key) -> None:   # the object is gone: its id may be reused
            with self._lock:
                if key in self._entries and self._entries[key][0] is ref:
                    del self._entries[key]

        with self._lock:
            self._entries[key] = (weakref.ref(obj, forget), value)
            self._entries.move_to_end(key)
            while len(self._entries) > self.keep:
                self._entries.popitem(last=False)
        return value

    def live_objects(self) -> list[Any]:
        """The objects remembered now (None for one freed but not yet forgotten: never expected)."""
        with self._lock:
            return [ref() for ref, _ in self._entries.values()]
