"""What the client adapters share: one kafkagroup assignor object per consumer, plus the member facts the
client library does not hand to its assignors. Independent of the client library.

The assignor object keeps its own state (the sticky assignors' last assignment and generation) and writes
the Subscription (:meth:`kafkagroup.assignors.PartitionAssignor.metadata`); an adapter only converts the
library's arguments and results.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from typing import Any, Optional

from kafkagroup.assignors import RebalanceProtocol, get_assignor
from kafkagroup.assignors.configured import JAVA_ASSIGNOR_CLASSES
from kafkagroup.protocol import NO_GENERATION, Assignment, Subscription, encode_assignment, encode_subscription
from kafkagroup.structs import TopicPartition


class MemberState:
    """One consumer's assignor and what a Java consumer would add to its Subscription: the partitions it owns
    and its generation (which the Python clients' coordinators do not pass to an assignor's ``metadata``), and
    its rack.

    The owned partitions sent are what a Java consumer still owns when it builds its JoinGroup metadata, i.e.
    after ``ConsumerCoordinator.onJoinPrepare``: under EAGER nothing (everything was revoked); under COOPERATIVE
    the last assignment minus the partitions of topics no longer subscribed (revoked before the JoinGroup).
    The adapter cannot see which protocol the library selected, so it takes COOPERATIVE to mean "this assignor
    supports it": true whenever the consumer lists only such assignors (kafka-python runs the highest protocol
    all its listed assignors support).  Limit: listed next to an EAGER-only assignor, a cooperative one still
    sends its last assignment under the EAGER protocol that kafka-python then runs (Java would send none);
    the leader's assignors only read them as stickiness hints then.
    """

    def __init__(self, strategy: str, rack: Optional[str] = None) -> None:
        self.assignor = get_assignor(strategy)
        self.rack = rack or None
        self.owned: list[TopicPartition] = []
        self.generation = NO_GENERATION

    def subscription_bytes(self, topics: Iterable[str], version: int = 3) -> bytes:
        topics = frozenset(topics)
        subscription = self.assignor.metadata(topics, self.owned_at_join(topics), self.generation, self.rack)
        return encode_subscription(subscription, version)

    def owned_at_join(self, topics: Set[str]) -> list[TopicPartition]:
        """What the member still owns when it joins subscribed to ``topics`` (class docstring)."""
        if RebalanceProtocol.COOPERATIVE not in self.assignor.supported_protocols():
            return []
        return [tp for tp in self.owned if tp.topic in topics]

    def assigned(self, partitions: Iterable[Any], generation: Optional[int]) -> None:
        self.owned = [TopicPartition(t, p) for t, p in partitions]
        self.generation = NO_GENERATION if generation is None else generation
        self.assignor.on_assignment(Assignment(self.owned), self.generation)

    def assign(self, cluster: Any, subscriptions: Mapping[str, Subscription],
               instance_ids: Mapping[str, Optional[str]]) -> dict[str, bytes]:
        """Leader: member id -> ConsumerProtocolAssignment bytes (v3, Java's layout)."""
        result = self.assignor.assign(cluster, subscriptions,
                                      group_instance_ids={m: i for m, i in instance_ids.items() if i})
        return {member: encode_assignment(asg, 3) for member, asg in result.items()}


def adapter_classes(base: type, names: Iterable[str], module: str) -> list[type]:
    """One adapter class per built-in assignor, named as Kafka names it (``RangeAssignor``, ...): ``base`` with
    the protocol ``name`` set."""
    java_names = {name: java.rsplit(".", 1)[1] for java, name in JAVA_ASSIGNOR_CLASSES.items()}
    classes = []
    for name in names:
        class_name = java_names[name]
        doc = f"Kafka's {class_name} ({name!r}), run by kafkagroup's native engine."
        classes.append(type(class_name, (base,), {"name": name, "__doc__": doc, "__module__": module,
                                                  "__qualname__": class_name}))
    return classes
