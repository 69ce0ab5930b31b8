"""Subscribed topics of a consumer group, read from its members' ConsumerProtocol subscriptions.

Kafka parses every member's metadata for the selected protocol with the Subscription **v0** schema (the
prefix of all versions): ``int16 version, [string topics], nullable bytes user_data``; a failure makes
the subscribed topics unknown (``GroupMetadata.computeSubscribedTopics``).  They decide which offsets of a
Stable consumer group may expire (spec §3.9).  Limit: only the v0 prefix is read; later fields are ignored.
"""
from __future__ import annotations

import struct
from typing import Iterable

__all__ = ["subscription_topics", "group_subscribed_topics"]

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


def subscription_topics(metadata: bytes) -> set[str] | None:
    """Topics of one serialized Subscription, or None when the bytes do not parse as its v0 prefix."""
    try:
        (version,) = _I16.unpack_from(metadata, 0)
        if version < 0:
            return None
        pos = 2
        (count,) = _I32.unpack_from(metadata, pos)
        pos += 4
        if count < 0:
            return None
        topics = set()
        for _ in range(count):
            (length,) = _I16.unpack_from(metadata, pos)
            pos += 2
            if length < 0 or pos + length > len(metadata):
                return None
            topics.add(metadata[pos:pos + length].decode("utf-8"))
            pos += length
        (user_data_len,) = _I32.unpack_from(metadata, pos)
        pos += 4
        if user_data_len > 0 and pos + user_data_len > len(metadata):
            return None
        return topics
    except (struct.error, UnicodeDecodeError):
        return None


def group_subscribed_topics(protocol_type: str | None, protocol_name: str | None,
                            metadatas: Iterable[bytes], has_members: bool) -> set[str] | None:
    """Union of the members' topics for a ``consumer`` group with a selected protocol; ``set()`` for an
    empty consumer group; None when unknown (other protocol types, no protocol, unparsable metadata)."""
    if protocol_type != "consumer":
        return None
    if not has_members:
        return set()
    if protocol_name is None:
        return None
    topics: set[str] = set()
    seen: set[bytes] = set()     # members of an eager group usually send identical bytes: parse each once
    for metadata in metadatas:
        if metadata in seen:
            continue
        seen.add(metadata)
        parsed = subscription_topics(metadata)
        if parsed is None:
            return None
        topics |= parsed
    return topics
