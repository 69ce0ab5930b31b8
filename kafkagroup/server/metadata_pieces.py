"""Metadata answers assembled from per-topic encoded entries, so that no answer holds the loop for long.

A Metadata answer for 1,000 topics costs 50-250 ms of Python to build and encode with kio in one go; the
whole-answer cache (:mod:`kafkagroup.server.answer_cache`) spares a repeated request that cost, but not a
first request, one that auto-creates its topics, or a client that varies its bytes.  Here the answer is
cut where it is cheap to cut: a topic's entry depends only on (version, error code, name, topic id,
partition count) -- every partition is led by this node at epoch 0 -- so each entry is encoded once by kio
and kept (:class:`TopicEntries`), and the answer is the encoding of its fixed fields around an empty topic
array (also kept, per version and address), with the array's count and the entries spliced in.  Every
version 0-12 lays the topic array out last but for ``cluster_authorized_operations`` (int32, v8-v10) and
the tagged-field section (one zero byte, v9+), which is what :func:`_frame` cuts on, and checks.

The caller (the Metadata handler) yields to the loop whenever the work its entries cost passes
``SLICE_WORK``: a cold entry counts ``8 + partitions``, a kept one 2, so a slice costs a few ms whatever
the request.  Limits: an entry is encoded whole, so one topic with tens of thousands of partitions is still
one step; at most ``max_bytes`` of entries are kept (all dropped when full: names are the client's choice).
"""
from __future__ import annotations

import io
import struct
import typing
import uuid
from functools import lru_cache
from typing import Any

from kio.serial import entity_writer

from kafkagroup.server.entities import to_entity
from kafkagroup.server.state import CLUSTER_ID, NODE_ID
from kafkagroup.server.versions import response_class

__all__ = ["TopicEntries", "SLICE_WORK", "assemble", "ENTRIES"]

METADATA = 3
SLICE_WORK = 256
_INT32 = struct.Struct(">i")
EntryKey = tuple[int, int, "str | None", int, int]   # (version, error code, name, topic id as an int, partitions)


def _encode(cls: type, values: Any) -> bytes:
    buf = io.BytesIO()
    entity_writer(cls)(buf, to_entity(cls, values))
    return buf.getvalue()


@lru_cache(maxsize=None)
def _topic_class(version: int) -> type:
    return typing.get_args(typing.get_type_hints(response_class(METADATA, version))["topics"])[0]  # tuple[X, ...]


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


@lru_cache(maxsize=64)
def _frame(version: int, host: str, port: int) -> tuple[bytes, bytes]:
    """(the body's bytes before the topic array's count, those after its last entry) of this node's answer."""
    cls = response_class(METADATA, version)
    encoded = _encode(cls, {"brokers": [{"node_id": NODE_ID, "host": host, "port": port, "rack": None}],
                            "cluster_id": CLUSTER_ID, "controller_id": NODE_ID, "topics": ()})
    tail = (4 if 8 <= version <= 10 else 0) + (1 if cls.__flexible__ else 0)
    empty = b"\x01" if cls.__flexible__ else _INT32.pack(0)
    cut = len(encoded) - tail - len(empty)
    if encoded[cut:cut + len(empty)] != empty:          # the layout above is not this version's: a bug here
        raise AssertionError(f"Metadata v{version}: the topic array is not where expected")
    return encoded[:cut], encoded[cut + len(empty):]


def assemble(version: int, host: str, port: int, entries: list[bytes]) -> list[bytes]:
    """The body of this node's Metadata answer of ``version`` with the encoded topic ``entries`` in order,
    as pieces."""
    head, tail = _frame(version, host, port)
    count = _uvarint(len(entries) + 1) if response_class(METADATA, version).__flexible__ \
        else _INT32.pack(len(entries))
    return [head + count, b"".join(entries), tail]


class TopicEntries:
    """Encoded topic entries of Metadata answers, by (version, error code, name, topic id, partitions)."""

    def __init__(self, max_bytes: int = 32 * 1024 * 1024) -> None:
        self._max_bytes = max_bytes
        self._bytes = 0
        self._entries: dict[EntryKey, bytes] = {}
        self.encoded = 0         # entries encoded (not found kept) so far: what a test reads

    def entry(self, version: int, error: int, name: str | None, topic_id: uuid.UUID, partitions: int
              ) -> tuple[bytes, int]:
        """The entry, and the work it cost (see ``SLICE_WORK``)."""
        key = (version, error, name, topic_id.int, partitions)   # an int hashes without a Python call
        found = self._entries.get(key)
        if found is not None:
            return found, 2
        self.encoded += 1
        encoded = _encode(_topic_class(version), {
            "error_code": error, "name": name, "topic_id": topic_id, "is_internal": False,
            "partitions": [{"error_code": 0, "partition_index": i, "leader_id": NODE_ID, "leader_epoch": 0,
                            "replica_nodes": (NODE_ID,), "isr_nodes": (NODE_ID,), "offline_replicas": ()}
                           for i in range(partitions)],
        })
        if self._bytes + len(encoded) > self._max_bytes:
            self._entries.clear()
            self._bytes = 0
        self._entries[key] = encoded
        self._bytes += len(encoded)
        return encoded, 8 + partitions


ENTRIES = TopicEntries()   # entries are a pure function of their key: one store serves every server in a process
