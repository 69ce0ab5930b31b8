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

Values the wire cannot carry raise :class:`ProtocolError` naming the field and the value, from the encoders
(Java's generated ``ConsumerProtocolSubscription``/``Assignment`` throw "field is too long to be serialized"):
every STRING -- ``topics`` (v0+), owned/assigned partitions' ``topic`` (v1+ / all), ``rack_id`` (v3+) -- must be
UTF-8-encodable (no lone surrogate; Java's ``getBytes(UTF_8)`` would silently send ``?`` instead) and at most
32,767 bytes encoded (int16 length); ``user_data`` (BYTES, all versions) must be bytes of at most 2**31 - 1;
``generation_id`` (v2+) and partition ids are int32.  A field the requested version does not carry is not
checked.  The check costs nothing on the good path: the message is encoded once and only a failure is
diagnosed field by field.

Example::

    >>> encode_subscription(Subscription(["foo", "bar"]), version=0).hex()
    '00000000000200036261720003666f6fffffffff'
    >>> decode_subscription(bytes.fromhex('00000000000200036261720003666f6fffffffff')).topics
    ('bar', 'foo')
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, Iterable, Optional, Sequence

from kafkagroup.errors import ProtocolError
from kafkagroup.protocol._wire import INT16_MAX, INT32_MAX, INT32_MIN, Reader, Writer
from kafkagroup.java_order import java_string_key
from kafkagroup.structs import TopicPartition, topic_partitions

__all__ = [
    "MAX_VERSION", "NO_GENERATION", "MAX_STRING_BYTES", "MAX_BYTES_LENGTH", "Subscription", "Assignment",
    "short_repr", "string_problem", "encode_subscription", "decode_subscription", "encode_assignment", "decode_assignment",
    "write_topic_partitions", "read_topic_partitions", "group_in_first_appearance_order",
]

_ONLY_TOPIC_PARTITIONS = frozenset({TopicPartition})

#: Highest ConsumerProtocol version this codec writes (and reads field by field).
MAX_VERSION = 3
#: Generation id meaning "no generation" (Java: Optional.empty()).
NO_GENERATION = -1

# Smallest encodings, used to bound array counts before allocating: a string is >= 2 bytes, a
# topic-partitions entry >= 2 (topic) + 4 (partition count) bytes.
_MIN_STRING = 2
_MIN_TOPIC_PARTITIONS = 6
#: Kafka's STRING / COMPACT_STRING: at most this many UTF-8 bytes (int16 length), every version and field.
MAX_STRING_BYTES = INT16_MAX
#: Kafka's BYTES: int32 length.
MAX_BYTES_LENGTH = INT32_MAX


def short_repr(value: object) -> str:
    """``repr`` cut to 60 characters (a 40,000-character topic name is not put in a message whole)."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:45]}...({len(text)} chars)"


def string_problem(value: str) -> Optional[str]:
    """Why ``value`` cannot be a Kafka STRING (not UTF-8-encodable, or over 32,767 encoded bytes), or None.

    >>> string_problem("orders") is None
    True
    >>> string_problem("t\\ud800")
    'is not encodable as UTF-8 (lone surrogate U+D800 at index 1)'
    """
    if value.isascii():
        size = len(value)
    else:
        try:
            size = len(value.encode("utf-8"))
        except UnicodeEncodeError as exc:
            return f"is not encodable as UTF-8 (lone surrogate U+{ord(value[exc.start]):04X} at index {exc.start})"
    if size > MAX_STRING_BYTES:
        return f"is {size} UTF-8 bytes, over Kafka's STRING limit of {MAX_STRING_BYTES}"
    return None


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
        object.__setattr__(self, "owned_partitions", _as_topic_partitions(self.owned_partitions))
        object.__setattr__(self, "user_data", _user_data(self.user_data, "ConsumerProtocolSubscription"))


@dataclass(frozen=True)
class Assignment:
    """A member's ConsumerProtocolAssignment (what the leader sends it in SyncGroup).

    ``Assignment([TopicPartition("t0", 0), TopicPartition("t1", 0)])``
    """

    partitions: Sequence[TopicPartition]
    user_data: Optional[bytes] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "partitions", _as_topic_partitions(self.partitions))
        object.__setattr__(self, "user_data", _user_data(self.user_data, "ConsumerProtocolAssignment"))

    @property
    def by_topic(self) -> tuple[tuple[str, tuple[int, ...]], ...]:
        """:attr:`partitions` per topic, ``((topic, partition numbers), ...)``, topics with at least one partition,
        as the decoder read them (a constructed Assignment: in first-appearance order, computed once).  Not a
        field: equality and repr ignore it."""
        groups = self.__dict__.get("_by_topic")
        if groups is None:
            groups = tuple((t, tuple(ps)) for t, ps in group_in_first_appearance_order(self.partitions))
            object.__setattr__(self, "_by_topic", groups)
        return groups

    @property
    def topics(self) -> frozenset[str]:
        """The topics of :attr:`partitions`."""
        return frozenset(topic for topic, _ in self.by_topic)

    @classmethod
    def _decoded(cls, partitions: tuple[TopicPartition, ...], user_data: Optional[bytes],
                 by_topic: Optional[tuple[tuple[str, tuple[int, ...]], ...]] = None) -> "Assignment":
        """An Assignment of values the decoder produced (already TopicPartitions and bytes): no second pass;
        ``by_topic`` if the decoder recorded it (see the property)."""
        assignment = object.__new__(cls)
        object.__setattr__(assignment, "partitions", partitions)
        object.__setattr__(assignment, "user_data", user_data)
        if by_topic is not None:
            object.__setattr__(assignment, "_by_topic", by_topic)
        return assignment


def _as_topic_partitions(values: Iterable[Any]) -> tuple[TopicPartition, ...]:
    """``values`` as a tuple of TopicPartitions.  A list or tuple of TopicPartitions (a member's own, an
    assignor's result) is taken as it is, checked by one C-level pass over the types; anything else is built
    pair by pair."""
    if type(values) in (tuple, list) and set(map(type, values)) <= _ONLY_TOPIC_PARTITIONS:
        return tuple(values)
    return tuple(TopicPartition(t, p) for t, p in values)


def _user_data(value: object, message: str) -> Optional[bytes]:
    """None or the bytes of a bytes-like value; anything else (a str, an int that ``bytes()`` would turn into
    zero bytes) is refused naming the field."""
    if value is None or type(value) is bytes:
        return value  # type: ignore[return-value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise ProtocolError(f"{message}: user_data must be bytes or None, got {type(value).__name__} {short_repr(value)}")


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


def read_topic_partitions(reader: Reader, field: str,
                          by_topic: Optional[list[tuple[str, tuple[int, ...]]]] = None) -> list[TopicPartition]:
    """The partitions, in the order sent; ``by_topic`` (if given) gets ``(topic, numbers)`` for each topic entry
    that has at least one."""
    count = reader.array_count(field, _MIN_TOPIC_PARTITIONS)
    result: list[TopicPartition] = []
    for i in range(count):
        topic = reader.string(f"{field}[{i}].topic")
        numbers = reader.int32_array(f"{field}[{i}].partitions")
        # a member decodes every partition it is assigned, at every rebalance: made in C loops
        result.extend(topic_partitions(topic, numbers))
        if by_topic is not None and numbers:
            by_topic.append((topic, numbers))
    return result


def group_in_first_appearance_order(partitions: Iterable[TopicPartition]) -> list[tuple[str, list[int]]]:
    grouped: dict[str, list[int]] = {}
    for topic, partition in partitions:
        grouped.setdefault(topic, []).append(partition)
    return list(grouped.items())


def _by_topic_in_java_order(partitions: Sequence[TopicPartition]) -> list[tuple[str, list[int]]]:
    """``[(topic, ascending partitions)]`` with topics in Java's String order (duplicates kept), as Java's
    ``ConsumerProtocol`` writes owned partitions.  One C sort of the pairs, then one slice per topic (a member
    sends every partition it owns in every JoinGroup)."""
    if not partitions:
        return []
    try:
        ordered = sorted(partitions)
    except TypeError as exc:   # a partition that is not an int: the encoder's diagnosis names it
        raise ValueError(str(exc)) from None
    topics, numbers = zip(*ordered)
    runs: dict[str, list[int]] = {}
    start = 0
    for topic in sorted(set(topics)):          # the order of the runs in ``ordered``
        end = start + topics.count(topic)
        runs[topic] = list(numbers[start:end])
        start = end
    return [(topic, runs[topic]) for topic in sorted(runs, key=java_string_key)]


def encode_subscription(subscription: Subscription, version: int = MAX_VERSION) -> bytes:
    """Serialize as ``ConsumerProtocol.serializeSubscription(subscription, version)`` does.

    A value the wire cannot carry raises :class:`ProtocolError` naming the field and the value (module notes).
    """
    version = _clamp_version(version, "ConsumerProtocolSubscription")
    try:
        return _encode_subscription(subscription, version)
    except (UnicodeEncodeError, ValueError, OverflowError, struct.error) as exc:
        raise _subscription_problem(subscription, version, exc) from None


def _encode_subscription(subscription: Subscription, version: int) -> bytes:
    writer = Writer()
    writer.int16(version)
    topics = sorted(subscription.topics, key=java_string_key)
    writer.int32(len(topics))
    for topic in topics:
        writer.string(topic, "topics")
    writer.nullable_bytes(subscription.user_data)
    if version >= 1:
        write_topic_partitions(writer, _by_topic_in_java_order(subscription.owned_partitions), "owned_partitions")
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
    try:
        writer = Writer()
        writer.int16(version)
        write_topic_partitions(writer, group_in_first_appearance_order(assignment.partitions),
                               "assigned_partitions")
        writer.nullable_bytes(assignment.user_data)
        return writer.getvalue()
    except (UnicodeEncodeError, ValueError, OverflowError, struct.error) as exc:
        what = f"ConsumerProtocolAssignment v{version}"
        problem = (_partitions_problem(assignment.partitions, "assigned_partitions")
                   or _user_data_problem(assignment.user_data))
        raise ProtocolError(f"{what}: {problem}" if problem else f"{what}: {exc}") from None


# -- diagnosis of an encoding failure (slow path, runs only after the encoder failed) -------------------------


def _string_field_problem(value: object, field: str) -> Optional[str]:
    if not isinstance(value, str):
        return f"{field}={short_repr(value)} is not a str"
    problem = string_problem(value)
    return None if problem is None else f"{field}={short_repr(value)} {problem}"


def _int32_problem(value: object, field: str) -> Optional[str]:
    if isinstance(value, bool) or not isinstance(value, int):
        return f"{field}={short_repr(value)} is not an int"
    if not INT32_MIN <= value <= INT32_MAX:
        return f"{field}={value} is outside int32 [{INT32_MIN}, {INT32_MAX}]"
    return None


def _partitions_problem(partitions: Iterable[TopicPartition], field: str) -> Optional[str]:
    for topic, partition in partitions:
        problem = (_string_field_problem(topic, f"{field} topic")
                   or _int32_problem(partition, f"{field} {short_repr(topic)} partition"))
        if problem:
            return problem
    return None


def _user_data_problem(user_data: Optional[bytes]) -> Optional[str]:
    if user_data is not None and len(user_data) > MAX_BYTES_LENGTH:
        return f"user_data is {len(user_data)} bytes, over Kafka's BYTES limit of {MAX_BYTES_LENGTH}"
    return None


def _subscription_problem(subscription: Subscription, version: int, exc: Exception) -> ProtocolError:
    """The first field (in wire order) of a subscription that ``version`` cannot carry, as a ProtocolError."""
    what = f"ConsumerProtocolSubscription v{version}"
    problem: Optional[str] = None
    for i, topic in enumerate(sorted(subscription.topics, key=java_string_key)):   # wire order
        problem = problem or _string_field_problem(topic, f"topics[{i}]")
    problem = problem or _user_data_problem(subscription.user_data)
    if version >= 1:
        problem = problem or _partitions_problem(subscription.owned_partitions, "owned_partitions")
    if version >= 2:
        problem = problem or _int32_problem(subscription.generation_id, "generation_id")
    if version >= 3 and subscription.rack_id is not None:
        problem = problem or _string_field_problem(subscription.rack_id, "rack_id")
    return ProtocolError(f"{what}: {problem}" if problem else f"{what}: {exc}")


def decode_assignment(data: bytes, what: str = "ConsumerProtocolAssignment") -> Assignment:
    """Deserialize as ``ConsumerProtocol.deserializeAssignment`` does (see module notes on strictness)."""
    reader = Reader(data, what)
    version = reader.int16("version")
    if version < 0:
        raise reader.fail("version", 0, f"unsupported version {version}")
    by_topic: list[tuple[str, tuple[int, ...]]] = []
    partitions = read_topic_partitions(reader, "assigned_partitions", by_topic)
    user_data = reader.nullable_bytes("user_data")
    if version <= MAX_VERSION:
        reader.expect_end(f"end of v{version} message")
    return Assignment._decoded(tuple(partitions), user_data, tuple(by_topic))
