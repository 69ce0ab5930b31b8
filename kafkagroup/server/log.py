"""The in-memory log behind Produce, Fetch and ListOffsets: enough for records to flow, nothing durable.

Everything here lives in memory and is lost when the server stops (committed *offsets* are the
coordinator's and live in its store).  One replica, no compaction, no transactions.

A partition keeps the record batches (magic v2) a producer sent, as opaque bytes with two fields
rewritten: ``baseOffset`` (the next offset of the partition) and ``partitionLeaderEpoch`` (0); the batch
CRC covers neither (it starts at ``attributes``), so the client's checksum stays valid.  A retried batch
of an idempotent producer is recognised and not appended twice.  The batch's
``lastOffsetDelta`` gives how many offsets it takes.  The high watermark is the last offset + 1 (every
write is "replicated" at once).  A per-partition byte bound (``log.retention.bytes``) drops the oldest
batches: the log start offset moves past them and fetching below it is OFFSET_OUT_OF_RANGE.

Fetches waiting for data (``InMemoryLog.wait_for_append``) wait on the partitions they read: an append
wakes only the fetches waiting on that partition.
"""
from __future__ import annotations

import asyncio
import bisect
import re
import struct
import uuid
from dataclasses import dataclass, field

from crc32c import crc32c

from kafkagroup.server.compression import CompressionError, decompress_records
from kafkagroup.server.errors import BatchError   # re-exported: its old home

__all__ = ["InMemoryLog", "PartitionLog", "BatchError", "split_batches", "TOPIC_ID_NAMESPACE",
           "OFFSET_OUT_OF_RANGE", "CORRUPT_MESSAGE", "MESSAGE_TOO_LARGE", "INVALID_TOPIC_EXCEPTION", "INVALID_RECORD"]

# Kafka error codes only the log answers (the coordinator's live in kafkagroup.messages.ErrorCode).
OFFSET_OUT_OF_RANGE = 1
CORRUPT_MESSAGE = 2
MESSAGE_TOO_LARGE = 10
INVALID_TOPIC_EXCEPTION = 17
INVALID_RECORD = 87

# Topic ids are uuid5(namespace, name): stable for a name across restarts of the server.
TOPIC_ID_NAMESPACE = uuid.UUID("6b61666b-6167-726f-7570-2d746f706963")
_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}\Z")

# Record batch v2 layout (DefaultRecordBatch): offsets of the fields read or rewritten here.
_BATCH_OVERHEAD = 61                    # header size up to and including the record count
_BASE_OFFSET = struct.Struct(">q")      # @0
_LENGTH = struct.Struct(">i")           # @8: bytes after this field
_LEADER_EPOCH = struct.Struct(">i")     # @12
_MAGIC_AT = 16
_CRC = struct.Struct(">I")              # @17, covers @21..end
_LAST_OFFSET_DELTA = struct.Struct(">i")  # @23
_ATTRIBUTES = struct.Struct(">h")       # @21: compression in bits 0-2, log-append time in bit 3
_BASE_TIMESTAMP = struct.Struct(">q")   # @27
_MAX_TIMESTAMP = struct.Struct(">q")    # @35
_RECORD_COUNT = struct.Struct(">i")     # @57
_COMPRESSION_MASK, _LOG_APPEND_TIME = 0x07, 0x08
_PRODUCER = struct.Struct(">qhi")       # @43: producerId, producerEpoch, baseSequence
_RECENT_BATCHES_PER_PRODUCER = 5        # Kafka's ProducerStateEntry keeps the last 5 batches' metadata


def split_batches(records: bytes, max_batch_bytes: int = 2**31 - 1) -> list[bytearray]:
    """The v2 record batches in ``records``, each checked (length, magic, size, CRC32C, offset delta).

    A batch larger than ``max_batch_bytes`` (the topic's ``max.message.bytes``) is MESSAGE_TOO_LARGE: Kafka
    compares the batch's size as sent (its ``sizeInBytes``: the 12-byte offset and length prefix included,
    compressed records as compressed), before checking its CRC."""
    batches = []
    pos, end = 0, len(records)
    if end == 0:
        raise BatchError(INVALID_RECORD, "produce request carries no record batch")
    while pos < end:
        if end - pos < _BATCH_OVERHEAD:
            raise BatchError(CORRUPT_MESSAGE, f"record batch at byte {pos} is truncated ({end - pos} bytes left)")
        (length,) = _LENGTH.unpack_from(records, pos + 8)
        size = 12 + length
        if length < _BATCH_OVERHEAD - 12 or pos + size > end:
            raise BatchError(CORRUPT_MESSAGE, f"record batch at byte {pos} declares length {length} "
                                              f"({end - pos} bytes left)")
        magic = records[pos + _MAGIC_AT]
        if magic != 2:
            raise BatchError(INVALID_RECORD, f"record batch at byte {pos} has magic {magic}; only v2 is accepted")
        if size > max_batch_bytes:
            raise BatchError(MESSAGE_TOO_LARGE, f"the record batch at byte {pos} is {size} bytes, over the maximum "
                                                f"of {max_batch_bytes} (max.message.bytes / message.max.bytes)")
        batch = bytearray(records[pos:pos + size])
        (crc,) = _CRC.unpack_from(batch, 17)
        if crc32c(memoryview(batch)[21:]) != crc:
            raise BatchError(CORRUPT_MESSAGE, f"record batch at byte {pos} fails its CRC32C check")
        (delta,) = _LAST_OFFSET_DELTA.unpack_from(batch, 23)
        if delta < 0:
            raise BatchError(CORRUPT_MESSAGE, f"record batch at byte {pos} has lastOffsetDelta {delta}")
        batches.append(batch)
        pos += size
    return batches


@dataclass(slots=True)
class PartitionLog:
    """One partition: batches in offset order, ``bases[i]`` the base offset of ``batches[i]``."""

    max_bytes: int
    log_start_offset: int = 0
    high_watermark: int = 0
    size_bytes: int = 0
    batches: list[bytes] = field(default_factory=list)
    bases: list[int] = field(default_factory=list)
    # idempotent producers: producer id -> recent (epoch, base sequence, base offset), newest last
    producers: dict[int, list[tuple[int, int, int]]] = field(default_factory=dict)
    # fetches waiting for data on this partition, woken (and forgotten) by the next append
    waiters: set[asyncio.Future[None]] = field(default_factory=set)

    def append(self, batches: list[bytearray]) -> int:
        """Append checked batches; return the base offset of the first.  A batch an idempotent producer
        sends again (same producer id, epoch and base sequence as one of its last five: a retry whose
        first answer was lost) is not appended twice; its original base offset is answered, as Kafka does.
        Sequence gaps are not checked.  Oldest batches beyond the byte bound are dropped (the newest batch
        is always kept)."""
        first = None
        for batch in batches:
            producer_id, epoch, sequence = _PRODUCER.unpack_from(batch, 43)
            if producer_id >= 0 and sequence >= 0:
                recent = self.producers.setdefault(producer_id, [])
                duplicate = next((o for e, q, o in recent if e == epoch and q == sequence), None)
                if duplicate is not None:
                    first = duplicate if first is None else first
                    continue
                recent.append((epoch, sequence, self.high_watermark))
                del recent[:-_RECENT_BATCHES_PER_PRODUCER]
            if first is None:
                first = self.high_watermark
            _BASE_OFFSET.pack_into(batch, 0, self.high_watermark)
            _LEADER_EPOCH.pack_into(batch, 12, 0)
            (delta,) = _LAST_OFFSET_DELTA.unpack_from(batch, 23)
            self.bases.append(self.high_watermark)
            self.batches.append(bytes(batch))
            self.size_bytes += len(batch)
            self.high_watermark += delta + 1
        while self.size_bytes > self.max_bytes and len(self.batches) > 1:
            self.size_bytes -= len(self.batches[0])
            del self.batches[0], self.bases[0]
            self.log_start_offset = max(self.log_start_offset, self.bases[0])
        if first is not None:
            self.wake_waiters()
        return self.high_watermark if first is None else first

    def wake_waiters(self) -> None:
        waiters, self.waiters = self.waiters, set()
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    def delete_records(self, offset: int) -> int:
        """DeleteRecords: move the log start offset up to ``offset`` (-1 = the high watermark), dropping the
        batches wholly below it, as Kafka's ``deleteRecordsOnLeader``; a lower offset leaves it where it is.
        Returns the new log start offset (the answer's low watermark).  ``offset`` must be at most the high
        watermark (the handler answers OFFSET_OUT_OF_RANGE otherwise)."""
        target = self.high_watermark if offset == -1 else offset
        if target > self.log_start_offset:
            self.log_start_offset = target
            drop = bisect.bisect_right(self.bases, target) - 1      # the batch holding target stays
            if target == self.high_watermark:
                drop = len(self.batches)
            if drop > 0:
                self.size_bytes -= sum(len(b) for b in self.batches[:drop])
                del self.batches[:drop], self.bases[:drop]
        return self.log_start_offset

    def batches_from(self, offset: int, max_bytes: int, at_least_one: bool) -> list[bytes]:
        """The whole batches a read from ``offset`` returns (not copied): from the one holding ``offset``, up
        to ``max_bytes`` (the first batch even if larger when ``at_least_one``, KIP-74); none at the high
        watermark.  ``offset`` must be in range."""
        if offset >= self.high_watermark:
            return []
        i = max(bisect.bisect_right(self.bases, offset) - 1, 0)
        out: list[bytes] = []
        total = 0
        for j in range(i, len(self.batches)):
            batch = self.batches[j]
            if total + len(batch) > max_bytes and (out or not at_least_one):
                break
            out.append(batch)
            total += len(batch)
        return out

    def read(self, offset: int, max_bytes: int, at_least_one: bool) -> bytes:
        """:meth:`batches_from`, joined; ``b""`` at the high watermark."""
        return b"".join(self.batches_from(offset, max_bytes, at_least_one))

    def in_range(self, offset: int) -> bool:
        return self.log_start_offset <= offset <= self.high_watermark

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int]:
        """(offset, timestamp) of the first record whose timestamp is >= ``timestamp``, else (-1, -1), as
        Kafka answers: the first batch (in offset order) whose max timestamp reaches it, then the first such
        record inside -- inside a compressed batch too (its records are decompressed for this, as Kafka's
        broker reads them: a consumer seeking to the batch's base offset would read the earlier records of
        the batch again, it does not skip them)."""
        for base, batch in zip(self.bases, self.batches):
            (max_ts,) = _MAX_TIMESTAMP.unpack_from(batch, 35)
            if max_ts >= timestamp:
                records = record_timestamps(batch)
                if records is None:
                    return base, max_ts
                return next(((base + d, ts) for d, ts in records if ts >= timestamp), (base, max_ts))
        return -1, -1

    def max_timestamp(self) -> tuple[int, int]:
        """(offset, timestamp) for ListOffsets' MAX_TIMESTAMP (KIP-734): the first record holding the largest
        timestamp, in the first batch that reaches it (compressed or not); (-1, -1) when empty."""
        best = (-1, -1, b"")
        for base, batch in zip(self.bases, self.batches):
            (max_ts,) = _MAX_TIMESTAMP.unpack_from(batch, 35)
            if max_ts > best[1]:
                best = (base, max_ts, batch)
        base, max_ts, batch = best
        records = record_timestamps(batch) if batch else None
        if records is None:
            return base, max_ts
        return next(((base + d, ts) for d, ts in records if ts == max_ts), (base, max_ts))


def _varint(data: bytes | bytearray, pos: int) -> tuple[int, int]:
    """A zigzag varint (record fields) at ``pos``: (value, position after it)."""
    shift = raw = 0
    while True:
        byte = data[pos]
        pos += 1
        raw |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (raw >> 1) ^ -(raw & 1), pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")


def record_timestamps(batch: bytes | bytearray) -> list[tuple[int, int]] | None:
    """(offset delta, timestamp) of every record of a v2 batch, in order; None for a batch whose records do
    not parse or decompress (its CRC is the client's; the records are not checked at produce time).

    A log-append-time batch needs no record: each carries the batch's max timestamp.  A compressed batch is
    decompressed here (:mod:`kafkagroup.server.compression`) and its records read one by one in Python --
    unavoidable there, the timestamps being inside the compressed bytes; a lookup does it for the one batch
    that holds its answer, never at append time."""
    (attributes,) = _ATTRIBUTES.unpack_from(batch, 21)
    (last_delta,) = _LAST_OFFSET_DELTA.unpack_from(batch, 23)
    (base_ts,) = _BASE_TIMESTAMP.unpack_from(batch, 27)
    (max_ts,) = _MAX_TIMESTAMP.unpack_from(batch, 35)
    if attributes & _LOG_APPEND_TIME:        # every record carries the batch's (max) timestamp
        return [(d, max_ts) for d in range(last_delta + 1)]
    (count,) = _RECORD_COUNT.unpack_from(batch, 57)
    codec = attributes & _COMPRESSION_MASK
    if codec:
        try:
            records: bytes | bytearray = decompress_records(codec, memoryview(batch)[_BATCH_OVERHEAD:])
        except CompressionError:
            return None
        pos = 0
    else:
        records, pos = batch, _BATCH_OVERHEAD
    out = []
    try:
        for _ in range(count):
            length, pos = _varint(records, pos)
            end = pos + length
            ts_delta, pos = _varint(records, pos + 1)       # after the record's attributes byte
            offset_delta, pos = _varint(records, pos)
            out.append((offset_delta, base_ts + ts_delta))
            pos = end
    except (IndexError, ValueError):
        return None
    return out


class InMemoryLog:
    """Topics -> partitions, created from ``--topic``, by CreateTopics or on first use (``num.partitions``),
    each with the topic configs it was created with (:mod:`kafkagroup.server.topic_config`)."""

    def __init__(self, *, num_partitions: int = 1, partition_max_bytes: int = 256 * 1024 * 1024,
                 auto_create: bool = True, message_max_bytes: int = 1_048_588) -> None:
        if num_partitions < 1:
            raise ValueError(f"num.partitions must be at least 1, got {num_partitions}")
        if partition_max_bytes < 1:
            raise ValueError(f"log.retention.bytes must be at least 1, got {partition_max_bytes}")
        self.num_partitions = num_partitions
        self.partition_max_bytes = partition_max_bytes
        self.auto_create = auto_create
        self.message_max_bytes = message_max_bytes
        self.topics: dict[str, list[PartitionLog]] = {}
        self.configs: dict[str, dict[str, str]] = {}      # topic -> the configs set at creation
        self._incarnation: dict[str, int] = {}             # topic -> times created before (for its id)
        self._ids: dict[str, uuid.UUID] = {}               # topic -> its id, while it exists
        self.metadata_version = 0        # bumped by every topic created, grown or deleted (consumer groups watch it)

    @staticmethod
    def topic_problem(name: str | None) -> str | None:
        if name is None or not _LEGAL_TOPIC.match(name) or name in (".", ".."):
            return f"illegal topic name {name!r} (1-249 of [a-zA-Z0-9._-], not '.' or '..')"
        return None

    def topic_id(self, name: str) -> uuid.UUID:
        """uuid5 of the name (and, for a topic deleted and created again, of how many times it was: a new
        topic gets a new id, as in Kafka, so that clients tell the two apart); stable across restarts for a
        topic created once."""
        found = self._ids.get(name)
        if found is not None:
            return found
        again = self._incarnation.get(name, 0)
        found = uuid.uuid5(TOPIC_ID_NAMESPACE, name if again == 0 else f"{name}\x00{again}")
        if name in self.topics:       # kept for existing topics only (Metadata asks for every one, every time)
            self._ids[name] = found
        return found

    def create(self, name: str, partitions: int | None = None, configs: dict[str, str] | None = None
               ) -> list[PartitionLog]:
        problem = self.topic_problem(name)
        if problem:
            raise ValueError(problem)
        count = self.num_partitions if partitions is None else partitions
        if count < 1:
            raise ValueError(f"topic {name!r}: partition count must be at least 1, got {count}")
        existing = self.topics.get(name)
        if existing is not None:
            return existing
        self.configs[name] = dict(configs or {})
        created = [PartitionLog(self._partition_bound(name)) for _ in range(count)]
        self.topics[name] = created
        self.metadata_version += 1
        return created

    def add_partitions(self, name: str, count: int) -> None:
        """Grow topic ``name`` to ``count`` partitions (CreatePartitions; the handler checks the count)."""
        parts = self.topics[name]
        parts.extend(PartitionLog(self._partition_bound(name)) for _ in range(count - len(parts)))
        self.metadata_version += 1

    def delete(self, name: str) -> None:
        """Drop topic ``name`` and its records (DeleteTopics); a topic created later under the name gets a
        new id.  Fetches waiting on its partitions are woken (they answer UNKNOWN_TOPIC_OR_PARTITION)."""
        for partition in self.topics[name]:
            partition.wake_waiters()
        del self.topics[name]
        self.configs.pop(name, None)
        self._ids.pop(name, None)
        self._incarnation[name] = self._incarnation.get(name, 0) + 1
        self.metadata_version += 1

    def max_message_bytes(self, topic: str) -> int:
        """The largest record batch a produce to ``topic`` may carry: its ``max.message.bytes``, else the
        node's ``message.max.bytes``."""
        value = self.configs.get(topic, {}).get("max.message.bytes")
        return self.message_max_bytes if value is None else int(value)

    def _partition_bound(self, topic: str) -> int:
        """Bytes kept per partition: a positive ``retention.bytes`` of the topic, else ``log.retention.bytes``
        (Kafka's -1, unbounded, is not offered: the log is in memory)."""
        value = int(self.configs.get(topic, {}).get("retention.bytes", "-1"))
        return value if value > 0 else self.partition_max_bytes

    def partition(self, topic: str, index: int, *, create: bool = False) -> PartitionLog | None:
        parts = self.topics.get(topic)
        if parts is None and create and self.auto_create and self.topic_problem(topic) is None:
            parts = self.create(topic)
        if parts is None or not 0 <= index < len(parts):
            return None
        return parts[index]

    async def wait_for_append(self, partitions: list[PartitionLog], timeout_s: float) -> None:
        """Return at the next append to one of ``partitions`` or after ``timeout_s`` (whichever first); a
        cancelled wait leaves nothing behind."""
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[None] = loop.create_future()
        for partition in partitions:
            partition.waiters.add(waiter)
        timer = loop.call_later(timeout_s, _wake, waiter)
        try:
            await waiter
        finally:
            timer.cancel()
            for partition in partitions:
                partition.waiters.discard(waiter)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
