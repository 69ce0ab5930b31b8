"""Assignor user data carried in ConsumerProtocolSubscription.user_data, byte-identical to Java's.

What each Java assignor sends (the kafkagroup assignors call these to send the same):

- ``range`` / ``roundrobin``: no user data (null).
- ``sticky`` (eager, KIP-54/KIP-341): StickyAssignor user data v1, the member's previous assignment and
  its generation -- :func:`sticky_user_data`; null before the member's first assignment.

      v0: previous_assignment [topic string, partitions [int32]]
      v1: v0 + generation int32

  Topics are grouped as ``CollectionUtils.groupPartitionsByTopic`` groups them (Java HashMap order,
  see :mod:`kafkagroup.java_order`); partitions keep their input order.
- ``cooperative-sticky``: just the generation, one int32 (COOPERATIVE_STICKY_ASSIGNOR_USER_DATA_V0) --
  :func:`cooperative_sticky_user_data`; the owned partitions travel in the subscription's own field.

On the leader, :func:`member_owned_and_generation` applies one of the three ``memberData`` rules
(:class:`MemberDataRule`); each assignor class names its rule (``PartitionAssignor.member_data_rule``):
``STICKY_USER_DATA`` reads owned partitions + generation from the user data only (trying v1, then v0,
ignoring data that parses as neither); ``COOPERATIVE_STICKY`` takes the subscription's owned partitions and
its generation_id when >= 0, else the generation in the user data; ``SUBSCRIPTION`` takes the
subscription's fields. Example::

    >>> sticky_user_data([TopicPartition("foo", 0), TopicPartition("foo", 2)], 5).hex()
    '000000010003666f6f00000002000000000000000200000005'
"""
from __future__ import annotations

import struct
from enum import IntEnum
from typing import Iterable, NamedTuple, Optional

from kafkagroup.errors import ProtocolError
from kafkagroup.protocol._wire import Reader, Writer
from kafkagroup.protocol.consumer_protocol import (
    NO_GENERATION,
    Subscription,
    read_topic_partitions,
    write_topic_partitions,
)
from kafkagroup.java_order import java_hashmap_order
from kafkagroup.structs import TopicPartition

class MemberDataRule(IntEnum):
    """Where a leader's assignor reads a member's owned partitions and generation (Java's ``memberData``).

    The values are the leader codec's ``mode`` (``kafkagroup._codec``), so the bulk decoder and
    :func:`member_owned_and_generation` apply the same rule.
    """

    SUBSCRIPTION = 0          # the Subscription's owned_partitions and generation_id (ConsumerProtocol v1+/v2+)
    STICKY_USER_DATA = 1      # StickyAssignor: its user data (v1 with generation, v0 without); KIP-341
    COOPERATIVE_STICKY = 2    # CooperativeStickyAssignor: owned_partitions, generation_id or else user data; KIP-792


_I32 = struct.Struct(">i")


class StickyUserData(NamedTuple):
    """Decoded StickyAssignor user data; ``generation`` is None for v0 (written by old clients)."""

    partitions: tuple[TopicPartition, ...]
    generation: Optional[int]


def _group_like_java(partitions: Iterable[TopicPartition]) -> list[tuple[str, list[int]]]:
    partitions = [TopicPartition(t, p) for t, p in partitions]
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    return [(topic, by_topic[topic]) for topic in java_hashmap_order(tp.topic for tp in partitions)]


def encode_sticky_user_data(partitions: Iterable[TopicPartition], generation: Optional[int]) -> bytes:
    """StickyAssignor user data: v1 when ``generation`` is an int, v0 (legacy layout) when None."""
    writer = Writer()
    write_topic_partitions(writer, _group_like_java(partitions), "previous_assignment")
    if generation is not None:
        writer.int32(generation)
    return writer.getvalue()


def sticky_user_data(owned: Optional[Iterable[TopicPartition]], generation: int) -> Optional[bytes]:
    """What Java's eager StickyAssignor sends: None before the first assignment, else v1 bytes."""
    if owned is None:
        return None
    return encode_sticky_user_data(owned, generation)


def decode_sticky_user_data(data: bytes, what: str = "StickyAssignorUserData") -> StickyUserData:
    """Read StickyAssignor user data as Java does: v1 first, then v0; bytes after the fields are
    ignored (Java reads with a schema that stops at its last field). Raises ProtocolError (from the v0
    attempt, the more basic layout) when neither version parses.
    """
    v1 = Reader(data, "StickyAssignorUserData v1")
    try:
        partitions = read_topic_partitions(v1, "previous_assignment")
        generation = v1.int32("generation")
        return StickyUserData(tuple(partitions), generation)
    except ProtocolError:
        pass
    v0 = Reader(data, what)
    return StickyUserData(tuple(read_topic_partitions(v0, "previous_assignment")), None)


def cooperative_sticky_user_data(generation: int) -> bytes:
    """What Java's CooperativeStickyAssignor sends as user data: its generation, one int32."""
    return _I32.pack(generation)


def decode_cooperative_sticky_user_data(data: Optional[bytes]) -> Optional[int]:
    """Generation in cooperative-sticky user data: None when there is no user data, -1 when it is
    shorter than an int32 (Java falls back to DEFAULT_GENERATION), else the first int32."""
    if data is None:
        return None
    if len(data) < 4:
        return NO_GENERATION
    return _I32.unpack_from(data, 0)[0]


def member_owned_and_generation(
    subscription: Subscription, rule: MemberDataRule, *, strict: bool = False, what: str = "StickyAssignorUserData"
) -> tuple[tuple[TopicPartition, ...], int]:
    """Owned partitions and generation a leader's assignor reads from this member by ``rule`` (Java's
    ``memberData``); generation -1 means unknown. With ``strict``, sticky user data that parses as neither
    v1 nor v0 raises ProtocolError instead of being ignored as Java ignores it."""
    rule = MemberDataRule(rule)
    if rule is MemberDataRule.STICKY_USER_DATA:
        if not subscription.user_data:
            return (), NO_GENERATION
        try:
            decoded = decode_sticky_user_data(subscription.user_data, what)
        except ProtocolError:
            if strict:
                raise
            return (), NO_GENERATION
        return decoded.partitions, NO_GENERATION if decoded.generation is None else decoded.generation
    if rule is MemberDataRule.COOPERATIVE_STICKY:
        if subscription.generation_id >= 0:
            return tuple(subscription.owned_partitions), subscription.generation_id
        generation = decode_cooperative_sticky_user_data(subscription.user_data)
        return tuple(subscription.owned_partitions), NO_GENERATION if generation is None else generation
    return tuple(subscription.owned_partitions), subscription.generation_id
