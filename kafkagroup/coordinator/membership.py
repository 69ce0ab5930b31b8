"""JoinGroup, SyncGroup, Heartbeat and LeaveGroup after the coordinator gate (spec §2.2-§2.5, §3.7, §3.8).

Each handler follows the validation order of Kafka's Scala ``GroupCoordinator`` step by step; the step
numbers in the comments are the spec's.  Parked requests are :class:`Deferred` values stored on the member
(``awaiting_join`` / ``awaiting_sync``) and answered by :mod:`~kafkagroup.coordinator.rebalance`.
"""
from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Callable

from kafkagroup.coordinator.config import CoordinatorConfig
from kafkagroup.messages.deferred import Deferred
from kafkagroup.messages.error_codes import ErrorCode
from kafkagroup.coordinator.errors import IllegalGroupStateError
from kafkagroup.coordinator.group import ClassicGroup, ClassicGroupMember, GroupState
from kafkagroup.messages.api import (
    HeartbeatRequest, JoinGroupRequest, JoinGroupResponse, LeaveGroupMemberResponse,
    LeaveGroupRequest, LeaveGroupResponse, SyncGroupRequest, SyncGroupResponse,
)
from kafkagroup.coordinator.rebalance import RebalanceEngine

__all__ = ["MembershipHandlers", "validate_current_member"]

_S = GroupState
_E = ErrorCode


def validate_current_member(group: ClassicGroup, member_id: str, group_instance_id: str | None) -> ErrorCode | None:
    """``validateCurrentMember``: a given instance id must map to ``member_id`` (else 82, unknown: 25);
    then the member id must be in the group (25)."""
    if group_instance_id is not None:
        current = group.static_members.get(group_instance_id)
        if current is None:
            return _E.UNKNOWN_MEMBER_ID
        if current != member_id:
            return _E.FENCED_INSTANCE_ID
    if member_id not in group.members:
        return _E.UNKNOWN_MEMBER_ID
    return None


def random_member_id(prefix: str) -> str:
    """Kafka's member id: the client id (or group.instance.id) + "-" + a random UUID."""
    return f"{prefix}-{uuid.uuid4()}"


class MembershipHandlers:
    """The group-membership requests, given the group registry and the rebalance engine."""

    def __init__(self, config: CoordinatorConfig, engine: RebalanceEngine, groups: dict[str, ClassicGroup],
                 create_group: Callable[[str], ClassicGroup],
                 new_member_id: Callable[[str], str] | None = None) -> None:
        self.config = config
        self.engine = engine
        self.groups = groups
        self.create_group = create_group
        self.new_member_id = new_member_id or random_member_id

    # ================================================================== JoinGroup

    def join_group(self, req: JoinGroupRequest, reply: Deferred[JoinGroupResponse]) -> None:
        """§2.2 from step 3 (the gate and the session-timeout check are done by the coordinator)."""
        member_id = req.member_id
        is_unknown = member_id == ""
        group = self.groups.get(req.group_id)
        if group is None:
            if not is_unknown:
                reply.set_result(JoinGroupResponse(_E.UNKNOWN_MEMBER_ID, member_id=member_id))
                return
            group = self.create_group(req.group_id)
        if not self._accept_joining_member(group, member_id):  # step 4, group.max.size (KIP-389)
            removed = group.members.get(member_id)
            if removed is not None:
                self.engine.drop_member(group, removed)
            else:
                group.remove(member_id)  # a pending member id
            # Java (spec §8 #5): the join phase is not re-checked here but at the next join, leave or timer;
            # scenario C26 asserts that timing (Scala would complete at once and start the sync timer early)
            reply.set_result(JoinGroupResponse(_E.GROUP_MAX_SIZE_REACHED, member_id=""))
            return
        if is_unknown:
            self._join_new_member(group, req, reply)
        else:
            self._join_current_member(group, req, reply)
        if group.state is _S.PREPARING_REBALANCE:  # step 7
            self.engine.try_complete_join(group)

    def _accept_joining_member(self, group: ClassicGroup, member_id: str) -> bool:
        state = group.state
        if state is _S.EMPTY or state is _S.DEAD:
            return True
        member = group.members.get(member_id)
        if state is _S.PREPARING_REBALANCE:
            return (member is not None and member.awaiting_join is not None) or \
                group.num_members_awaiting_join < self.config.group_max_size
        return member is not None or len(group.members) < self.config.group_max_size

    @staticmethod
    def _timeouts(req: JoinGroupRequest) -> tuple[int, int]:
        """(rebalance, session) timeouts; JoinGroup v0 has no rebalance timeout and uses the session one."""
        session = req.session_timeout_ms
        rebalance = req.rebalance_timeout_ms if req.rebalance_timeout_ms >= 0 else session
        return rebalance, session

    def _new_member(self, member_id: str, req: JoinGroupRequest) -> ClassicGroupMember:
        rebalance, session = self._timeouts(req)
        return ClassicGroupMember(member_id, group_instance_id=req.group_instance_id, client_id=req.client_id,
                                  client_host=req.client_host, rebalance_timeout_ms=rebalance,
                                  session_timeout_ms=session, protocol_type=req.protocol_type,
                                  protocols=req.protocols)

    def _join_new_member(self, group: ClassicGroup, req: JoinGroupRequest, reply: Deferred[JoinGroupResponse]) -> None:
        """Step 5: memberId == ""."""
        if group.state is _S.DEAD:
            reply.set_result(JoinGroupResponse(_E.COORDINATOR_NOT_AVAILABLE, member_id=""))
            return
        if not group.supports_protocols(req.protocol_type, [name for name, _ in req.protocols]):
            reply.set_result(JoinGroupResponse(_E.INCONSISTENT_GROUP_PROTOCOL, member_id=""))
            return
        instance = req.group_instance_id
        new_member_id = self.new_member_id(instance if instance is not None else req.client_id)
        if instance is not None:
            old_member_id = group.static_members.get(instance)
            if old_member_id is not None:
                self._replace_static_member(group, old_member_id, new_member_id, req, reply)
            else:
                self.engine.add_member_and_rebalance(group, self._new_member(new_member_id, req), reply)
        elif req.version >= 4:  # KIP-394: the member must come back with the id we hand out
            self.engine.add_pending_member(group, new_member_id, req.session_timeout_ms)
            reply.set_result(JoinGroupResponse(_E.MEMBER_ID_REQUIRED, member_id=new_member_id))
        else:
            self.engine.add_member_and_rebalance(group, self._new_member(new_member_id, req), reply)

    def _join_current_member(self, group: ClassicGroup, req: JoinGroupRequest,
                             reply: Deferred[JoinGroupResponse]) -> None:
        """Step 6: a member id is given."""
        member_id = req.member_id
        if group.state is _S.DEAD:
            reply.set_result(JoinGroupResponse(_E.COORDINATOR_NOT_AVAILABLE, member_id=member_id))
            return
        if not group.supports_protocols(req.protocol_type, [name for name, _ in req.protocols]):
            reply.set_result(JoinGroupResponse(_E.INCONSISTENT_GROUP_PROTOCOL, member_id=member_id))
            return
        if member_id in group.pending_members:
            if req.group_instance_id is not None:
                raise IllegalGroupStateError(
                    f"received unexpected JoinGroup with group.instance.id {req.group_instance_id} for pending "
                    f"member {member_id} of group {group.group_id}")
            self.engine.add_member_and_rebalance(group, self._new_member(member_id, req), reply)
            return
        error = validate_current_member(group, member_id, req.group_instance_id)
        if error is not None:
            reply.set_result(JoinGroupResponse(error, member_id=member_id))
            return
        member = group.members[member_id]
        rebalance, session = self._timeouts(req)
        state = group.state
        if state is _S.PREPARING_REBALANCE:
            self.engine.update_member_and_rebalance(group, member, req.protocols, rebalance, session, reply)
        elif state is _S.COMPLETING_REBALANCE:
            if member.matches(req.protocols):  # the member missed our response: same generation again
                reply.set_result(self._current_generation_response(group, member_id,
                                                                   with_members=group.is_leader(member_id)))
            else:
                self.engine.update_member_and_rebalance(group, member, req.protocols, rebalance, session, reply)
        elif state is _S.STABLE:
            if group.is_leader(member_id) or not member.matches(req.protocols):
                self.engine.update_member_and_rebalance(group, member, req.protocols, rebalance, session, reply)
            else:
                reply.set_result(self._current_generation_response(group, member_id, with_members=False))
        else:  # Empty (Dead was answered above): let the member reset its generation and rejoin
            reply.set_result(JoinGroupResponse(_E.UNKNOWN_MEMBER_ID, member_id=member_id))

    def _current_generation_response(self, group: ClassicGroup, member_id: str, *, with_members: bool,
                                     leader: str | None = None, skip_assignment: bool = False) -> JoinGroupResponse:
        return JoinGroupResponse(
            _E.NONE, group.generation_id, group.protocol_type, group.protocol_name,
            (group.leader_id if leader is None else leader) or "", skip_assignment, member_id,
            group.current_member_metadata() if with_members else [])

    def _replace_static_member(self, group: ClassicGroup, old_member_id: str, new_member_id: str,
                               req: JoinGroupRequest, reply: Deferred[JoinGroupResponse]) -> None:
        """A static member restarts with an unknown member id (``updateStaticMemberAndRebalance``, §3.7)."""
        engine = self.engine
        instance = req.group_instance_id
        assert instance is not None
        current_leader = group.leader_id
        member = group.replace_static_member(
            instance, old_member_id, new_member_id,
            fence=(JoinGroupResponse(_E.FENCED_INSTANCE_ID, member_id=old_member_id),
                   SyncGroupResponse(_E.FENCED_INSTANCE_ID)))
        engine.restart_session(group, member)  # the old id's timer is now the new id's
        old = (list(member.protocols), member.rebalance_timeout_ms, member.session_timeout_ms)
        rebalance, session = self._timeouts(req)
        group.update_member(member, req.protocols, rebalance, session, reply)
        state = group.state
        if state is _S.STABLE:
            if group.select_protocol() != group.protocol_name:
                engine.maybe_prepare_rebalance(group, f"static member {instance} changed the selected protocol")
                return
            error = engine.persist_group(group, None)
            if error is not _E.NONE:  # revert: the old member id stays the instance's id
                group.detach_join(member)
                group.update_member(member, old[0], old[1], old[2], None)
                group.replace_static_member(instance, new_member_id, old_member_id, fence=None)
                engine.restart_session(group, member)
                reply.set_result(JoinGroupResponse(
                    error, group.generation_id, group.protocol_type, group.protocol_name, current_leader or "",
                    False, "", []))
            elif req.version >= 9:  # KIP-814: the restarted leader learns it leads but skips the assignment
                is_leader = group.is_leader(new_member_id)
                group.complete_join(member, self._current_generation_response(
                    group, new_member_id, with_members=is_leader, skip_assignment=is_leader))
            else:  # older clients: report the pre-restart leader id so nobody runs a useless assignment
                group.complete_join(member, self._current_generation_response(
                    group, new_member_id, with_members=False, leader=current_leader or ""))
        elif state is _S.COMPLETING_REBALANCE:
            # the leader may be computing an assignment for the old member id: start over
            engine.prepare_rebalance(group, f"static member {instance} rejoined during CompletingRebalance")
        elif state is _S.PREPARING_REBALANCE:
            pass  # the member is parked; the join may complete (checked by the caller)
        else:
            raise IllegalGroupStateError(
                f"group {group.group_id} was not supposed to be {group.state} when static member {instance} rejoins")

    # ================================================================== SyncGroup

    def sync_group(self, req: SyncGroupRequest, reply: Deferred[SyncGroupResponse]) -> None:
        """§2.3 from step 2."""
        group = self.groups.get(req.group_id)
        if group is None:
            reply.set_result(SyncGroupResponse(_E.UNKNOWN_MEMBER_ID))
            return
        error = self._validate_sync(group, req)
        if error is not None:
            reply.set_result(SyncGroupResponse(error))
            return
        engine = self.engine
        member = group.members[req.member_id]
        state = group.state
        if state is _S.EMPTY:
            reply.set_result(SyncGroupResponse(_E.UNKNOWN_MEMBER_ID))
        elif state is _S.PREPARING_REBALANCE:
            reply.set_result(SyncGroupResponse(_E.REBALANCE_IN_PROGRESS))
        elif state is _S.COMPLETING_REBALANCE:
            if member.awaiting_sync is not None:  # a repeated SyncGroup replaces the parked one
                member.awaiting_sync.mark_superseded()
            member.awaiting_sync = reply
            engine.remove_pending_sync_member(group, req.member_id)
            if group.is_leader(req.member_id):
                given = req.assignments
                assignment = {m: bytes(a) for m, a in (given.items() if isinstance(given, Mapping) else given)}
                for member_id in group.members:
                    if member_id not in assignment:
                        assignment[member_id] = b""
                generation = group.generation_id
                error = engine.persist_group(group, assignment)
                if group.state is _S.COMPLETING_REBALANCE and group.generation_id == generation:
                    if error is not _E.NONE:
                        engine.reset_and_propagate_assignment_error(group, error)
                        engine.maybe_prepare_rebalance(group, f"error {error.name} storing the group assignment")
                    else:
                        engine.set_and_propagate_assignment(group, assignment)
                        group.transition_to(_S.STABLE, engine.clock.now_ms())
        elif state is _S.STABLE:
            engine.remove_pending_sync_member(group, req.member_id)
            reply.set_result(SyncGroupResponse(_E.NONE, group.protocol_type, group.protocol_name, member.assignment))
            engine.restart_session(group, member)
        else:
            raise IllegalGroupStateError(f"reached unexpected condition for Dead group {group.group_id}")

    @staticmethod
    def _validate_sync(group: ClassicGroup, req: SyncGroupRequest) -> ErrorCode | None:
        if group.state is _S.DEAD:
            return _E.COORDINATOR_NOT_AVAILABLE
        error = validate_current_member(group, req.member_id, req.group_instance_id)
        if error is not None:
            return error
        if req.generation_id != group.generation_id:
            return _E.ILLEGAL_GENERATION
        if req.protocol_type is not None and req.protocol_type != group.protocol_type:
            return _E.INCONSISTENT_GROUP_PROTOCOL
        if req.protocol_name is not None and req.protocol_name != group.protocol_name:
            return _E.INCONSISTENT_GROUP_PROTOCOL
        return None

    # ================================================================== Heartbeat

    def heartbeat(self, req: HeartbeatRequest) -> ErrorCode:
        """§2.4 from step 2.  The hot path: dict lookups and a deadline store."""
        group = self.groups.get(req.group_id)
        if group is None:
            return _E.UNKNOWN_MEMBER_ID
        state = group.state
        if state is _S.DEAD:
            return _E.COORDINATOR_NOT_AVAILABLE
        member_id = req.member_id
        if req.group_instance_id is not None:
            error = validate_current_member(group, member_id, req.group_instance_id)
            if error is not None:
                return error
        member = group.members.get(member_id)
        if member is None:
            return _E.UNKNOWN_MEMBER_ID
        if req.generation_id != group.generation_id:
            return _E.ILLEGAL_GENERATION
        if state is _S.EMPTY:
            return _E.UNKNOWN_MEMBER_ID
        self.engine.restart_session(group, member)
        return _E.REBALANCE_IN_PROGRESS if state is _S.PREPARING_REBALANCE else _E.NONE

    # ================================================================= LeaveGroup

    def leave_group(self, req: LeaveGroupRequest) -> LeaveGroupResponse:
        """§2.5 from step 2; per-member results in request order."""
        group = self.groups.get(req.group_id)
        if group is None:
            return LeaveGroupResponse(_E.NONE, [LeaveGroupMemberResponse(m.member_id, m.group_instance_id,
                                                                         _E.UNKNOWN_MEMBER_ID) for m in req.members])
        if group.state is _S.DEAD:
            return LeaveGroupResponse(_E.COORDINATOR_NOT_AVAILABLE, [])
        engine = self.engine
        results = []
        for identity in req.members:
            member_id, instance = identity.member_id, identity.group_instance_id
            if member_id == "":  # administrative removal by group.instance.id
                current = group.static_members.get(instance) if instance is not None else None
                if current is None:
                    error = _E.UNKNOWN_MEMBER_ID
                else:
                    engine.remove_member_and_update_group(group, group.members[current])
                    error = _E.NONE
            elif member_id in group.pending_members:
                engine.remove_pending_member_and_update_group(group, member_id)
                error = _E.NONE
            else:
                error = validate_current_member(group, member_id, instance) or _E.NONE
                if error is _E.NONE:
                    engine.remove_member_and_update_group(group, group.members[member_id])
            results.append(LeaveGroupMemberResponse(member_id, instance, error))
        return LeaveGroupResponse(_E.NONE, results)
