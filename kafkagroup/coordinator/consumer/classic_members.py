"""Members on the classic protocol inside a consumer group (KIP-848's mixed groups, Kafka 3.8+).

A consumer group serves a classic member (JoinGroup / SyncGroup / Heartbeat / LeaveGroup) as Kafka's
``classicGroupJoinToConsumerGroup`` and its siblings do: the coordinator, not a leader, assigns.

* **JoinGroup** (a new dynamic member first gets MEMBER_ID_REQUIRED, as in a classic group): the member's
  subscription, rack and owned partitions are read from its ConsumerProtocol subscription -- the metadata of
  the *first* protocol it lists (an eager member revoked everything before joining and reports nothing owned);
  a change of subscription bumps the group epoch and a new target is computed at once; the member is reconciled
  towards its target as a consumer-protocol member is (revoke before assign).  The answer has no leader and no
  member list: generation = the member's epoch, protocol = its first protocol.
* **SyncGroup** answers the member's current assignment, encoded in the ConsumerProtocol version of its
  subscription; REBALANCE_IN_PROGRESS while the target's epoch is ahead of the member's (it must rejoin),
  unless it is revoking (it finishes that first).
* **Heartbeat** answers REBALANCE_IN_PROGRESS when the member must rejoin: a newer target exists, it has
  partitions to revoke, or partitions it waited for are now free.  Kafka 4.4 compares with the *target's*
  epoch, not the group epoch, and a classic heartbeat computes no target: a consumer group left with classic
  members only after a change that computed none (its consumer-protocol member left under a policy without
  downgrade) stays Assigning until a member joins (observed on Kafka 4.4.0 and reproduced here).
* **LeaveGroup** removes the members named (dynamic by member id, static by instance id -- an admin's removal
  names no member id; Kafka 4.4 lets it name consumer-protocol members too) and bumps the group epoch once, or
  turns the group back into a classic group when only classic members are left.
* ``group.consumer.migration.policy=disabled``: a classic JoinGroup into a consumer group is refused
  (INCONSISTENT_GROUP_PROTOCOL), as Kafka 4.4 refuses it.

Timers: the member's session (its JoinGroup session timeout, restarted by each of the three requests); a join
deadline (its rebalance timeout, armed when it is told to rejoin, if not armed yet); a sync deadline (its
rebalance timeout after its JoinGroup is answered).  Any of them expiring fences the member -- which, when
only classic members are left, may turn the group back into a classic group (``registry.downgrade_without``).

A classic JoinGroup computes a new target as a heartbeat does: when one is due under
``group.consumer.assignment.interval.ms``, on the offload thread when there is one; until it is there the member
gets its current assignment and is told to rejoin once the target moves.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafkagroup.coordinator.consumer.group import ClassicMemberMetadata, ConsumerGroup, ConsumerGroupMember
from kafkagroup.coordinator.consumer.reconcile import MemberAssignment, MemberState
from kafkagroup.errors import ProtocolError
from kafkagroup.messages.api import (
    HeartbeatRequest, JoinGroupRequest, JoinGroupResponse, LeaveGroupMemberResponse, LeaveGroupRequest,
    LeaveGroupResponse, SyncGroupRequest, SyncGroupResponse,
)
from kafkagroup.messages.error_codes import ErrorCode
from kafkagroup.protocol.consumer_protocol import (
    Assignment as ProtocolAssignment, Subscription, decode_subscription, encode_assignment,
)
from kafkagroup.structs import TopicPartition

if TYPE_CHECKING:  # pragma: no cover
    from kafkagroup.coordinator.consumer.heartbeat import ConsumerGroupHandlers

__all__ = ["ClassicMemberHandlers", "ClassicMemberError", "subscription_of", "protocol_version"]

log = logging.getLogger("kafkagroup.coordinator")
_E = ErrorCode
CONSUMER_PROTOCOL_TYPE = "consumer"


class ClassicMemberError(Exception):
    """A refusal with Kafka's error code (caught by the handler, never escapes it)."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def subscription_of(member_id: str, protocols: tuple[tuple[str, bytes], ...]) -> Subscription:
    """The member's ConsumerProtocol subscription: its first protocol's metadata (Kafka's
    ``deserializeSubscription``).  A malformed one is Kafka's IllegalStateException: UNKNOWN_SERVER_ERROR."""
    name, metadata = protocols[0]
    try:
        return decode_subscription(metadata, f"JoinGroup metadata of member {member_id} for protocol {name}")
    except ProtocolError as exc:
        raise ClassicMemberError(_E.UNKNOWN_SERVER_ERROR, f"Malformed embedded consumer protocol: {exc}") from None


def protocol_version(metadata: bytes) -> int:
    """The ConsumerProtocol version in the int16 header of ``metadata`` (the version a member's assignment is sent
    in; the metadata decoded as a subscription when the member joined, so the header is there)."""
    if len(metadata) < 2:
        raise ProtocolError(f"ConsumerProtocol header: {len(metadata)} bytes, 2 needed for the version")
    return int.from_bytes(metadata[:2], "big", signed=True)


class ClassicMemberHandlers:
    """JoinGroup / SyncGroup / Heartbeat / LeaveGroup of classic members in consumer groups; ``core`` is the
    consumer group's :class:`~kafkagroup.coordinator.consumer.heartbeat.ConsumerGroupHandlers` (targets,
    reconciliation, timers, fencing are shared with consumer-protocol members)."""

    def __init__(self, core: "ConsumerGroupHandlers") -> None:
        self.core = core

    # ================================================================ JoinGroup

    def join(self, group: ConsumerGroup, req: JoinGroupRequest) -> JoinGroupResponse:
        try:
            return self._join(group, req)
        except ClassicMemberError as exc:
            log.info("JoinGroup of member %s in consumer group %s: %s (%s)", req.member_id or "(new)",
                     group.group_id, exc.code.name, exc)
            return JoinGroupResponse(exc.code, member_id=req.member_id)

    def _join(self, group: ConsumerGroup, req: JoinGroupRequest) -> JoinGroupResponse:
        core = self.core
        if core.config.group_consumer_migration_policy == "disabled":
            raise ClassicMemberError(_E.INCONSISTENT_GROUP_PROTOCOL, f"Cannot join the consumer group "
                                     f"{group.group_id} with the classic protocol because the group migration is "
                                     f"disabled.")
        unknown = req.member_id == ""
        member_id = core.new_member_id() if unknown else req.member_id
        max_size = core.config.group_consumer_max_size
        # Kafka 4.4's throwIfConsumerGroupIsFull: a known instance (a static member rejoining) is never refused
        if (len(group.members) >= max_size and member_id not in group.members
                and (req.group_instance_id is None or group.static_member(req.group_instance_id) is None)):
            raise ClassicMemberError(_E.GROUP_MAX_SIZE_REACHED, f"The consumer group has reached its maximum "
                                                                f"capacity of {max_size} members.")
        protocols = tuple((name, bytes(meta)) for name, meta in req.protocols)
        if not group.supports_classic_protocols(req.protocol_type, {name for name, _ in protocols}):
            raise ClassicMemberError(_E.INCONSISTENT_GROUP_PROTOCOL, f"Member {member_id}'s protocols are not "
                                                                     f"supported.")
        if unknown and req.group_instance_id is None and req.version >= 4:
            log.info("group %s: a dynamic classic member joins the consumer group; asked to rejoin as %s",
                     group.group_id, member_id)
            return JoinGroupResponse(_E.MEMBER_ID_REQUIRED, member_id=member_id)
        subscription = subscription_of(member_id, protocols)
        member, is_new, replaced = self._member(group, req, member_id, unknown)

        before = (member.subscription(), member.rack_id)
        rebalance_timeout = req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1 else req.session_timeout_ms
        if is_new or req.rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = rebalance_timeout
        if subscription.rack_id is not None:
            member.rack_id = subscription.rack_id
        member.client_id, member.client_host = req.client_id, req.client_host
        group.set_subscription(member, tuple(sorted(set(subscription.topics))), None)
        group.set_classic(member, ClassicMemberMetadata(req.session_timeout_ms, protocols))
        changed = is_new or before != (member.subscription(), member.rack_id)
        if is_new:
            group.add_member(member)
        if replaced is not None:
            core.cancel_timers(replaced)
            group.replace_static_member(replaced, member)
            log.info("group %s: static member %s (instance %s) replaced by classic member %s", group.group_id,
                     replaced.member_id, member.instance_id, member_id)
        if core.refresh_metadata(group, force=changed) or changed:
            group.bump_epoch()
            log.info("group %s: epoch %d (classic member %s)", group.group_id, group.group_epoch, member_id)
        # the last member on the consumer protocol replaced by this classic static member: the group goes back
        # to classic, with the target as it is (Kafka 4.4 decides before it computes a new one)
        downgrading = (replaced is not None and not replaced.uses_classic_protocol
                       and core.registry.may_downgrade(group))
        if not downgrading:
            core.maybe_update_target(group)
        core.reconcile_member(group, member, self._owned(subscription), arm_rebalance=False)

        response = JoinGroupResponse(_E.NONE, generation_id=member.member_epoch,
                                     protocol_type=CONSUMER_PROTOCOL_TYPE, protocol_name=protocols[0][0],
                                     leader="", member_id=member_id)
        if downgrading and core.registry.downgrade_replaced(group):
            return response
        self._cancel(member, "join_timer")
        core.arm_session(group, member)
        self._arm(group, member, "sync_timer", rebalance_timeout, "sync")
        return response

    def _member(self, group: ConsumerGroup, req: JoinGroupRequest, member_id: str, unknown: bool
                ) -> tuple[ConsumerGroupMember, bool, ConsumerGroupMember | None]:
        """(member, is new, the static member it replaces) -- or ClassicMemberError."""
        instance = req.group_instance_id
        if instance is None:
            member = group.members.get(member_id)
            if member is None:                  # Kafka creates a member for any id a classic member brings
                return ConsumerGroupMember(member_id), True, None
            return member, False, None
        existing = group.static_member(instance)
        if unknown:
            if existing is None:
                return ConsumerGroupMember(member_id, instance_id=instance), True, None
            # the instance rejoins under a new member id: it takes over the old member's partitions and target
            replacement = ConsumerGroupMember(
                member_id, instance_id=instance, rack_id=existing.rack_id,
                rebalance_timeout_ms=existing.rebalance_timeout_ms,
                subscribed_topic_names=existing.subscribed_topic_names,
                subscribed_topic_regex=existing.subscribed_topic_regex, server_assignor=existing.server_assignor,
                assignment=MemberAssignment(existing.assignment.state, 0, 0, existing.assignment.assigned,
                                            existing.assignment.pending_revocation),
                classic=existing.classic)
            return replacement, False, existing
        if existing is None:
            raise ClassicMemberError(_E.UNKNOWN_MEMBER_ID, f"Instance id {instance} is unknown.")
        if existing.member_id != member_id:
            raise ClassicMemberError(_E.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id {instance} "
                                                            f"was fenced by member {existing.member_id}.")
        return existing, False, None

    def _owned(self, subscription: Subscription) -> list:
        """The owned partitions of the subscription, by topic id (topics the cluster does not have are left out)."""
        by_topic: dict = {}
        for tp in subscription.owned_partitions:
            topic_id = self.core.topics.topic_id(tp.topic)
            if topic_id is not None:
                by_topic.setdefault(topic_id, []).append(tp.partition)
        return list(by_topic.items())

    # ================================================================ SyncGroup

    def sync(self, group: ConsumerGroup, req: SyncGroupRequest) -> SyncGroupResponse:
        try:
            member = self._validate(group, req.member_id, req.group_instance_id, req.generation_id)
            assert member.classic is not None
            protocol = member.classic.protocol_name
            if req.protocol_type is not None and req.protocol_type != CONSUMER_PROTOCOL_TYPE:
                raise ClassicMemberError(_E.INCONSISTENT_GROUP_PROTOCOL, f"The protocol type {req.protocol_type} "
                                         f"from member {member.member_id} request is not equal to the group protocol "
                                         f"type {CONSUMER_PROTOCOL_TYPE}.")
            if req.protocol_name is not None and req.protocol_name != protocol:
                raise ClassicMemberError(_E.INCONSISTENT_GROUP_PROTOCOL, f"The protocol name {req.protocol_name} "
                                         f"from member {member.member_id} request is not equal to the protocol name "
                                         f"{protocol} returned in the join response.")
            if group.assignment_epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
                self._ask_rejoin(group, member)
                raise ClassicMemberError(_E.REBALANCE_IN_PROGRESS, f"A new rebalance is triggered in group "
                                         f"{group.group_id} and member {member.member_id} should rejoin to catch up.")
        except ClassicMemberError as exc:
            log.info("SyncGroup of member %s in consumer group %s: %s (%s)", req.member_id, group.group_id,
                     exc.code.name, exc)
            return SyncGroupResponse(exc.code)
        self._cancel(member, "sync_timer")
        self.core.arm_session(group, member)
        return SyncGroupResponse(_E.NONE, req.protocol_type, req.protocol_name, self.assignment_bytes(member))

    def assignment_bytes(self, member: ConsumerGroupMember) -> bytes:
        """The member's assigned partitions as a ConsumerProtocolAssignment in the version of its subscription
        (topics sorted by name, partitions ascending; a topic deleted meanwhile is left out)."""
        assert member.classic is not None
        partitions = []
        for topic_id, ps in member.assignment.assigned.items():
            name = self.core.topics.topic_name(topic_id)
            if name is not None:
                partitions += [TopicPartition(name, p) for p in sorted(ps)]
        partitions.sort()
        version = protocol_version(member.classic.protocols[0][1])
        return encode_assignment(ProtocolAssignment(partitions), version=max(version, 0))

    # ================================================================ Heartbeat

    def heartbeat(self, group: ConsumerGroup, req: HeartbeatRequest) -> ErrorCode:
        try:
            member = self._validate(group, req.member_id, req.group_instance_id, req.generation_id)
        except ClassicMemberError as exc:
            log.info("Heartbeat of member %s in consumer group %s: %s (%s)", req.member_id, group.group_id,
                     exc.code.name, exc)
            return exc.code
        self.core.arm_session(group, member)
        if (member.member_epoch < group.assignment_epoch or member.state is MemberState.UNREVOKED_PARTITIONS
                or (member.state is MemberState.UNRELEASED_PARTITIONS
                    and not group.waiting_on_unreleased_partition(member))):
            self._ask_rejoin(group, member)
            return _E.REBALANCE_IN_PROGRESS
        return _E.NONE

    # =============================================================== LeaveGroup

    def leave(self, group: ConsumerGroup, req: LeaveGroupRequest) -> LeaveGroupResponse:
        """Kafka 4.4's ``classicGroupLeaveToConsumerGroup``: any member may be named (an admin removes
        consumer-protocol members this way too); those found are fenced together (one epoch bump -- or, when only
        classic members are left, a downgrade).  Each answer names the member id as the request gave it."""
        answers = []
        leaving: dict[str, ConsumerGroupMember] = {}
        for identity in req.members:
            member_id, instance = identity.member_id, identity.group_instance_id
            try:
                member = self._find(group, member_id, instance, f"Instance id {instance} is unknown.",
                                    admin_may_omit_id=True)
                log.info("group %s: member %s left through LeaveGroup (reason: %s)", group.group_id,
                         member.member_id, identity.reason or "not provided")
                leaving[member.member_id] = member
                answers.append(LeaveGroupMemberResponse(member_id, instance, _E.NONE))
            except ClassicMemberError as exc:
                answers.append(LeaveGroupMemberResponse(member_id, instance, exc.code))
        if leaving:
            self.core.fence_all(group, list(leaving.values()))
        return LeaveGroupResponse(_E.NONE, answers)

    # ================================================================= helpers

    @staticmethod
    def _find(group: ConsumerGroup, member_id: str, instance: str | None, unknown_instance: str,
              admin_may_omit_id: bool = False) -> ConsumerGroupMember:
        """The member a request names, by member id or (static) by instance id: UNKNOWN_MEMBER_ID, or
        FENCED_INSTANCE_ID when the instance belongs to another member id.  ``unknown_instance``: the message for
        an unknown instance (Kafka's wording differs per API); ``admin_may_omit_id``: LeaveGroup's "" member id
        (an admin's removal by instance) matches whoever holds the instance."""
        if instance is None:
            member = group.members.get(member_id)
            if member is None:
                raise ClassicMemberError(_E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group "
                                                               f"{group.group_id}.")
            return member
        member = group.static_member(instance)
        if member is None:
            raise ClassicMemberError(_E.UNKNOWN_MEMBER_ID, unknown_instance)
        if member.member_id != member_id and not (admin_may_omit_id and member_id == ""):
            raise ClassicMemberError(_E.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                                     f"{instance} was fenced by member {member.member_id}.")
        return member

    def _validate(self, group: ConsumerGroup, member_id: str, instance: str | None,
                  generation: int) -> ConsumerGroupMember:
        """Kafka's ``validateConsumerGroupMember`` + the classic checks: UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
        UNKNOWN_MEMBER_ID for a member on the consumer protocol, ILLEGAL_GENERATION."""
        member = self._find(group, member_id, instance, f"Member with instance id {instance} is not a member of "
                                                        f"group {group.group_id}.")
        if not member.uses_classic_protocol:
            raise ClassicMemberError(_E.UNKNOWN_MEMBER_ID, f"Member {member.member_id} does not use the classic "
                                                           f"protocol.")
        if generation != member.member_epoch:
            raise ClassicMemberError(_E.ILLEGAL_GENERATION, f"The request generation id {generation} is not equal "
                                     f"to the member epoch {member.member_epoch} of member {member.member_id}.")
        return member

    def _ask_rejoin(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        """The member is told to rejoin: it must within its rebalance timeout (armed once, not re-armed)."""
        if member.join_timer is None:
            self._arm(group, member, "join_timer", member.rebalance_timeout_ms, "join")

    def _arm(self, group: ConsumerGroup, member: ConsumerGroupMember, timer: str, timeout_ms: int,
             which: str) -> None:
        self._cancel(member, timer)

        def expire() -> None:
            setattr(member, timer, None)
            self.core.expire(group.group_id, member, which)
        setattr(member, timer, self.core.clock.call_at(self.core.clock.now_ms() + timeout_ms, expire))

    @staticmethod
    def _cancel(member: ConsumerGroupMember, timer: str) -> None:
        handle = getattr(member, timer)
        if handle is not None:
            handle.cancel()
            setattr(member, timer, None)
