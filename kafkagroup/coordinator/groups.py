"""One group-id namespace for both kinds of group (Kafka's ``GroupMetadataManager.groups``).

A group id names at most one group: a classic group (:class:`~kafkagroup.coordinator.group.ClassicGroup`,
JoinGroup/SyncGroup) or a consumer group (:class:`~kafkagroup.coordinator.consumer.group.ConsumerGroup`,
ConsumerGroupHeartbeat).  The coordinator asks the registry which kind an id is and routes the request;
the two kinds never see each other.  An *empty* group changes kind when a member of the other protocol
arrives (Kafka converts empty groups under every ``group.consumer.migration.policy``); its offsets go with
the id (one :class:`~kafkagroup.coordinator.offset_state.GroupOffsets`, handed over, never copied).
A non-empty group changes kind as ``group.consumer.migration.policy`` allows
(:mod:`~kafkagroup.coordinator.migration`): a classic group is upgraded by a consumer-protocol join; a consumer
group is downgraded when its last consumer-protocol member goes.  Classic members join a non-empty consumer
group under every policy (served by :mod:`~kafkagroup.coordinator.consumer.classic_members`).

Both kinds answer what offsets, describe and list need: ``group_id``, ``group_type`` ("classic" /
"consumer"), ``protocol_type``, ``state_name`` (Kafka's display name), ``is_empty()``, ``offset_state``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterator, Protocol, Union

from kafkagroup.coordinator.consumer.group import ConsumerGroup, ConsumerGroupMember
from kafkagroup.coordinator.consumer.heartbeat import HeartbeatError
from kafkagroup.coordinator.group import ClassicGroup, GroupState
from kafkagroup.coordinator.offset_state import GroupOffsets
from kafkagroup.messages.error_codes import ErrorCode

if TYPE_CHECKING:  # pragma: no cover
    from kafkagroup.coordinator.migration import Migration

__all__ = ["Group", "GroupRegistry", "AnyGroup"]

AnyGroup = Union[ClassicGroup, ConsumerGroup]


class Group(Protocol):
    group_id: str
    group_type: str
    offset_state: GroupOffsets

    @property
    def state_name(self) -> str: ...

    def is_empty(self) -> bool: ...


class GroupRegistry:
    """``classic``: the classic groups (the dict the classic handlers share); ``consumer``: consumer groups.
    ``new_classic(group_id, offsets)`` builds a classic group (the coordinator's clock stamps it)."""

    def __init__(self, classic: dict[str, ClassicGroup], new_classic: Callable[[str, GroupOffsets], ClassicGroup]
                 ) -> None:
        self.classic = classic
        self.consumer: dict[str, ConsumerGroup] = {}
        self._new_classic = new_classic
        self.migration: "Migration | None" = None      # set by the coordinator once its handlers exist

    def get(self, group_id: str) -> AnyGroup | None:
        group: AnyGroup | None = self.consumer.get(group_id)
        return group if group is not None else self.classic.get(group_id)

    def all(self) -> Iterator[AnyGroup]:
        yield from self.classic.values()
        yield from self.consumer.values()

    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        return self.consumer.get(group_id)

    def create_consumer_group(self, group_id: str) -> ConsumerGroup:
        """A new consumer group; an empty classic group of the id is replaced (its offsets kept); a classic
        group with members is upgraded when the migration policy allows it, else GROUP_ID_NOT_FOUND (Kafka's
        ``getOrMaybeCreateConsumerGroup``)."""
        classic = self.classic.get(group_id)
        offsets = GroupOffsets()
        if classic is not None:
            if classic.members or classic.state not in (GroupState.EMPTY, GroupState.DEAD):
                if self.migration is None:
                    raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")
                self.migration.check_upgrade(classic)
                group = self.migration.upgrade(classic)
                del self.classic[group_id]
                self.consumer[group_id] = group
                return group
            offsets = classic.offset_state
            del self.classic[group_id]
        group = ConsumerGroup(group_id, offsets)
        self.consumer[group_id] = group
        return group

    def downgrade_without(self, group: ConsumerGroup, leaving: list[ConsumerGroupMember]) -> bool:
        """Before ``leaving`` are removed (left or fenced): when they are the last members on the consumer protocol
        and the policy allows it, the group becomes a classic group of the others, which rebalances; True then."""
        if self.migration is None or not self.migration.can_downgrade(group, leaving):
            return False
        reason = f"Downgrade group {group.group_id} from consumer to classic for member leaving."
        self._swap(self.migration.downgrade(group, leaving, rebalance=reason))
        return True

    def may_downgrade(self, group: ConsumerGroup) -> bool:
        """Whether ``group`` as it is (only classic members) may become a classic group."""
        return self.migration is not None and self.migration.can_downgrade(group, [])

    def downgrade_replaced(self, group: ConsumerGroup) -> bool:
        """After a classic static member replaced a member of ``group``: when no member on the consumer protocol is
        left and the policy allows it, the group becomes a classic group -- Stable, or rebalancing when its target
        is behind its epoch (the newcomer changed the subscriptions); True then."""
        if self.migration is None or not self.migration.can_downgrade(group, []):
            return False
        stale = group.group_epoch > group.assignment_epoch
        reason = f"Downgrade group {group.group_id} from consumer to classic with stale assignment." if stale else None
        self._swap(self.migration.downgrade(group, [], rebalance=reason))
        return True

    def _swap(self, classic: ClassicGroup) -> None:
        del self.consumer[classic.group_id]
        self.classic[classic.group_id] = classic

    def take_over_empty_consumer_group(self, group_id: str) -> bool:
        """Before a classic request for ``group_id``: an empty consumer group of that id becomes a classic one
        (offsets kept).  False when a consumer group with members holds the id (the classic request is refused)."""
        group = self.consumer.get(group_id)
        if group is None:
            return True
        if not group.is_empty():
            return False
        del self.consumer[group_id]
        self.classic[group_id] = self._new_classic(group_id, group.offset_state)
        return True

    def remove(self, group_id: str) -> None:
        self.consumer.pop(group_id, None)
        self.classic.pop(group_id, None)
