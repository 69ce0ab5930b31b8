"""The topics of a ``subscribe(topics)`` call, checked before anything reaches the wire."""
from __future__ import annotations

from typing import Iterable

from kafkagroup.errors import InvalidGroupError
from kafkagroup.protocol.consumer_protocol import string_problem

__all__ = ["subscribed_topics"]


def subscribed_topics(topics: Iterable[str]) -> frozenset[str]:
    """The topics of a ``subscribe(topics)`` call, checked as Java's ``KafkaConsumer.subscribe`` does (no null or
    blank topic: IllegalArgumentException) and for what a ConsumerProtocolSubscription can carry (a Kafka STRING:
    UTF-8-encodable, at most 32,767 bytes).  Names Kafka's ``Topic.validate`` would refuse (characters outside
    [a-zA-Z0-9._-], over 249 characters) are accepted, as Java's subscribe accepts them: such a topic simply
    never appears in the metadata, so it gets no partitions."""
    if isinstance(topics, (str, bytes)):
        raise InvalidGroupError(f"subscribe takes a collection of topic names, got the single {type(topics).__name__} "
                                f"{topics[:60]!r}")
    chosen = frozenset(topics)
    for topic in chosen:
        if not isinstance(topic, str) or not topic.strip():
            raise InvalidGroupError(f"Topic collection to subscribe to cannot contain null or empty topic: {topic!r}")
        problem = string_problem(topic)
        if problem is not None:
            shown = repr(topic) if len(topic) <= 60 else f"{topic[:40]!r}...({len(topic)} chars)"
            raise InvalidGroupError(f"cannot subscribe to topic {shown}: the name {problem}")
    return chosen
