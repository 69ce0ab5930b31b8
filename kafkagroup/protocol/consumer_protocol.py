"""ConsumerProtocolSubscription and ConsumerProtocolAssignment v0-v3, byte-identical to Kafka's Java client.

Layout (every message starts with an int16 version header):

    Subscription v0: topics [string], user_data nullable bytes
                 v1: + owned_partitions [topic string, partitions [int32]]
                 v2: + generation_id int32
                 v3: + rack_id nullable string
    Assignment v0-v3: assigned_partitions [topic string, partitions [int32]], user_data nullable bytes

Java's rules, reproduced:

- encoding clamps a requested version above 3 to 3 (the header says 3) and drops the fields a version
  lacks; ``encode_subscription`` sorts topics and owned partitions (Java's ``String.compareTo`` order,
  then partition), ``encode_assignment`` groups partitions by topic in first-appearance order;
- decoding reads the version from the header; versions above 3 are read as v3 and whatever follows
  the v3 fields is ignored (Kafka promises new versions only append fields);
- a generation of -1 means "none"; a v3 rack id of "" decodes as no rack.

Strictness beyond Java (documented, deliberate): a message whose header says v0-v3 must end exactly
where that version's fields end (trailing bytes raise :class:`ProtocolError`, where Java ignores them),
and strings must be valid UTF-8.

Example::

    >>> encode_subscription(Subscription(["foo", "bar"]), version=0).hex()
    '00000000000200036261720003666f6fffffffff'
    >>> decode_subscription(bytes.fromhex('00000000000200036261720003666f6fffffffff')).topics
    ('bar', 'foo')
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

from kafkagroup.errors import ProtocolError
from kafkagroup.protocol._wire import Reader, Writer
from kafkagroup.java_order import java_string_key
from kafkagroup.structs import TopicPartition

#: Highest ConsumerProtocol version this codec writes (and reads field by field).
MAX_VERSION = 3
#: Generation id meaning "no generation" (Java: Optional.empty()).
NO_GENERATION = -1

# Smallest encodings, used to bound array counts before allocating: a string is >= 2 bytes, a
# topic-partitions entry >= 2 (topic) + 4 (partition count) bytes.
_MIN_STRING = 2
_MIN_TOPIC_PARTITIONS = 6


@dataclass(frozen=True)
class Subscription:
    """A member's ConsumerProtocolSubscription (its JoinGroup metadata for the "consumer" protocol).

    ``C0 = Subscription(["t0", "t1"], owned_partitions=[TopicPartition("t0", 0)], generation_id=4)``
    """

    topics: Sequence[str]
    user_data: Optional[bytes] = None
    owned_partitions: Sequence[TopicPartition] = ()
    generation_id: int = NO_GENERATION
    rack_id: Optional[str] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "topics", tuple(self.topics))
        object.__setattr__(
            self, "owned_partitions", tuple(TopicPartition(t, p) for t, p in self.owned_partitions)
        )
        if self.user_data is not None:
            object.__setattr__(self, "user_data", bytes(self.user_data))


@dataclass(frozen=True)
class Assignment:
    """A member's ConsumerProtocolAssignment (what the leader sends it in SyncGroup).

    ``Assignment([TopicPartition("t0", 0), TopicPartition("t1", 0)])``
    """

    partitions: Sequence[TopicPartition]
    user_data: Optional[bytes] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "partitions", tuple(TopicPartition(t, p) for t, p in self.partitions))
        if self.user_data is not None:
            object.__setattr__(self, "user_data", bytes(self.user_data))


def _clamp_version(version: int, message: str) -> int:
    if not isinstance(version, int) or version < 0:
        raise ProtocolError(f"{message}: unsupported version {version!r}")
    return min(version, MAX_VERSION)


def write_topic_partitions(writer: Writer, groups: Iterable[tuple[str, list[int]]], field: str) -> None:
    """``[topic string, partitions [int32]]`` -- shared by assignments, owned partitions, sticky user data."""
    groups = list(groups)
    writer.int32(len(groups))
    for topic, partitions in groups:
        writer.string(topic, field)
        writer.int32_array(partitions)


def read_topic_partitions(reader: Reader, field: str) -> list[TopicPartition]:
    count = reader.array_count(field, _MIN_TOPIC_PARTITIONS)
    result: list[TopicPartition] = []
    for i in range(count):
        topic = reader.string(f"{field}[{i}].topic")
        result.extend(TopicPartition(topic, p) for p in reader.int32_array(f"{field}[{i}].partitions"))
    return result


def group_in_first_appearance_order(partitions: Iterable[TopicPartition]) -> list[tuple[str, list[int]]]:
    grouped: dict[str, list[int]] = {}
    for topic, partition in partitions:
        grouped.setdefault(topic, []).append(partition)
    return list(grouped.items())


def encode_subscription(subscription: Subscription, version: int = MAX_VERSION) -> bytes:
    """Serialize as ``ConsumerProtocol.serializeSubscription(subscription, version)`` does."""
    version = _clamp_version(version, "ConsumerProtocolSubscription")
    writer = Writer()
    writer.int16(version)
    topics = sorted(subscription.topics, key=java_string_key)
    writer.int32(len(topics))
    for topic in topics:
        writer.string(topic, "topics")
    writer.nullable_bytes(subscription.user_data)
    if version >= 1:
        owned = sorted(subscription.owned_partitions, key=lambda tp: (java_string_key(tp.topic), tp.partition))
        write_topic_partitions(writer, group_in_first_appearance_order(owned), "owned_partitions")
    if version >= 2:
        writer.int32(subscription.generation_id)
    if version >= 3:
        writer.string(subscription.rack_id, "rack_id")
    return writer.getvalue()


def decode_subscription(data: bytes, what: str = "ConsumerProtocolSubscription") -> Subscription:
    """Deserialize as ``ConsumerProtocol.deserializeSubscription`` does (see module notes on strictness)."""
    reader = Reader(data, what)
    version = reader.int16("version")
    if version < 0:
        raise reader.fail("version", 0, f"unsupported version {version}")
    count = reader.array_count("topics", _MIN_STRING)
    topics = tuple(reader.string(f"topics[{i}]") for i in range(count))
    user_data = reader.nullable_bytes("user_data")
    owned: list[TopicPartition] = []
    generation = NO_GENERATION
    rack: Optional[str] = None
    if version >= 1:
        owned = read_topic_partitions(reader, "owned_partitions")
    if version >= 2:
        generation = reader.int32("generation_id")
    if version >= 3:
        rack = reader.string("rack_id", nullable=True) or None
    if version <= MAX_VERSION:
        reader.expect_end(f"end of v{version} message")
    return Subscription(topics, user_data, owned, generation, rack)


def encode_assignment(assignment: Assignment, version: int = MAX_VERSION) -> bytes:
    """Serialize as ``ConsumerProtocol.serializeAssignment(assignment, version)`` does."""
    version = _clamp_version(version, "ConsumerProtocolAssignment")
    writer = Writer()
    writer.int16(version)
    write_topic_partitions(writer, group_in_first_appearance_order(assignment.partitions), "assigned_partitions")
    writer.nullable_bytes(assignment.user_data)
    return writer.getvalue()


def decode_assignment(data: bytes, what: str = "ConsumerProtocolAssignment") -> Assignment:
    """Deserialize as ``ConsumerProtocol.deserializeAssignment`` does (see module notes on strictness)."""
    reader = Reader(data, what)
    version = reader.int16("version")
    if version < 0:
        raise reader.fail("version", 0, f"unsupported version {version}")
    partitions = read_topic_partitions(reader, "assigned_partitions")
    user_data = reader.nullable_bytes("user_data")
    if version <= MAX_VERSION:
        reader.expect_end(f"end of v{version} message")
    return Assignment(partitions, user_data)
