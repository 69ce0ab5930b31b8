"""kafkagroup's eager assignors for aiokafka (``AIOKafkaConsumer(partition_assignment_strategy=[...])``).

    from aiokafka import AIOKafkaConsumer
    from kafkagroup.compat.aiokafka import StickyAssignor
    consumer = AIOKafkaConsumer("t0", group_id="g", partition_assignment_strategy=[StickyAssignor])

aiokafka's coordinator calls ``metadata(topics)`` (bytes or a struct with ``encode()``), then, on the
leader, ``assign(cluster, {member_id: ConsumerProtocolMemberMetadata})`` (v0 view: ``subscription``,
``user_data``; group.instance.ids are not passed) and on every member ``on_assignment(assignment)``.
It calls them on whatever it was given -- usually the class itself -- so these assignors work both as
classes (state kept on the class, as aiokafka's own assignors keep it) and as instances.

What they send is what a Java consumer sends (ConsumerProtocolSubscription v3: sorted topics, the
assignor's user data; aiokafka's decoder reads the v0 fields and ignores the rest). aiokafka never tells
an assignor its generation: call ``on_generation_assignment(generation)`` yourself if you know it,
otherwise the sticky user data carries generation -1 (Java then ranks this member's claims lowest).
Only eager assignors: aiokafka has no cooperative rebalancing.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from aiokafka.coordinator.assignors.abstract import AbstractPartitionAssignor
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment

from kafkagroup.compat._shared import MemberState, adapter_classes
from kafkagroup.protocol import Subscription


class _hybridmethod:
    """Binds to the instance when called on one, else to the class (aiokafka passes either)."""

    def __init__(self, func: Any) -> None:
        self.func = func
        self.__doc__ = func.__doc__

    def __get__(self, obj: Any, cls: type) -> Any:
        target = cls if obj is None else obj
        return self.func.__get__(target, type(target))


class _KafkaGroupAssignor(AbstractPartitionAssignor):
    name = ""
    version = 3

    @staticmethod
    def _state_of(target: Any) -> MemberState:
        state = vars(target).get("_kafkagroup_state")  # own state only: never a class's shared one
        if state is None:
            state = MemberState(target.name)
            setattr(target, "_kafkagroup_state", state)
        return state

    @_hybridmethod
    def metadata(self, topics: Iterable[str]) -> bytes:
        return _KafkaGroupAssignor._state_of(self).subscription_bytes(topics)

    @_hybridmethod
    def assign(self, cluster: Any, members: Mapping[str, Any]) -> dict[str, ConsumerProtocolMemberAssignment]:
        subscriptions = {member_id: Subscription(list(m.subscription),
                                                 None if m.user_data is None else bytes(m.user_data))
                         for member_id, m in members.items()}
        blobs = _KafkaGroupAssignor._state_of(self).assign(cluster, subscriptions, {})
        return {member_id: ConsumerProtocolMemberAssignment.decode(blob) for member_id, blob in blobs.items()}

    @_hybridmethod
    def on_assignment(self, assignment: ConsumerProtocolMemberAssignment) -> None:
        state = _KafkaGroupAssignor._state_of(self)
        state.assigned(assignment.partitions(), state.generation)

    @_hybridmethod
    def on_generation_assignment(self, generation: int) -> None:
        state = _KafkaGroupAssignor._state_of(self)
        state.assigned(state.owned, generation)


RangeAssignor, RoundRobinAssignor, StickyAssignor = adapter_classes(
    _KafkaGroupAssignor, ("range", "roundrobin", "sticky"), __name__)

__all__ = ["RangeAssignor", "RoundRobinAssignor", "StickyAssignor"]
