"""ConsumerGroupHeartbeat (KIP-848): join, reconcile, leave, and the member timers of consumer groups.

Kafka's ``GroupMetadataManager.consumerGroupHeartbeat`` and its helpers, on one thread with injected time.
A heartbeat, after the request checks (:func:`request_error`):

1. finds or creates the group (epoch 0 only; an empty classic group with the id is taken over with its
   offsets, a non-empty one is upgraded when ``group.consumer.migration.policy`` allows it, else
   GROUP_ID_NOT_FOUND -- :mod:`~kafkagroup.coordinator.migration`) and the member (dynamic by member id; static
   by ``group.instance.id``: a new member id for an instance whose member left with epoch -2, or whose member
   is on the classic protocol, replaces it and keeps its partitions, while the instance is held by a live
   consumer-protocol member it is UNRELEASED_INSTANCE_ID for the newcomer; a known member with another member
   id is FENCED_INSTANCE_ID);
2. checks the member epoch: ahead of the coordinator's -> FENCED_MEMBER_EPOCH; behind it -> fenced too,
   unless it is the previous epoch and the owned partitions are within the assignment (a retry after a lost
   response);
3. applies the member's subscription (names, RE2 regex, assignor, rack); a change of membership, of a
   subscription, or of the subscribed topics' metadata (created, deleted, more partitions) bumps the
   group epoch;
4. computes a new target assignment when the group epoch is past the assignment epoch and the last one is
   ``group.consumer.assignment.interval.ms`` old (Kafka 4.3+ batches them; 1 s by default, 0 = always)
   (:mod:`~kafkagroup.coordinator.consumer.target`), then reconciles the member towards the target
   (:func:`~kafkagroup.coordinator.consumer.reconcile.reconcile`);
5. answers the member's epoch and, when it changed or the request was a full one, its assignment.

Timers: a member's session (``group.consumer.session.timeout.ms`` after its last heartbeat) and, while it
holds partitions it must revoke, its rebalance timeout; either expiring removes the member (fences it) and
bumps the group epoch -- or, when only classic members are left, downgrades the group.  Members on the classic
protocol inside the group are served by :mod:`~kafkagroup.coordinator.consumer.classic_members` with the
reconciliation, targets and timers of this module.  Leave with epoch -1 removes the member; epoch -2 (static) keeps it and its
partitions at epoch -2 until the same instance returns or the session expires.

Persistence: the coordinator writes what a heartbeat, a classic member's request or a timer changed to its
store (:mod:`~kafkagroup.coordinator.consumer.records`); a restarted coordinator reloads the group with its
members, epochs and target, and restarts their sessions.

Limits: ``group.consumer.assignors`` is fixed to uniform, range.
"""
from __future__ import annotations

import logging
import uuid
from typing import Any, Callable, Mapping
from uuid import UUID

from kafkagroup.coordinator.config import CoordinatorConfig
from kafkagroup.coordinator.consumer.group import (
    LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH, ConsumerGroup, ConsumerGroupMember, with_epoch_only,
)
from kafkagroup.coordinator.consumer.reconcile import Assignment, MemberAssignment, MemberState, is_subset, reconcile
from kafkagroup.coordinator.consumer.regex import InvalidRegex, compile_regex, matching_topics
from kafkagroup.coordinator.consumer.target import SERVER_ASSIGNORS, compute_target, preferred_assignor
from kafkagroup.messages.consumer_api import (
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, TopicPartitions,
)
from kafkagroup.messages.error_codes import ErrorCode
from kafkagroup.messages.topics import TopicsView

__all__ = ["ConsumerGroupHandlers", "request_error", "HeartbeatError"]

log = logging.getLogger("kafkagroup.coordinator")
_E = ErrorCode


class HeartbeatError(Exception):
    """A refusal with Kafka's error code and message (caught by the handler, never escapes it)."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _blank(value: str | None) -> bool:
    return value is not None and value.strip() == ""


def request_error(req: ConsumerGroupHeartbeatRequest) -> HeartbeatError | None:
    """Kafka's ``throwIfConsumerGroupHeartbeatRequestIsInvalid``: INVALID_REQUEST, UNSUPPORTED_ASSIGNOR or
    INVALID_REGULAR_EXPRESSION, with Kafka's messages; None when the request may proceed."""
    bad = _E.INVALID_REQUEST
    if (req.version >= 1 or req.member_epoch > 0 or req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH) \
            and req.member_id.strip() == "":
        return HeartbeatError(bad, "MemberId can't be empty.")
    if _blank(req.group_id) or req.group_id == "":
        return HeartbeatError(_E.INVALID_GROUP_ID, "GroupId can't be empty.")
    if _blank(req.instance_id):
        return HeartbeatError(bad, "InstanceId can't be empty.")
    if _blank(req.rack_id):
        return HeartbeatError(bad, "RackId can't be empty.")
    if req.member_epoch == 0:
        if req.rebalance_timeout_ms == -1:
            return HeartbeatError(bad, "RebalanceTimeoutMs must be provided in first request.")
        if req.topic_partitions is None or req.topic_partitions:
            return HeartbeatError(bad, "TopicPartitions must be empty when (re-)joining.")
        if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
            return HeartbeatError(bad, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null "
                                       "when (re-)joining.")
    elif req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        if req.instance_id is None:
            return HeartbeatError(bad, "InstanceId can't be null.")
    elif req.member_epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
        return HeartbeatError(bad, "MemberEpoch is invalid.")
    if req.server_assignor is not None and req.server_assignor not in SERVER_ASSIGNORS:
        return HeartbeatError(_E.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {req.server_assignor} is not supported. "
                                                       f"Supported assignors: {', '.join(SERVER_ASSIGNORS)}.")
    if req.subscribed_topic_regex:
        try:
            compile_regex(req.subscribed_topic_regex)
        except InvalidRegex as exc:
            return HeartbeatError(_E.INVALID_REGULAR_EXPRESSION, str(exc))
    return None


#: A target is computed on the heartbeat's own thread (its answer reconciles against it) while the group's
#: members plus subscribed partitions stay within this; larger ones go to serve's worker thread.  Measured:
#: ~0.4 ms for 50 members x 100 partitions, ~9 ms for 1,000 x 1,000 (uniform, incremental).
INLINE_TARGET_COST = 5_000


def _cheap_target(group: ConsumerGroup) -> bool:
    return len(group.members) + sum(n for _, n in group.subscription_metadata.values()) <= INLINE_TARGET_COST


def _partitions_text(topic_partitions: list[TopicPartitions] | None) -> str:
    """``[5: t0 0-3,7]`` (count, then each topic id's first 8 hex digits and its partitions as ranges);
    ``-`` for a field left out (null)."""
    if topic_partitions is None:
        return "-"
    parts = []
    for tp in topic_partitions:
        ranges: list[list[int]] = []
        for p in sorted(tp.partitions):
            if ranges and ranges[-1][1] == p - 1:
                ranges[-1][1] = p
            else:
                ranges.append([p, p])
        text = ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)
        parts.append(f"{str(tp.topic_id)[:8]} {text}")
    return f"[{sum(len(tp.partitions) for tp in topic_partitions)}: {'; '.join(parts)}]"


class ConsumerGroupHandlers:
    """The consumer-group side of the coordinator: heartbeats and member timers over ``registry``.

    ``registry`` gives ``consumer_group(id)``, ``create_consumer_group(id)`` (which takes over an empty
    classic group of that id, or raises HeartbeatError for a non-empty one) and ``remove``; ``clock`` is the
    coordinator's guarded clock; ``topics`` the cluster's :class:`~kafkagroup.messages.topics.TopicsView`.
    ``offload(job, done)``: run ``job()`` off this thread and call ``done(result or exception)`` back on it
    (None: targets are computed in the heartbeat, as tests and simulations want).
    """

    def __init__(self, config: CoordinatorConfig, clock: Any, topics: TopicsView, registry: Any,
                 member_id_factory: Callable[[], str] | None = None,
                 offload: Callable[[Callable[[], Any], Callable[[Any], None]], None] | None = None) -> None:
        self.offload = offload
        self.config = config
        self.clock = clock
        self.topics = topics
        self.registry = registry
        self.new_member_id = member_id_factory or (lambda: str(uuid.uuid4()))
        # called with a group id after a timer or an offloaded target changed the group outside any request (the
        # coordinator writes the group's changes to its store then; requests are written by the coordinator)
        self.on_change: Callable[[str], None] = lambda group_id: None

    # ================================================================ heartbeat

    def heartbeat(self, req: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        response = self._answer(req)
        if log.isEnabledFor(logging.DEBUG):      # the heartbeat timeline (serve --log-level debug)
            log.debug("ConsumerGroupHeartbeat group %s member %s epoch %d owned %s -> error %s epoch %d "
                      "assigned %s", req.group_id, req.member_id or "(new)", req.member_epoch,
                      _partitions_text(req.topic_partitions), response.error_code, response.member_epoch,
                      _partitions_text(response.assignment))
        return response

    def _answer(self, req: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        error = request_error(req)
        try:
            if error is not None:
                raise error
            if req.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return self._leave(req)
            return self._heartbeat(req)
        except HeartbeatError as exc:
            log.info("ConsumerGroupHeartbeat of member %s in group %s: %s (%s)", req.member_id, req.group_id,
                     exc.code.name, exc.message)
            return ConsumerGroupHeartbeatResponse(exc.code, exc.message)

    def _heartbeat(self, req: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        joining = req.member_epoch == 0
        group = self.registry.consumer_group(req.group_id)
        if group is None:
            if not joining:
                raise HeartbeatError(_E.GROUP_ID_NOT_FOUND,
                                     f"Group {req.group_id} is not a consumer group." if self.registry.get(req.group_id)
                                     else f"Consumer group {req.group_id} not found.")
            group = self.registry.create_consumer_group(req.group_id)
        if (len(group.members) >= self.config.group_consumer_max_size and req.member_id not in group.members
                and (req.instance_id is None or group.static_member(req.instance_id) is None)):
            raise HeartbeatError(_E.GROUP_MAX_SIZE_REACHED, "The consumer group has reached its maximum capacity "
                                                            f"of {self.config.group_consumer_max_size} members.")
        member_id = req.member_id or self.new_member_id()
        owned = self._owned(req.topic_partitions)
        member, is_new, replaced = self._member(group, req, member_id, owned)

        before = (member.subscription(), member.server_assignor, member.rack_id)
        group.set_subscription(member, None if req.subscribed_topic_names is None
                               else tuple(sorted(set(req.subscribed_topic_names))), req.subscribed_topic_regex)
        if req.server_assignor is not None:
            member.server_assignor = req.server_assignor
        if req.rack_id is not None:
            member.rack_id = req.rack_id
        if req.rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.client_id, member.client_host = req.client_id, req.client_host
        if member.classic is not None:          # a static member moved from the classic protocol to this one
            group.set_classic(member, None)
        changed = is_new or group.assignment_epoch == 0 or before != (member.subscription(), member.server_assignor,
                                                                        member.rack_id)
        if is_new:
            group.add_member(member)
        if self.refresh_metadata(group, force=changed) or changed:
            group.bump_epoch()
            log.info("group %s: epoch %d (member %s)", group.group_id, group.group_epoch, member_id)
        self.maybe_update_target(group)

        previous = member.assignment
        self.reconcile_member(group, member, owned)
        self.arm_session(group, member)
        full = joining or (req.rebalance_timeout_ms != -1 and req.subscribed_topic_names is not None
                           and req.topic_partitions is not None)
        assignment = None
        if full or replaced or previous.assigned != member.assignment.assigned:
            assignment = [TopicPartitions(t, sorted(ps)) for t, ps in member.assignment.assigned.items()]
        return ConsumerGroupHeartbeatResponse(_E.NONE, None, member_id, member.member_epoch,
                                              self._interval_ms(group, member), assignment)

    def _interval_ms(self, group: ConsumerGroup, member: ConsumerGroupMember) -> int:
        """The heartbeat interval answered: ``group.consumer.heartbeat.interval.ms``, as Kafka does; or, where
        serve's own ``group.consumer.reconciling.heartbeat.interval.ms`` is set (off by default), that shorter
        interval while the group is Assigning or Reconciling.

        That option departs from Kafka (which always answers the configured interval) for time to stable: clients
        heartbeat at the interval they are answered (librdkafka and the Java consumer take it from every
        answer) and acknowledge a new assignment at once, so while the group moves its members are back
        soon -- a holder to hear of its revocation, a newcomer for the partitions just released -- instead
        of one whole interval later.  Once the group is Stable, the next answers name the configured interval
        again.  What is assigned when is unchanged (revoke before assign, epochs); only the pacing is."""
        interval = self.config.group_consumer_heartbeat_interval_ms
        reconciling = self.config.group_consumer_reconciling_heartbeat_interval_ms
        if reconciling and group.state_name != "Stable":
            return min(interval, reconciling)
        return interval

    def _member(self, group: ConsumerGroup, req: ConsumerGroupHeartbeatRequest, member_id: str,
                owned: list[tuple[UUID, list[int]]] | None) -> tuple[ConsumerGroupMember, bool, bool]:
        """(member, is new, replaced a static member) -- or HeartbeatError."""
        joining = req.member_epoch == 0
        if req.instance_id is None:
            member = group.members.get(member_id)
            if member is None:
                if not joining:
                    raise HeartbeatError(_E.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of group "
                                                               f"{group.group_id}.")
                return ConsumerGroupMember(member_id), True, False
            if not joining:
                self._check_epoch(member, req.member_epoch, owned)
            return member, False, False
        existing = group.static_member(req.instance_id)
        if joining:
            if existing is None:
                if member_id in group.members:    # a dynamic member cannot become static under the same id
                    raise HeartbeatError(_E.INVALID_REQUEST, f"Member {member_id} is already a member of group "
                                                             f"{group.group_id} without instance id.")
                return ConsumerGroupMember(member_id, instance_id=req.instance_id), True, False
            if existing.member_id == member_id:
                return existing, False, False
            # the instance held by a member on the consumer protocol is released only by its leave (-2); one on
            # the classic protocol is replaced at once (Kafka: the static member moves between protocols)
            if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH and not existing.uses_classic_protocol:
                raise HeartbeatError(_E.UNRELEASED_INSTANCE_ID,
                                     f"Static member {member_id} with instance id {req.instance_id} cannot join the "
                                     f"group because the instance id is owned by {existing.member_id} member.")
            # the instance left with -2 and returns under a new member id: it takes over its partitions
            replacement = ConsumerGroupMember(
                member_id, instance_id=req.instance_id, rack_id=existing.rack_id,
                rebalance_timeout_ms=existing.rebalance_timeout_ms,
                subscribed_topic_names=existing.subscribed_topic_names,
                subscribed_topic_regex=existing.subscribed_topic_regex, server_assignor=existing.server_assignor,
                assignment=MemberAssignment(existing.assignment.state, 0, 0, existing.assignment.assigned,
                                            existing.assignment.pending_revocation))
            self.cancel_timers(existing)
            group.replace_static_member(existing, replacement)
            log.info("group %s: static member %s (instance %s) replaced by %s", group.group_id,
                     existing.member_id, req.instance_id, member_id)
            return replacement, False, True
        if existing is None:
            raise HeartbeatError(_E.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
        if existing.member_id != member_id:
            raise HeartbeatError(_E.FENCED_INSTANCE_ID, f"Static member {member_id} with instance id "
                                                        f"{req.instance_id} was fenced by member {existing.member_id}.")
        self._check_epoch(existing, req.member_epoch, owned)
        return existing, False, False

    @staticmethod
    def _check_epoch(member: ConsumerGroupMember, epoch: int, owned: list[tuple[UUID, list[int]]] | None) -> None:
        """Kafka's ``throwIfConsumerGroupMemberEpochIsInvalid``."""
        current = member.assignment
        if epoch > current.member_epoch:
            raise HeartbeatError(_E.FENCED_MEMBER_EPOCH,
                                 f"The consumer group member has a greater member epoch ({epoch}) than the one known "
                                 f"by the group coordinator ({current.member_epoch}). The member must abandon all its "
                                 f"partitions and rejoin.")
        if epoch < current.member_epoch and (epoch != current.previous_member_epoch
                                             or not is_subset(owned, current.assigned)):
            raise HeartbeatError(_E.FENCED_MEMBER_EPOCH,
                                 f"The consumer group member has a smaller member epoch ({epoch}) than the one known "
                                 f"by the group coordinator ({current.member_epoch}). The member must abandon all its "
                                 f"partitions and rejoin.")

    def _owned(self, topic_partitions: list[TopicPartitions] | None) -> list[tuple[UUID, list[int]]] | None:
        if topic_partitions is None:
            return None
        return [(tp.topic_id, list(tp.partitions)) for tp in topic_partitions]

    # ============================================================== metadata

    def refresh_metadata(self, group: ConsumerGroup, *, force: bool) -> bool:
        """Re-resolve the group's regexes and its subscribed topics' (id, partition count) when the topics
        changed since the last look (or ``force``); True when what the group subscribes to changed."""
        version = self.topics.version
        if not force and group.metadata_version == version:
            return False
        regexes = group.regexes()
        if group.metadata_version != version:               # topics changed: every regex again
            group.regex_topics = {}
        group.metadata_version = version
        missing = [rx for rx in regexes if rx not in group.regex_topics]
        if missing:                                         # O(topics) per regex, only when it is new
            names = list(self.topics.names())
            for rx in missing:
                group.regex_topics[rx] = matching_topics(rx, names)
        for rx in [rx for rx in group.regex_topics if rx not in regexes]:
            del group.regex_topics[rx]
        metadata: dict[str, tuple[UUID, int]] = {}
        for name in group.all_subscribed_topics():
            count = self.topics.partition_count(name)
            topic_id = self.topics.topic_id(name)
            if count is not None and topic_id is not None:
                metadata[name] = (topic_id, count)
        if metadata == group.subscription_metadata:
            return False
        group.subscription_metadata = metadata
        return True

    def maybe_update_target(self, group: ConsumerGroup) -> None:
        """A new target when the group epoch is past the assignment epoch and one is due (Kafka's
        ``maybeUpdateTargetAssignment``): on this thread for a group's first target, a cheap one, or without an
        offload, else on the offload's thread."""
        if group.group_epoch > group.assignment_epoch and self._assignment_due(group):
            if self.offload is None or group.target_computed_at is None or _cheap_target(group):
                self.update_target(group)          # on this thread, seen by this very heartbeat's answer
            else:
                self._offload_target(group)

    def _assignment_due(self, group: ConsumerGroup) -> bool:
        """Kafka 4.3+ batches target computations: at most one per ``group.consumer.assignment.interval.ms``;
        until then members reconcile towards the previous target (the group describes as Assigning).  One
        offloaded computation at a time per group."""
        if group.computing_epoch is not None:
            return False
        last = group.target_computed_at
        return last is None or self.clock.now_ms() - last >= self.config.group_consumer_assignment_interval_ms

    def _target_inputs(self, group: ConsumerGroup) -> tuple[str, dict, dict, dict]:
        """A snapshot of what the assignor needs (immutable values in fresh containers: safe on a thread)."""
        assignor = preferred_assignor(m.server_assignor for m in group.members.values())
        shared: dict[tuple[tuple[str, ...], str | None], tuple[str, ...]] = {}   # one tuple per subscription
        members = {}
        for mid, m in group.members.items():
            key = m.subscription()
            names = shared.get(key)
            if names is None:
                names = shared[key] = tuple(sorted(group.subscribed_topics(m)))
            members[mid] = (names, m.instance_id, m.rack_id)
        return assignor, dict(group.subscription_metadata), members, dict(group.target)

    def update_target(self, group: ConsumerGroup) -> None:
        assignor, metadata, members, previous = self._target_inputs(group)
        try:
            target = compute_target(assignor, metadata, members, previous)
        except Exception as exc:    # the group stays Assigning; the next heartbeat of any member tries again
            log.exception("group %s: target assignment at epoch %d failed", group.group_id, group.group_epoch)
            raise HeartbeatError(_E.UNKNOWN_SERVER_ERROR, f"The target assignment of group {group.group_id} "
                                                          f"failed: {exc}") from exc
        self._apply_target(group, group.group_epoch, target)
        log.info("group %s: target assignment at epoch %d (%s, %d members)", group.group_id, group.group_epoch,
                 assignor, len(members))

    def _offload_target(self, group: ConsumerGroup) -> None:
        """Kafka's ``group.consumer.assignor.offload.enable``: the assignor runs on a worker thread (the engine
        releases the GIL) while this thread keeps answering; the result is applied here when it is back, for
        the group epoch it was computed at, without members that left meanwhile (members that joined wait
        for the next computation).  A failure is logged; the next due heartbeat tries again."""
        epoch = group.group_epoch
        inputs = self._target_inputs(group)
        group.computing_epoch = epoch

        def done(result: Any) -> None:
            group.computing_epoch = None
            if self.registry.consumer_group(group.group_id) is not group:
                return                               # deleted or unloaded meanwhile
            if isinstance(result, BaseException):
                log.error("group %s: target assignment at epoch %d failed: %r", group.group_id, epoch, result)
                return
            self._apply_target(group, epoch, result)
            log.info("group %s: target assignment at epoch %d (%s, %d members, on a worker thread)",
                     group.group_id, epoch, inputs[0], len(inputs[2]))
            self.on_change(group.group_id)

        self.offload(lambda: compute_target(*inputs), done)

    def _apply_target(self, group: ConsumerGroup, epoch: int, target: dict[str, Assignment]) -> None:
        if epoch <= group.assignment_epoch:
            return
        group.set_target(epoch, {m: a for m, a in target.items() if m in group.members})
        group.target_computed_at = self.clock.now_ms()

    # ========================================================== reconciliation

    def reconcile_member(self, group: ConsumerGroup, member: ConsumerGroupMember,
                   owned: list[tuple[UUID, list[int]]] | None, *, arm_rebalance: bool = True) -> None:
        """Move the member towards its target.  ``arm_rebalance``: start its revocation deadline when it must
        revoke (a classic member's deadlines are its join and sync timers instead)."""
        subscribed = {group.subscription_metadata[t][0] for t in group.subscribed_topics(member)
                      if t in group.subscription_metadata}
        current = member.assignment
        target: Assignment = group.target.get(member.member_id, {})
        nxt = reconcile(current, group.assignment_epoch, target, subscribed, group.partition_epoch, owned)
        if nxt is current:
            return
        group.update_assignment(member, nxt)
        if nxt.state is MemberState.UNREVOKED_PARTITIONS and arm_rebalance:
            if current.state is not MemberState.UNREVOKED_PARTITIONS or current.member_epoch != nxt.member_epoch:
                self._arm_rebalance(group, member)
        elif member.rebalance_timer is not None:
            member.rebalance_timer.cancel()
            member.rebalance_timer = None

    # =================================================================== leave

    def _leave(self, req: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        group = self.registry.consumer_group(req.group_id)
        if group is None:
            raise HeartbeatError(_E.GROUP_ID_NOT_FOUND, f"Group {req.group_id} not found.")
        if req.instance_id is None:
            member = group.members.get(req.member_id)
            if member is None:
                raise HeartbeatError(_E.UNKNOWN_MEMBER_ID, f"Member {req.member_id} is not a member of group "
                                                           f"{group.group_id}.")
            log.info("group %s: member %s left", group.group_id, member.member_id)
            self.fence(group, member)
        else:
            member = group.static_member(req.instance_id)
            if member is None:
                raise HeartbeatError(_E.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
            if member.member_id != req.member_id:
                raise HeartbeatError(_E.FENCED_INSTANCE_ID, f"Static member {req.member_id} with instance id "
                                                            f"{req.instance_id} was fenced by member {member.member_id}.")
            if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                log.info("group %s: static member %s (instance %s) left temporarily", group.group_id,
                         member.member_id, req.instance_id)
                group.update_assignment(member, with_epoch_only(member.assignment, LEAVE_GROUP_STATIC_MEMBER_EPOCH))
                if member.rebalance_timer is not None:
                    member.rebalance_timer.cancel()
                    member.rebalance_timer = None
            else:
                log.info("group %s: static member %s (instance %s) left", group.group_id, member.member_id,
                         req.instance_id)
                self.fence(group, member)
        return ConsumerGroupHeartbeatResponse(_E.NONE, None, req.member_id, req.member_epoch, 0)

    def fence(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        """Remove ``member`` (leave, session, rebalance, join or sync timeout) and bump the group epoch; the new
        target is computed at the next heartbeat of any member.  When only members on the classic protocol are
        left and the migration policy allows it, the group becomes a classic group instead (Kafka's
        ``consumerGroupFenceMember``)."""
        self.fence_all(group, [member])

    def fence_all(self, group: ConsumerGroup, members: list[ConsumerGroupMember]) -> None:
        """:meth:`fence` for several members at once (Kafka's ``consumerGroupFenceMembers``: one epoch bump)."""
        for member in members:
            self.cancel_timers(member)
        if self.registry.downgrade_without(group, members):
            return
        self.remove(group, members)

    def remove(self, group: ConsumerGroup, members: list[ConsumerGroupMember]) -> None:
        """Remove ``members`` with their timers and bump the group epoch once (no downgrade)."""
        for member in members:
            self.cancel_timers(member)
            group.remove_member(member.member_id)
        self.refresh_metadata(group, force=True)
        group.bump_epoch()

    # ================================================================== timers

    def arm_session(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        """(Re)start the member's session: the broker's ``group.consumer.session.timeout.ms``, or for a member on
        the classic protocol the session timeout of its JoinGroup."""
        if member.session_timer is not None:
            member.session_timer.cancel()
        timeout = (member.classic.session_timeout_ms if member.classic is not None
                   else self.config.group_consumer_session_timeout_ms)
        deadline = self.clock.now_ms() + timeout
        member.session_timer = self.clock.call_at(deadline, lambda: self.expire(group.group_id, member, "session"))

    def _arm_rebalance(self, group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        if member.rebalance_timer is not None:
            member.rebalance_timer.cancel()
        epoch = member.member_epoch
        deadline = self.clock.now_ms() + member.rebalance_timeout_ms

        def expire() -> None:
            member.rebalance_timer = None
            if member.member_epoch == epoch and member.state is MemberState.UNREVOKED_PARTITIONS:
                self.expire(group.group_id, member, "rebalance")
        member.rebalance_timer = self.clock.call_at(deadline, expire)

    def expire(self, group_id: str, member: ConsumerGroupMember, which: str) -> None:
        group = self.registry.consumer_group(group_id)
        if group is None or group.members.get(member.member_id) is not member:
            return
        log.info("group %s: member %s fenced (%s timeout expired)", group_id, member.member_id, which)
        self.fence(group, member)
        self.on_change(group_id)

    @staticmethod
    def cancel_timers(member: ConsumerGroupMember) -> None:
        for name in ("session_timer", "rebalance_timer", "join_timer", "sync_timer"):
            timer = getattr(member, name)
            if timer is not None:
                timer.cancel()
                setattr(member, name, None)

    def on_group_loaded(self, group: ConsumerGroup) -> None:
        """A group read back from the store: every member's session starts now (Kafka restarts them at load), and
        a member revoking partitions gets its rebalance timeout again (classic members their session only: they
        are asked to rejoin at their next heartbeat if behind)."""
        for member in group.members.values():
            self.arm_session(group, member)
            if member.state is MemberState.UNREVOKED_PARTITIONS and member.classic is None:
                self._arm_rebalance(group, member)

    def drop_timers(self, group: ConsumerGroup) -> None:
        """Cancel every timer of ``group`` (it is unloaded or deleted)."""
        for member in group.members.values():
            self.cancel_timers(member)


def describe_assignment(assignment: Mapping[UUID, frozenset[int]], topics: TopicsView
                        ) -> list[tuple[UUID, str, list[int]]]:
    """(topic id, name, partitions) for ConsumerGroupDescribe; a deleted topic's name is ''."""
    return [(t, topics.topic_name(t) or "", sorted(ps)) for t, ps in assignment.items()]
