"""kafkagroup's assignors as kafka-python (3.x) partition assignors.

    from kafka import KafkaConsumer
    from kafkagroup.compat.kafka_python import CooperativeStickyAssignor
    consumer = KafkaConsumer("t0", group_id="g", partition_assignment_strategy=[CooperativeStickyAssignor])

Each class is an ``AbstractPartitionAssignor`` driven the way kafka-python's ``ConsumerCoordinator``
drives it: ``metadata(topics)`` for JoinGroup (a ``ConsumerProtocolSubscription`` whose encoding is
byte-identical to a Java consumer's: v3, sorted topics, the assignor's user data, owned partitions,
generation, rack), ``assign(cluster, members)`` on the leader (members carry ``member_id``,
``group_instance_id`` and decoded metadata; returns ``ConsumerProtocolAssignment`` v3 per member, Java's
bytes) and ``on_assignment(assignment, generation)`` on every member. The assignment itself is
kafkagroup's native engine: Java-identical range/roundrobin, optimal sticky balance, and none of
kafka-python 3.0.12's defects (roundrobin's KeyError on different subscriptions; range and roundrobin
starving a member when static and dynamic members interleave).

Pass ``client_rack`` to a constructor (``RangeAssignor(client_rack="use1-az1")``) for rack-aware
assignment; kafka-python instantiates classes with no arguments, so pass an instance in that case.
Limit: the adapter learns its owned partitions and generation only through ``on_assignment``; if
kafka-python drops the member's assignment without calling it (lost membership), the next JoinGroup
still reports the old ones, which the leader's generation rules then discard.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Optional

from kafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from kafka.coordinator.assignors.abstract import RebalanceProtocol as KafkaPythonRebalanceProtocol
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from kafkagroup.compat._shared import MemberState, adapter_classes
from kafkagroup.protocol import Subscription
from kafkagroup.structs import topic_partitions


def _subscription(metadata: Any) -> Subscription:
    """kafka-python's decoded ConsumerProtocolSubscription (any version) -> kafkagroup's Subscription."""
    owned = [tp for entry in (getattr(metadata, "owned_partitions", None) or ())
             for tp in topic_partitions(entry.topic, entry.partitions)]
    generation = getattr(metadata, "generation_id", None)
    user_data = metadata.user_data
    if user_data is not None and not isinstance(user_data, (bytes, bytearray, memoryview)):
        user_data = user_data.encode()  # kafka-python may hand back a user-data struct
    return Subscription(list(metadata.topics), None if user_data is None else bytes(user_data), owned,
                        -1 if generation is None else generation, getattr(metadata, "rack_id", None) or None)


class _KafkaGroupAssignor(AbstractPartitionAssignor):
    name = ""
    version = 3  # the ConsumerProtocol version of what metadata() / assign() produce

    def __init__(self, client_rack: Optional[str] = None) -> None:
        self._state = MemberState(self.name, client_rack)

    def supported_protocols(self) -> list[KafkaPythonRebalanceProtocol]:
        return [KafkaPythonRebalanceProtocol(int(p)) for p in self._state.assignor.supported_protocols()]

    def metadata(self, topics: Iterable[str]) -> ConsumerProtocolSubscription:
        return ConsumerProtocolSubscription.decode(self._state.subscription_bytes(topics))

    def assign(self, cluster: Any, members: Any) -> dict[str, ConsumerProtocolAssignment]:
        subscriptions = {}
        instances = {}
        for member in members:
            metadata = member.metadata
            if isinstance(metadata, (bytes, bytearray, memoryview)):
                metadata = ConsumerProtocolSubscription.decode(bytes(metadata))
            subscriptions[member.member_id] = _subscription(metadata)
            instances[member.member_id] = getattr(member, "group_instance_id", None)
        blobs = self._state.assign(cluster, subscriptions, instances)
        return {member_id: ConsumerProtocolAssignment.decode(blob) for member_id, blob in blobs.items()}

    def on_assignment(self, assignment: Any, generation: int = -1) -> None:
        self._state.assigned(assignment.partitions(), generation)


RangeAssignor, RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor = adapter_classes(
    _KafkaGroupAssignor, ("range", "roundrobin", "sticky", "cooperative-sticky"), __name__)

__all__ = ["CooperativeStickyAssignor", "RangeAssignor", "RoundRobinAssignor", "StickyAssignor"]
