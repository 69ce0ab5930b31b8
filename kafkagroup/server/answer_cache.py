"""Encoded Metadata answers, kept while the topics are unchanged.

A Metadata answer for 1,000 topics costs milliseconds of the event loop to assemble even from kept per-topic
entries (:mod:`kafkagroup.server.metadata_pieces`); a client asking for it in a loop (or pipelining it) would
cost that per request.  The answer depends only on the request's body and version and on the topic layout
(names, partition counts; the node's address is fixed), so its encoded body is kept per (version, body
bytes) and served again -- only the response header (the correlation id) is new -- until
``InMemoryLog.metadata_version`` changes (a topic created, removed, or given partitions).
The key is the request's raw body, taken from the frame before anything is decoded: a repeated request is
answered without decoding, checking or hashing its 1,000 topic entities again (those cost milliseconds of
the loop per request; the raw bytes hash in microseconds).  Only a body that was decoded, checked and
answered once is ever stored, so the same bytes need no second check.

A request that creates topics (auto-creation) changes the version while it is handled: its answer is
stored under the version afterwards, which is what the same request answers from then on.  At most
``max_bytes`` of answers and keys are kept (least recently used dropped; one above a quarter of it is
not kept).  A header with tagged fields is not cached (its body would need the header decoded first).
"""
from __future__ import annotations

import struct
from collections import OrderedDict

from kafkagroup.server.log import InMemoryLog
from kafkagroup.server.versions import is_supported, request_class

__all__ = ["MetadataCache", "METADATA"]

METADATA = 3
_HEADER_START = struct.Struct(">hhi")       # api key, version, correlation id
_CLIENT_ID_LENGTH = struct.Struct(">h")     # @8, -1 for null

Key = tuple[int, bytes]                     # (version, the request's body bytes)


class MetadataCache:
    def __init__(self, log: InMemoryLog, max_bytes: int = 16 * 1024 * 1024) -> None:
        self._log = log
        self._max_bytes = max_bytes
        self._bytes = 0
        self._version: int | None = None
        self._answers: OrderedDict[Key, bytes] = OrderedDict()

    @staticmethod
    def key(frame: bytes) -> tuple[Key, int] | None:
        """(key, correlation id) of a Metadata request frame (size prefix removed); None for another API, a
        version not served, a header with tagged fields or one that does not fit the frame."""
        if len(frame) < 10:
            return None
        api_key, version, correlation_id = _HEADER_START.unpack_from(frame)
        if api_key != METADATA or not is_supported(api_key, version):
            return None
        (client_id_length,) = _CLIENT_ID_LENGTH.unpack_from(frame, 8)
        end = 10 + max(client_id_length, 0)
        if request_class(api_key, version).__flexible__:      # request header v2: tagged fields, none here
            if end >= len(frame) or frame[end] != 0:
                return None
            end += 1
        if end > len(frame):
            return None
        return (version, frame[end:]), correlation_id

    def get(self, key: Key) -> bytes | None:
        version = self._log.metadata_version
        if version != self._version:
            self._forget(version)
            return None
        answer = self._answers.get(key)
        if answer is not None:
            self._answers.move_to_end(key)
        return answer

    def put(self, key: Key, encoded: bytes) -> None:
        version = self._log.metadata_version
        if version != self._version:
            self._forget(version)
        size = len(encoded) + len(key[1])
        if size > self._max_bytes // 4:
            return
        previous = self._answers.pop(key, None)
        if previous is not None:
            self._bytes -= len(previous) + len(key[1])
        self._bytes += size
        self._answers[key] = encoded
        while self._bytes > self._max_bytes:
            (_, body), dropped = self._answers.popitem(last=False)
            self._bytes -= len(dropped) + len(body)

    def _forget(self, version: int) -> None:
        self._answers.clear()
        self._bytes = 0
        self._version = version
