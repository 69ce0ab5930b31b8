"""What the client adapters share: Kafka's member bookkeeping, independent of the client library."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Optional

from kafkagroup.assignors import get_assignor
from kafkagroup.protocol import Assignment, Subscription, encode_assignment, encode_subscription
from kafkagroup.protocol.user_data import COOPERATIVE_STICKY, NO_GENERATION
from kafkagroup.structs import TopicPartition


class MemberState:
    """One consumer's assignor state and the Subscription bytes a Java consumer would send.

    Java's ConsumerCoordinator sends ConsumerProtocolSubscription v3: sorted topics, the assignor's user
    data, the partitions the member owns at JoinGroup time (none under the eager protocol, which revokes
    everything first; the current assignment under the cooperative one), its generation and its rack.
    """

    def __init__(self, strategy: str, rack: Optional[str] = None) -> None:
        self.strategy = strategy
        self.rack = rack or None
        self.inner = get_assignor(strategy)
        self.owned: list[TopicPartition] = []
        self.generation = NO_GENERATION

    def subscription(self, topics: Iterable[str]) -> Subscription:
        topics = list(topics)
        base = self.inner.metadata(topics)
        owned = self.owned if self.strategy == COOPERATIVE_STICKY else ()
        return Subscription(base.topics, base.user_data, owned, self.generation, self.rack)

    def subscription_bytes(self, topics: Iterable[str], version: int = 3) -> bytes:
        return encode_subscription(self.subscription(topics), version)

    def assigned(self, partitions: Iterable[Any], generation: int) -> None:
        self.owned = [TopicPartition(t, p) for t, p in partitions]
        self.generation = NO_GENERATION if generation is None else generation
        self.inner.on_assignment(Assignment(self.owned), self.generation)

    def assign(self, cluster: Any, subscriptions: Mapping[str, Subscription],
               instance_ids: Mapping[str, Optional[str]]) -> dict[str, bytes]:
        """Leader: member id -> ConsumerProtocolAssignment bytes (v3, Java's layout)."""
        result = self.inner.assign(cluster, subscriptions,
                                   group_instance_ids={m: i for m, i in instance_ids.items() if i})
        return {member: encode_assignment(asg, 3) for member, asg in result.items()}
