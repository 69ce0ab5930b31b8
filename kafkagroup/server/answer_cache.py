"""Encoded Metadata answers, kept while the topics are unchanged.

A Metadata answer for 1,000 topics costs milliseconds of the event loop to build and encode; a client
asking for it in a loop (or pipelining it) would hold the loop that long per request, and every group's
heartbeats with it.  The answer depends only on the request's body and version and on the topic layout
(names, partition counts; the node's address is fixed), so its encoded body is kept per (version, body)
and served again -- only the response header (the correlation id) is new -- until
:meth:`~kafkagroup.server.log.InMemoryLog.layout` changes (a topic created, removed, or given partitions).

A request that creates topics (auto-creation) changes the layout while it is handled: its answer is
stored under the layout afterwards, which is what the same request answers from then on.  At most
``max_bytes`` of answers are kept (least recently used dropped; an answer above a quarter of it is not
kept, nor is a body kio cannot hash).  The cached request body is about as large as its answer (each
topic named is answered), so the bound holds for both.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any

from kafkagroup.server.log import InMemoryLog

__all__ = ["MetadataCache"]


class MetadataCache:
    def __init__(self, log: InMemoryLog, max_bytes: int = 16 * 1024 * 1024) -> None:
        self._log = log
        self._max_bytes = max_bytes
        self._bytes = 0
        self._layout: tuple[int, int] | None = None
        self._answers: OrderedDict[tuple[int, Any], bytes] = OrderedDict()

    def get(self, version: int, body: Any) -> bytes | None:
        layout = self._log.layout()
        if layout != self._layout:
            self._forget(layout)
            return None
        try:
            answer = self._answers.get((version, body))
        except TypeError:          # unhashable body
            return None
        if answer is not None:
            self._answers.move_to_end((version, body))
        return answer

    def put(self, version: int, body: Any, encoded: bytes) -> None:
        layout = self._log.layout()
        if layout != self._layout:
            self._forget(layout)
        if len(encoded) > self._max_bytes // 4:
            return
        try:
            previous = self._answers.pop((version, body), None)
        except TypeError:
            return
        self._bytes += len(encoded) - (len(previous) if previous is not None else 0)
        self._answers[(version, body)] = encoded
        while self._bytes > self._max_bytes:
            _, dropped = self._answers.popitem(last=False)
            self._bytes -= len(dropped)

    def _forget(self, layout: tuple[int, int]) -> None:
        self._answers.clear()
        self._bytes = 0
        self._layout = layout
