"""Rebalance procedures and their timers (spec §1.4, §3.2-§3.7): the engine under the request handlers.

Kafka keeps its delayed operations in purgatories; here each is one timer of the injected clock:

* **join phase** -- ``prepare_rebalance`` arms either the *initial delayed join* (group was Empty: ticks of
  ``group.initial.rebalance.delay.ms``, extended while new members arrive, bounded by the rebalance
  timeout, never completed early) or the *delayed join* (``rebalance_timeout_ms`` of the group, completed
  early as soon as every member and pending member has joined -- :meth:`try_complete_join`).
* **pending sync** -- armed at each join completion; removes the members that sent no SyncGroup.
* **session** -- one per member.  Restarting a session is the hot path (every Heartbeat), so it is
  O(1) and touches no heap: the member stores its deadline, and at most one clock timer per member checks
  it; when that timer fires early (the session was restarted meanwhile) it re-arms itself at the current
  deadline.  A timer only ever fires at or after the member's real deadline, at exactly the time Kafka's
  would.  New members use the 5-minute join timeout instead of their session timeout.
* **pending member** -- one per MEMBER_ID_REQUIRED id (the JoinGroup's session timeout).

Where the two Kafka implementations differ (spec §8) the Scala coordinator is followed, as the spec's
scenarios are: #1 gate order, #2 SyncGroup while loading -> 27, #3 the initial-delay extension flag is set
only while generation == 0, #4 the initial delayed join completes only on its timer, #6 a SyncGroup in
Stable restarts the session, #7 SyncGroup protocol checks against a null group value fail, #8 a timed-out
group write answers 27, #9 OffsetCommit with generation >= 0 to an unknown group answers 22, #11 a
LeaveGroup batch rebalances at its first removal, #12 a JoinGroup creating a group writes nothing.
Exception, #5: after a GROUP_MAX_SIZE_REACHED removal the join phase is re-checked only at the next join,
leave or timer (Java), the timing scenario C26 asserts.
"""
from __future__ import annotations

import logging
from typing import Callable, Sequence

from kafkagroup.messages.clock import Clock
from kafkagroup.coordinator.config import NEW_MEMBER_JOIN_TIMEOUT_MS, CoordinatorConfig
from kafkagroup.messages.deferred import Deferred
from kafkagroup.messages.error_codes import ErrorCode
from kafkagroup.coordinator.errors import IllegalGroupStateError
from kafkagroup.coordinator.group import ClassicGroup, ClassicGroupMember, GroupState
from kafkagroup.coordinator.timer_guard import GuardedClock
from kafkagroup.messages.api import JoinGroupResponse, SyncGroupResponse

__all__ = ["RebalanceEngine"]

log = logging.getLogger("kafkagroup.coordinator")

_S = GroupState
_E = ErrorCode

# persist(group, assignment or None for the members' current assignments) -> mapped response error (§2.9)
PersistGroup = Callable[[ClassicGroup, "dict[str, bytes] | None"], ErrorCode]


class RebalanceEngine:
    """Internal procedures shared by the handlers: member add/update/remove, join and sync phases, timers."""

    def __init__(self, clock: Clock, config: CoordinatorConfig, persist_group: PersistGroup) -> None:
        self.clock = GuardedClock(clock, self.reset_failed_group)  # every timer below is armed through it
        self.config = config
        self.persist_group = persist_group

    # ================================================================== sessions

    def restart_session(self, group: ClassicGroup, member: ClassicGroupMember, timeout_ms: int | None = None) -> None:
        """(Re)start the member's session: it expires ``timeout_ms`` (default: its session timeout) from now."""
        deadline = self.clock.now_ms() + (member.session_timeout_ms if timeout_ms is None else timeout_ms)
        member.session_deadline = deadline
        if member.session_timer is not None:
            if member.session_timer_deadline <= deadline:  # type: ignore[operator]
                return  # the armed timer fires first and re-arms itself at the new deadline
            member.session_timer.cancel()
        member.session_timer_deadline = deadline
        member.session_timer = self.clock.call_at(deadline, lambda: self._on_session_timer(group, member),
                                                   group=group)

    def cancel_session(self, member: ClassicGroupMember) -> None:
        member.session_deadline = None
        if member.session_timer is not None:
            member.session_timer.cancel()
            member.session_timer = None

    def _on_session_timer(self, group: ClassicGroup, member: ClassicGroupMember) -> None:
        member.session_timer = None
        deadline = member.session_deadline
        if deadline is None or group.state is _S.DEAD or group.members.get(member.member_id) is not member:
            return
        if deadline > self.clock.now_ms():  # restarted since this timer was armed
            member.session_timer_deadline = deadline
            member.session_timer = self.clock.call_at(deadline, lambda: self._on_session_timer(group, member),
                                                       group=group)
            return
        member.session_deadline = None
        if member.has_satisfied_heartbeat():
            return  # parked in JoinGroup/SyncGroup: spared, not re-armed (the next completion re-arms it)
        log.info("member %s of group %s failed its session, removing it", member.member_id, group.group_id)
        self.remove_member_and_update_group(group, member)

    # ============================================================ pending members

    def add_pending_member(self, group: ClassicGroup, member_id: str, timeout_ms: int) -> None:
        if member_id in group.members:
            raise IllegalGroupStateError(f"attempt to add pending member {member_id} which is already a member")
        old = group.pending_members.get(member_id)
        if old is not None:
            old.cancel()
        group.pending_members[member_id] = self.clock.call_at(
            self.clock.now_ms() + timeout_ms, lambda: self._on_pending_member_expired(group, member_id), group=group)

    def _on_pending_member_expired(self, group: ClassicGroup, member_id: str) -> None:
        if group.state is _S.DEAD or member_id not in group.pending_members:
            return
        group.pending_members.pop(member_id)  # the timer that fired is this one: nothing to cancel
        log.info("pending member %s of group %s expired", member_id, group.group_id)
        if group.state is _S.PREPARING_REBALANCE:
            self.try_complete_join(group)

    def remove_pending_member_and_update_group(self, group: ClassicGroup, member_id: str) -> None:
        group.remove(member_id)
        if group.state is _S.PREPARING_REBALANCE:
            self.try_complete_join(group)

    # ======================================================= add / update / remove

    def add_member_and_rebalance(self, group: ClassicGroup, member: ClassicGroupMember,
                                 reply: Deferred[JoinGroupResponse]) -> None:
        """A new member joins (``addMemberAndRebalance``): parked, 5-minute join timer, rebalance."""
        member.is_new = True
        if group.state is _S.PREPARING_REBALANCE and group.generation_id == 0:
            group.new_member_added = True
        group.add(member, reply)
        self.restart_session(group, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        if group.can_rebalance():
            self.prepare_rebalance(group, f"adding new member {member.member_id}")

    def update_member_and_rebalance(self, group: ClassicGroup, member: ClassicGroupMember,
                                    protocols: Sequence[tuple[str, bytes]], rebalance_timeout_ms: int,
                                    session_timeout_ms: int, reply: Deferred[JoinGroupResponse]) -> None:
        group.update_member(member, protocols, rebalance_timeout_ms, session_timeout_ms, reply)
        if group.can_rebalance():
            self.prepare_rebalance(group, f"member {member.member_id} rejoined")

    def remove_member_and_update_group(self, group: ClassicGroup, member: ClassicGroupMember) -> None:
        """Remove a member (session expiry, LeaveGroup): its parked JoinGroup gets UNKNOWN_MEMBER_ID."""
        group.complete_join(member, JoinGroupResponse(_E.UNKNOWN_MEMBER_ID, member_id=""))
        self.drop_member(group, member)
        state = group.state
        if state is _S.STABLE or state is _S.COMPLETING_REBALANCE:
            self.prepare_rebalance(group, f"removing member {member.member_id}")  # both states can rebalance
        elif state is _S.PREPARING_REBALANCE:
            self.try_complete_join(group)

    def drop_member(self, group: ClassicGroup, member: ClassicGroupMember) -> None:
        """Take a member out of the group and stop its timer.  A SyncGroup it still had parked can no longer
        be answered (Kafka leaves it to the client's request timeout); it is marked superseded."""
        group.remove(member.member_id)
        self.cancel_session(member)
        if member.awaiting_sync is not None:
            member.awaiting_sync.mark_superseded()
            member.awaiting_sync = None

    # ================================================================= join phase

    def maybe_prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
        if group.can_rebalance():
            self.prepare_rebalance(group, reason)

    def prepare_rebalance(self, group: ClassicGroup, reason: str) -> None:
        """Start a join phase (``prepareRebalance``, spec §1.4)."""
        if group.state is _S.COMPLETING_REBALANCE:
            self.reset_and_propagate_assignment_error(group, _E.REBALANCE_IN_PROGRESS)
        self.remove_sync_expiration(group)
        from_empty = group.state is _S.EMPTY
        rebalance_timeout = group.rebalance_timeout_ms()
        group.transition_to(_S.PREPARING_REBALANCE, self.clock.now_ms())
        log.info("preparing to rebalance group %s with old generation %d (reason: %s)",
                 group.group_id, group.generation_id, reason)
        self._cancel_join_timer(group)
        if from_empty:
            delay = self.config.group_initial_rebalance_delay_ms
            self._schedule_initial_join(group, delay, max(rebalance_timeout - delay, 0))
        else:
            self._schedule_join(group, rebalance_timeout)

    def _cancel_join_timer(self, group: ClassicGroup) -> None:
        if group.join_timer is not None:
            group.join_timer.cancel()
            group.join_timer = None
        group.join_timer_initial = False

    def _schedule_initial_join(self, group: ClassicGroup, delay_ms: int, remaining_ms: int) -> None:
        group.join_timer_initial = True
        group.join_timer = self.clock.call_at(self.clock.now_ms() + delay_ms,
                                              lambda: self._on_initial_join_tick(group, delay_ms, remaining_ms),
                                              group=group)

    def _on_initial_join_tick(self, group: ClassicGroup, delay_ms: int, remaining_ms: int) -> None:
        group.join_timer = None
        group.join_timer_initial = False
        if group.new_member_added and remaining_ms != 0:
            group.new_member_added = False
            new_delay = min(self.config.group_initial_rebalance_delay_ms, remaining_ms)
            new_remaining = max(remaining_ms - delay_ms, 0)  # minus the *previous* delay, as Kafka does
            self._schedule_initial_join(group, new_delay, new_remaining)
        else:
            self.complete_join(group)

    def _schedule_join(self, group: ClassicGroup, timeout_ms: int) -> None:
        """Kafka's ``DelayedJoin`` via ``tryCompleteElseWatch``: complete now if everyone joined, else arm."""
        if group.has_all_members_joined():
            self.complete_join(group)
            return
        group.join_timer_initial = False
        group.join_timer = self.clock.call_at(self.clock.now_ms() + timeout_ms, lambda: self._on_join_timeout(group),
                                              group=group)

    def _on_join_timeout(self, group: ClassicGroup) -> None:
        group.join_timer = None
        self.complete_join(group)

    def try_complete_join(self, group: ClassicGroup) -> None:
        """Complete the join phase early if every member (and pending member) has joined; never during the
        initial delay (``checkAndComplete`` on the group's join key)."""
        if group.join_timer is not None and not group.join_timer_initial and group.has_all_members_joined():
            self.complete_join(group)

    def complete_join(self, group: ClassicGroup) -> None:
        """End of the join phase (``onCompleteJoin``, spec §1.4)."""
        self._cancel_join_timer(group)
        for member in group.not_yet_rejoined_members():
            if not member.is_static:
                log.info("group %s removes member %s which did not rejoin", group.group_id, member.member_id)
                self.drop_member(group, member)
        if group.state is _S.DEAD:
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            log.warning("group %s could not complete the rebalance because no member rejoined", group.group_id)
            group.join_timer = self.clock.call_at(self.clock.now_ms() + group.rebalance_timeout_ms(),
                                                  lambda: self._on_join_timeout(group), group=group)
            return
        self.init_next_generation(group)
        if group.state is _S.EMPTY:
            error = self.persist_group(group, {})
            if error is not _E.NONE:  # as Kafka: only warned; the previous record stays the latest
                log.warning("failed to write empty metadata for group %s: %s", group.group_id, error.name)
            return
        leader_view = group.current_member_metadata()
        generation, protocol_type, protocol_name, leader = (
            group.generation_id, group.protocol_type, group.protocol_name, group.leader_id)
        for member in list(group.members.values()):
            is_leader = member.member_id == leader
            group.complete_join(member, JoinGroupResponse(
                _E.NONE, generation, protocol_type, protocol_name, leader or "", False, member.member_id,
                leader_view if is_leader else []))
            self.restart_session(group, member)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        self.schedule_pending_sync(group)

    def init_next_generation(self, group: ClassicGroup) -> None:
        now = self.clock.now_ms()
        group.generation_id += 1
        if group.members:
            group.protocol_name = group.select_protocol()
            group.transition_to(_S.COMPLETING_REBALANCE, now)
        else:
            group.protocol_name = None
            group.transition_to(_S.EMPTY, now)
        group.snapshot_subscriptions()
        group.pending_sync_members.clear()


    # ================================================================= sync phase

    def schedule_pending_sync(self, group: ClassicGroup) -> None:
        if group.sync_timer is not None:
            group.sync_timer.cancel()
        generation = group.generation_id
        group.sync_timer = self.clock.call_at(self.clock.now_ms() + group.rebalance_timeout_ms(),
                                              lambda: self._on_pending_sync_expired(group, generation), group=group)

    def remove_pending_sync_member(self, group: ClassicGroup, member_id: str) -> None:
        group.pending_sync_members.discard(member_id)
        if not group.pending_sync_members and group.sync_timer is not None:
            group.sync_timer.cancel()
            group.sync_timer = None

    def remove_sync_expiration(self, group: ClassicGroup) -> None:
        group.pending_sync_members.clear()
        if group.sync_timer is not None:
            group.sync_timer.cancel()
            group.sync_timer = None

    def _on_pending_sync_expired(self, group: ClassicGroup, generation: int) -> None:
        group.sync_timer = None
        if generation != group.generation_id or group.state not in (_S.COMPLETING_REBALANCE, _S.STABLE):
            return
        if not group.pending_sync_members:
            return
        missing = list(group.pending_sync_members)
        log.info("group %s removes members that sent no SyncGroup: %s", group.group_id, missing)
        for member_id in missing:
            member = group.members.get(member_id)
            if member is not None:
                self.drop_member(group, member)
            else:
                group.remove(member_id)
        self.prepare_rebalance(group, "pending sync expired")

    def set_and_propagate_assignment(self, group: ClassicGroup, assignment: dict[str, bytes]) -> None:
        for member_id, member in group.members.items():
            member.assignment = assignment.get(member_id, b"")
        self.propagate_assignment(group, _E.NONE)

    def reset_and_propagate_assignment_error(self, group: ClassicGroup, error: ErrorCode) -> None:
        for member in group.members.values():
            member.assignment = b""
        self.propagate_assignment(group, error)

    def propagate_assignment(self, group: ClassicGroup, error: ErrorCode) -> None:
        """Answer every parked SyncGroup; each member answered gets its session restarted."""
        ok = error is _E.NONE
        protocol_type = group.protocol_type if ok else None
        protocol_name = group.protocol_name if ok else None
        for member in list(group.members.values()):
            if group.complete_sync(member, SyncGroupResponse(error, protocol_type, protocol_name, member.assignment)):
                self.restart_session(group, member)

    # ================================================================ load/unload

    def on_group_loaded(self, group: ClassicGroup) -> None:
        """A group read from the store (Stable or Empty): sessions start now; oversized groups rebalance."""
        if len(group.members) > self.config.group_max_size:
            self.prepare_rebalance(group, f"freshly-loaded group is over capacity ({self.config.group_max_size})")
        for member in list(group.members.values()):
            self.restart_session(group, member)

    def on_group_unloaded(self, group: ClassicGroup) -> None:
        """The partition moved away: group Dead; parked requests answered NOT_COORDINATOR; timers stopped."""
        previous = group.state
        group.transition_to(_S.DEAD, self.clock.now_ms())
        if previous is _S.PREPARING_REBALANCE:
            for member in list(group.members.values()):
                group.complete_join(member, JoinGroupResponse(_E.NOT_COORDINATOR, member_id=member.member_id))
        elif previous in (_S.STABLE, _S.COMPLETING_REBALANCE):
            for member in list(group.members.values()):
                group.complete_sync(member, SyncGroupResponse(_E.NOT_COORDINATOR))
        self._cancel_join_timer(group)
        self.remove_sync_expiration(group)
        for member in group.members.values():
            self.cancel_session(member)
        for timer in group.pending_members.values():
            timer.cancel()

    def hand_over(self, group: ClassicGroup) -> None:
        """The group becomes a consumer group (online upgrade, Kafka's ``convertToConsumerGroup``): parked
        JoinGroup and SyncGroup requests are answered REBALANCE_IN_PROGRESS (the members rejoin and are served by
        the consumer group), every timer of the group stops, and the group goes Dead."""
        for member in list(group.members.values()):
            group.complete_join(member, JoinGroupResponse(_E.REBALANCE_IN_PROGRESS, member_id=member.member_id))
            group.complete_sync(member, SyncGroupResponse(_E.REBALANCE_IN_PROGRESS))
            self.cancel_session(member)
        self._cancel_join_timer(group)
        self.remove_sync_expiration(group)
        for timer in group.pending_members.values():
            timer.cancel()
        group.pending_members.clear()
        group.transition_to(_S.DEAD, self.clock.now_ms())

    # ============================================================ timer failures

    def reset_failed_group(self, group: ClassicGroup) -> None:
        """Put a group back into a consistent state after one of its timer callbacks raised (a kafkagroup
        defect; see :mod:`~kafkagroup.coordinator.timer_guard`).

        Nothing the failed callback left half-done can be trusted, so the group starts over without members:
        every parked JoinGroup and SyncGroup is answered UNKNOWN_SERVER_ERROR (what Kafka answers for an
        internal error), every member and pending member is removed with its timers, the join and sync timers
        are cancelled, and the group moves to Empty with the next generation, written to the store like any
        join phase that ends empty.  Members rejoin as after a session expiry (their next Heartbeat, commit
        or JoinGroup is answered UNKNOWN_MEMBER_ID); committed offsets are untouched.
        """
        if group.state is _S.DEAD:
            return
        failed = _E.UNKNOWN_SERVER_ERROR
        for member in list(group.members.values()):
            group.complete_join(member, JoinGroupResponse(failed, member_id=member.member_id))
            group.complete_sync(member, SyncGroupResponse(failed))
            self.drop_member(group, member)
        for member_id in list(group.pending_members):
            group.remove(member_id)
        self._cancel_join_timer(group)
        self.remove_sync_expiration(group)
        # with no members these counts are empty by definition, whatever the failure left in them
        group.supported_protocols.clear()
        group.num_members_awaiting_join = 0
        group.new_member_added = False
        if group.state is not _S.EMPTY:
            if group.state is not _S.PREPARING_REBALANCE:
                group.transition_to(_S.PREPARING_REBALANCE, self.clock.now_ms())
            self.init_next_generation(group)  # no members: Empty, generation + 1
            error = self.persist_group(group, {})
            if error is not _E.NONE:
                log.warning("failed to write empty metadata for group %s: %s", group.group_id, error.name)
        log.warning("group %s was reset to Empty (generation %d) after a timer failure",
                    group.group_id, group.generation_id)
