"""The member's heartbeats and the reactions to their answers (spec §6.9): REBALANCE_IN_PROGRESS -> rejoin;
ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID -> reset the generation and rejoin; FENCED_INSTANCE_ID -> fatal.  One
heartbeat is in flight at a time; answers for an older generation are ignored.

When: in COMPLETING_REBALANCE and STABLE, as Kafka's clients do, and also while a JoinGroup is in flight for a
member that still owns partitions; every ``heartbeat.interval.ms``, at most a third of the session.  Answers 0
and 27 are the session guard's proof (:mod:`.session_guard` says why, and holds both rules).  An
ILLEGAL_GENERATION while a JoinGroup is in flight is left to the JoinGroup's answer.

:class:`HeartbeatMixin` is one part of :class:`~kafkagroup.client.member.GroupMember` and works on its state.
"""
from __future__ import annotations

from kafkagroup.client.generation import Generation, MemberState
from kafkagroup.messages.api import HeartbeatRequest, HeartbeatResponse
from kafkagroup.messages.error_codes import ErrorCode

__all__ = ["HeartbeatMixin"]

_E = ErrorCode


class HeartbeatMixin:
    """Heartbeat every ``heartbeat.interval.ms`` (armed by the JoinGroup answer; stops while unjoined)."""

    def _heartbeat_tick(self) -> None:
        self._timers.fired("heartbeat")
        if not self.alive or not self._heartbeats_needed():
            return   # heartbeats stop while unjoined, and in JoinGroup unless partitions are owned (session_guard)
        if self._heartbeat_inflight is not None:
            self._timers.arm("heartbeat", self._heartbeat_period_ms(), self._heartbeat_tick)
            return
        sent = self.generation
        token = object()
        self._heartbeat_inflight = token
        req = HeartbeatRequest(self.group_id, sent.generation_id, sent.member_id, self.group_instance_id)
        self.stats["heartbeats_sent"] += 1
        sent_ms = self.clock.now_ms()
        self.transport.heartbeat(req, lambda r: self._on_heartbeat_response(token, sent, sent_ms, r))
        self._timers.arm("heartbeat", self._heartbeat_period_ms(), self._heartbeat_tick)

    def _on_heartbeat_response(self, token: object, sent: Generation, sent_ms: int, resp: HeartbeatResponse) -> None:
        if token is self._heartbeat_inflight:
            self._heartbeat_inflight = None
        if not self.alive:
            return
        err = ErrorCode(resp.error_code)
        if err is _E.NONE or err is _E.REBALANCE_IN_PROGRESS:
            self._session_renewed(sent, sent_ms)   # both answers restart the session (spec §2.4)
        if err is _E.NONE:
            return
        if err is _E.REBALANCE_IN_PROGRESS:
            if self.state is MemberState.STABLE:
                self._request_rejoin()
            return
        if err in (_E.ILLEGAL_GENERATION, _E.UNKNOWN_MEMBER_ID, _E.FENCED_INSTANCE_ID):
            if self.generation != sent:
                return   # answer for an older generation: ignore
            if err is _E.ILLEGAL_GENERATION and self.state is MemberState.PREPARING_REBALANCE:
                return   # the group moved on while the JoinGroup is in flight: its answer says where this member is
            if err is _E.FENCED_INSTANCE_ID:
                # Java resets state and generation first (resetStateOnResponseError), then raises: the
                # instance id belongs to another process now, so close() reports the partitions lost
                self._reset_generation(reset_member_id=True)
                self._fatal(err, "Heartbeat")
                return
            self._reset_generation(reset_member_id=err is _E.UNKNOWN_MEMBER_ID)
            self._abandon_round()
            self._request_rejoin()
            return
