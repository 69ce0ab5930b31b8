"""Online upgrade and downgrade of a group between the classic and the consumer protocol (KIP-848 migration).

``group.consumer.migration.policy`` (Kafka's ``ConsumerGroupMigrationPolicy``) says which conversions of a
*non-empty* group are allowed: ``bidirectional`` (Kafka's default), ``upgrade``, ``downgrade``, ``disabled``.
Empty groups change kind under every policy (:mod:`~kafkagroup.coordinator.groups`).

* **Upgrade** (Kafka's ``validateOnlineUpgrade`` + ``convertToConsumerGroup`` + ``ConsumerGroup.fromClassicGroup``):
  a ConsumerGroupHeartbeat joining (epoch 0) a classic group with members, when the policy allows upgrades, the
  group uses the ``consumer`` protocol type and has at most ``group.consumer.max.size`` members.  Parked
  JoinGroup and SyncGroup requests are answered REBALANCE_IN_PROGRESS; every classic member becomes a member of
  the new consumer group on the classic protocol at the classic generation (group epoch = assignment epoch =
  generation), Stable, with the subscription, rack and assignment read from its ConsumerProtocol bytes, its
  target = its assignment, and its own session timeout restarted.  The joining member then bumps the epoch and
  the classic members are told to rejoin.  A member that has not synced yet owns nothing.  Bytes that do not
  decode, an assignment carrying user data (a custom assignor's: Kafka 4.4 will not lose it), or two members
  claiming one partition leave the group classic and answer GROUP_ID_NOT_FOUND with Kafka 4.4's message.
* **Downgrade** (``validateOnlineDowngradeWithFencedMember`` / ``...WithReplacedMemberId`` +
  ``convertToClassicGroup`` + ``ClassicGroup.fromConsumerGroup``): when the last member on the consumer protocol
  leaves or is fenced (others remaining) or is replaced by a classic static member, the policy allows
  downgrades and the members left number at most ``group.max.size``.  The classic group is Stable at generation
  = group epoch, protocol type ``consumer``, its protocol the vote of the members' protocols, each member's
  assignment its *target* encoded in the ConsumerProtocol version of its metadata; sessions restart; after a
  leave or fencing it prepares a rebalance at once (not after a static replacement, unless the target was
  stale); the classic group is written to the store.

Offsets stay with the group id (one :class:`~kafkagroup.coordinator.offset_state.GroupOffsets`, handed over).

Limits: consumer-group membership is not written to the store (see heartbeat.py).  At an upgrade the classic
group's record is rewritten with no members (Kafka writes the consumer group's records and a tombstone for the
classic one), so a restarted coordinator finds an empty group with its offsets and every member rejoins -- as
after any restart of a consumer group here -- instead of a classic group of members long gone.
"""
from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING, Any, cast

from kafkagroup.coordinator.config import CoordinatorConfig
from kafkagroup.coordinator.consumer.classic_members import ClassicMemberError, protocol_version, subscription_of
from kafkagroup.coordinator.consumer.group import ClassicMemberMetadata, ConsumerGroup, ConsumerGroupMember
from kafkagroup.coordinator.consumer.heartbeat import HeartbeatError
from kafkagroup.coordinator.consumer.reconcile import MemberAssignment, MemberState
from kafkagroup.coordinator.errors import IllegalGroupStateError
from kafkagroup.coordinator.group import ClassicGroup, ClassicGroupMember, GroupState
from kafkagroup.errors import ProtocolError
from kafkagroup.messages.error_codes import ErrorCode
from kafkagroup.messages.topics import TopicsView
from kafkagroup.protocol.consumer_protocol import Assignment, decode_assignment, encode_assignment
from kafkagroup.structs import TopicPartition

if TYPE_CHECKING:  # pragma: no cover
    from kafkagroup.coordinator.consumer.heartbeat import ConsumerGroupHandlers
    from kafkagroup.coordinator.rebalance import RebalanceEngine

__all__ = ["upgrade_enabled", "downgrade_enabled", "Migration"]

log = logging.getLogger("kafkagroup.coordinator")
CONSUMER_PROTOCOL_TYPE = "consumer"


@dataclasses.dataclass(frozen=True)
class _EmptiedRecord:
    """What the store keeps of an upgraded classic group: its id, protocol type and generation, no members."""
    group_id: str
    protocol_type: str | None
    generation_id: int
    state_timestamp: int | None
    protocol_name: None = None
    leader_id: None = None
    members: dict = dataclasses.field(default_factory=dict)


class _CustomAssignor(Exception):
    """A classic member's assignment carries user data (a custom assignor's): Kafka 4.4 refuses the upgrade."""


def upgrade_enabled(policy: str) -> bool:
    return policy in ("bidirectional", "upgrade")


def downgrade_enabled(policy: str) -> bool:
    return policy in ("bidirectional", "downgrade")


class Migration:
    """The conversions, with what they need: the config (policy, size limits), the classic groups' rebalance
    engine (to stop and start classic timers), the consumer-group handlers (their timers) and the topics."""

    def __init__(self, config: CoordinatorConfig, engine: "RebalanceEngine", consumer: "ConsumerGroupHandlers",
                 topics: TopicsView) -> None:
        self.config = config
        self.engine = engine
        self.consumer = consumer
        self.topics = topics

    # ================================================================= upgrade

    def check_upgrade(self, group: ClassicGroup) -> None:
        """Kafka's ``validateOnlineUpgrade``: HeartbeatError GROUP_ID_NOT_FOUND with Kafka 4.4's message when the
        policy, the group's protocol type or its size forbids the upgrade."""
        why = None
        if not upgrade_enabled(self.config.group_consumer_migration_policy):
            why = "online upgrade is disabled"
        elif group.protocol_type != CONSUMER_PROTOCOL_TYPE:
            why = "the group does not use the consumer embedded protocol"
        elif len(group.members) > self.config.group_consumer_max_size:
            why = "the group size exceeds the consumer group maximum size"
        if why is not None:
            message = f"Cannot upgrade classic group {group.group_id} to consumer group because {why}."
            log.info(message)
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, message)

    def upgrade(self, classic: ClassicGroup) -> ConsumerGroup:
        """The consumer group made of ``classic`` (which goes Dead, its parked requests answered); HeartbeatError
        GROUP_ID_NOT_FOUND when a member's bytes do not make a consumer-group member (``classic`` untouched)."""
        try:
            group = self._consumer_group_of(classic)
        except _CustomAssignor as exc:
            log.warning("Cannot upgrade classic group %s to consumer group: %s", classic.group_id, exc)
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {classic.group_id} "
                                 f"to consumer group because an unsupported custom assignor is in use. Please refer "
                                 f"to the documentation or switch to a default assignor before re-attempting the "
                                 f"upgrade.") from None
        except (ProtocolError, ClassicMemberError, IllegalGroupStateError) as exc:
            log.warning("Cannot upgrade classic group %s to consumer group because the embedded consumer protocol "
                        "is malformed: %s", classic.group_id, exc)
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Cannot upgrade classic group {classic.group_id} "
                                 f"to consumer group because the embedded consumer protocol is malformed.") from None
        self.engine.hand_over(classic)
        emptied = _EmptiedRecord(classic.group_id, classic.protocol_type, classic.generation_id,
                                 classic.state_timestamp)
        error = self.engine.persist_group(cast(ClassicGroup, emptied), {})
        if error is not ErrorCode.NONE:     # as for any group write: warned; the previous record stays
            log.warning("storing the upgraded group %s failed: %s", group.group_id, error.name)
        self.consumer.refresh_metadata(group, force=True)
        for member in group.members.values():
            self.consumer.arm_session(group, member)
        log.info("classic group %s upgraded to a consumer group at epoch %d (%d members)", group.group_id,
                 group.group_epoch, len(group.members))
        return group

    def _consumer_group_of(self, classic: ClassicGroup) -> ConsumerGroup:
        generation = classic.generation_id
        group = ConsumerGroup(classic.group_id, classic.offset_state)
        group.group_epoch = generation
        group.assignment_epoch = generation
        protocol = classic.protocol_name
        for m in classic.members.values():
            if protocol is None:
                raise ClassicMemberError(ErrorCode.GROUP_ID_NOT_FOUND, "the group has not chosen a protocol yet")
            subscription = subscription_of(m.member_id, ((protocol, m.metadata(protocol)),))
            # a member that has not synced yet has no assignment: it owns nothing (Kafka 4.4)
            owned = decode_assignment(m.assignment, f"assignment of member {m.member_id}") if m.assignment \
                else Assignment(())
            if owned.user_data:        # what a custom assignor keeps there would be lost
                raise _CustomAssignor(f"member {m.member_id}'s assignment carries user data")
            assigned: dict[Any, set[int]] = {}
            for tp in owned.partitions:
                topic_id = self.topics.topic_id(tp.topic)
                if topic_id is not None:
                    assigned.setdefault(topic_id, set()).add(tp.partition)
            frozen = {t: frozenset(ps) for t, ps in assigned.items()}
            member = ConsumerGroupMember(
                m.member_id, instance_id=m.group_instance_id, rack_id=subscription.rack_id, client_id=m.client_id,
                client_host=m.client_host, rebalance_timeout_ms=m.rebalance_timeout_ms,
                subscribed_topic_names=tuple(sorted(set(subscription.topics))),
                assignment=MemberAssignment(MemberState.STABLE, generation, generation, frozen, {}),
                classic=ClassicMemberMetadata(m.session_timeout_ms, tuple(m.protocols)))
            group.add_member(member)
            group.target[m.member_id] = frozen
        return group

    # =============================================================== downgrade

    def can_downgrade(self, group: ConsumerGroup, leaving: list[ConsumerGroupMember]) -> bool:
        """Kafka's ``validateOnlineDowngradeWithFencedMembers``: ``leaving`` (members of the group) going leaves
        only members on the classic protocol, at least one, the policy allows downgrades, and they number at most
        ``group.max.size``.  (A classic static member replacing the last consumer-protocol member: ``leaving`` is
        empty and the replacement already in the group.)"""
        if not group.all_members_use_classic_except({m.member_id for m in leaving}):
            return False
        remaining = len(group.members) - len(leaving)
        if remaining <= 0:
            return False               # an empty consumer group stays one (any classic join converts it)
        policy = self.config.group_consumer_migration_policy
        if not downgrade_enabled(policy):
            log.info("Cannot downgrade consumer group %s to classic group because the online downgrade is disabled.",
                     group.group_id)
            return False
        if remaining > self.config.group_max_size:
            log.info("Cannot downgrade consumer group %s to classic group because its group size is greater than "
                     "classic group max size.", group.group_id)
            return False
        return True

    def downgrade(self, group: ConsumerGroup, leaving: list[ConsumerGroupMember], *, rebalance: str | None
                  ) -> ClassicGroup:
        """The classic group made of ``group``'s members but ``leaving``; ``group`` is Dead, its timers stopped.
        ``rebalance``: the reason the classic group prepares a rebalance at once (a leave or fencing, a stale
        target), None for none."""
        gone = {m.member_id for m in leaving}
        now = self.engine.clock.now_ms()
        classic = ClassicGroup(group.group_id, now_ms=now, state=GroupState.STABLE, offsets=group.offset_state)
        classic.generation_id = group.group_epoch
        for m in group.members.values():
            if m.member_id in gone:
                continue
            assert m.classic is not None
            classic.add(ClassicGroupMember(
                m.member_id, group_instance_id=m.instance_id, client_id=m.client_id, client_host=m.client_host,
                rebalance_timeout_ms=m.rebalance_timeout_ms, session_timeout_ms=m.classic.session_timeout_ms,
                protocol_type=CONSUMER_PROTOCOL_TYPE, protocols=m.classic.protocols))
        classic.protocol_type = CONSUMER_PROTOCOL_TYPE
        protocol = classic.select_protocol()
        classic.protocol_name = protocol
        for member in classic.members.values():
            partitions = []
            for topic_id, ps in group.target.get(member.member_id, {}).items():
                name = self.topics.topic_name(topic_id)
                if name is not None:
                    partitions += [TopicPartition(name, p) for p in sorted(ps)]
            partitions.sort()
            version = max(protocol_version(member.metadata(protocol)), 0)
            member.assignment = encode_assignment(Assignment(partitions), version=version)
        classic.snapshot_subscriptions()
        # written as Kafka writes the converted group's records (a restart brings it back as it is now)
        error = self.engine.persist_group(classic, None)
        if error is not ErrorCode.NONE:
            log.warning("storing the downgraded group %s failed: %s", group.group_id, error.name)
        group.dead = True
        self.consumer.drop_timers(group)
        for member in classic.members.values():
            self.engine.restart_session(classic, member)
        log.info("consumer group %s downgraded to a classic group at generation %d (%d members)", group.group_id,
                 classic.generation_id, len(classic.members))
        if rebalance is not None:
            self.engine.prepare_rebalance(classic, rebalance)
        return classic
