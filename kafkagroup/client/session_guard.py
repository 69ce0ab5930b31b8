"""The member's session guard: it keeps its partitions only while it can prove that the coordinator still counts
it as a member; when it cannot, it reports them lost and rejoins (librdkafka's ``rd_kafka_cgrp_session_timeout_check``;
Java's heartbeat thread only marks the coordinator unknown when its session timer runs out).

Why: a member learns that the coordinator expired it only from the answer to its next request.  When that answer
is late (a slow network, a slow application, a test clock advanced in coarse steps) the rest of the group may
already have completed a rebalance without it and handed its partitions to someone else: two live members
would own one partition.  Kafka documents this case for ``onPartitionsLost`` and leaves it open; the guard
closes it.

The rule (its one home is :class:`SessionGuardMixin`)
----------------------------------------------------
Let S be this member's ``session.timeout.ms`` (sent in every JoinGroup; the coordinator times the member's session
with it) and R the *send* time of the latest request whose successful answer proves that the coordinator restarted
this member id's session.  The member may own partitions only until R + S - 1; at that deadline, if it still owns
any, it reports them lost (``on_lost``, not revoked: they may be another member's already), resets its generation,
drops the join round in flight and rejoins.

Why R + S - 1 is early enough.  The coordinator restarted the session when it *handled* the request, at a time
r >= R (a request is handled after it is sent; clock readings never decrease), so its deadline is D >= R + S.
The coordinator removes a member for a lapsed session only in the session timer's callback, at a reading >= D.
Nothing that follows from the removal -- the rebalance, the other members' JoinGroup and SyncGroup answers, their
``on_assign`` -- runs inside that callback: every answer travels through the clock (``call_at(now + latency)``,
:mod:`~kafkagroup.client.transport`), so it is due at >= D > R + S - 1.  Timers run in deadline order, so the
guard (due at R + S - 1) runs before any of them, whatever the tie-break between equal deadlines (``fifo`` or
``lifo``) and however far one ``ManualClock.advance`` jumps: a jump runs every due timer in deadline order with
``now`` = the end of the jump, and everything scheduled from inside the jump is due at >= that end.  The "- 1"
keeps the guard off the deadline D = R + S itself, where a ``lifo`` tie-break would run the coordinator's expiry
(and, with zero latency, everything it causes) first.  The coordinator's lazy session timer (armed at an older
deadline and re-armed when it fires early) may even run *before* the guard in a coarse jump; the argument does
not need it to run after, only that its consequences are due later.

Why the send time and not the receive time (librdkafka takes the receive time): the answer may arrive long after
the coordinator handled the request -- a whole clock jump later under ``ManualClock`` -- and only the send time
is a bound the member knows.

What proves a restarted session (spec §2.4, §3.5; :mod:`kafkagroup.coordinator.membership`,
:mod:`kafkagroup.coordinator.rebalance`):

* Heartbeat answered NONE or REBALANCE_IN_PROGRESS: the coordinator restarts the session before answering
  either (PreparingRebalance -> 27; CompletingRebalance, Stable -> 0).
* SyncGroup answered NONE: a SyncGroup parked in CompletingRebalance is answered by ``propagate_assignment``,
  which restarts the session of every member it answers; in Stable the SyncGroup restarts it before answering
  (Scala's rule, which our coordinator follows, spec §8 #6 -- Java's GroupMetadataManager does not restart it
  there, so against that coordinator this proof would be too generous by the time the SyncGroup waited).
* JoinGroup answered NONE, when it was the first JoinGroup this member id sent carrying its generation g >= 0:
  a join-phase completion restarts the session of every member it answers (§1.4 step 6).  The other NONE
  answer, given at once without restarting anything (§3.5), goes to a known member whose JoinGroup *matches*
  the protocols it sent last -- byte for byte, and the metadata encodes the generation (ConsumerProtocol
  Subscription v3) -- so it needs an earlier JoinGroup of this member id carrying the same g.  Later JoinGroups
  in the same generation (after a request timeout, say) therefore prove nothing.
* Not counted: a SyncGroup error (27 for a group already PreparingRebalance restarts nothing), an OffsetCommit
  (it restarts the session in Stable and PreparingRebalance, but heartbeats already cover those states).
* Only answers for the member id the member has now count: a session belongs to a member id.

Parked JoinGroups.  A member parked in JoinGroup is immune to session expiry (§1.2 ``hasSatisfiedHeartbeat``),
so a cooperative member waiting in a long rebalance keeps its partitions legitimately -- but it cannot know when
its JoinGroup reached the coordinator, and one that arrives after D finds it removed.  So a member that still
owns partitions keeps heartbeating while its JoinGroup is in flight (Java and librdkafka stop at the JoinGroup;
the coordinator answers such heartbeats 27 and restarts the session, exactly as for heartbeats sent just before
the JoinGroup).  Each answer moves R, so the guard never fires during a long but healthy rebalance; it fires only
when the coordinator stops answering for a whole session.  Members that own nothing (every EAGER member once its
JoinGroup is sent) heartbeat exactly as Kafka's clients do, and the guard never acts for them.

Heartbeat cadence.  Heartbeats go out every ``heartbeat.interval.ms`` but at least three times per session
(Kafka advises an interval of at most a third of the session).  Around every rebalance one heartbeat is answered
ILLEGAL_GENERATION (it reached the coordinator after the join phase ended) and proves nothing; with a heartbeat
at half the session, that one lost proof lets the guard fire in a healthy group whose answers take a second.

Limits:

* The guard covers removal by session expiry only.  A dynamic member is also removed when its JoinGroup reaches
  the coordinator more than the rebalance timeout (``max.poll.interval.ms``) after the rebalance began, or its
  SyncGroup more than the rebalance timeout after the join phase ended; the member sends both at once, so that
  takes a one-way delay of the rebalance timeout, and is not guarded.  A member removed by a LeaveGroup naming its
  instance id, or by a group reset after an internal error, learns it from its next answer.
* The deadline is computed on this member's clock; with a coordinator in another process it assumes that the two
  clocks advance at the same rate (no drift bound is added).
* The member keeps its member id when the guard fires (librdkafka clears it): the coordinator may well still count
  it (the guard only lost its proof), and a JoinGroup under the old id then rejoins the same member instead of
  leaving a second one behind for the rebalance to wait on; if the coordinator did remove it, the JoinGroup is
  answered UNKNOWN_MEMBER_ID and the member joins afresh.

:class:`SessionGuardMixin` is one part of :class:`~kafkagroup.client.member.GroupMember` and works on its state.
"""
from __future__ import annotations

from kafkagroup.client.generation import Generation, MemberState

__all__ = ["SessionGuardMixin"]


class SessionGuardMixin:
    """Holds R (``_session_proof_ms``) and the one timer that checks R + S - 1 (see the module docstring)."""

    def _session_renewed(self, sent: Generation, sent_ms: int) -> None:
        """An answer proves that the coordinator restarted the session of ``sent.member_id`` at or after
        ``sent_ms`` (the request's send time)."""
        if not sent.member_id or sent.member_id != self.generation.member_id:
            return
        if sent_ms > self._session_proof_ms:
            self._session_proof_ms = sent_ms
        if "session" not in self._timers:
            self._arm_session_check()

    def _join_proves_renewal(self) -> bool:
        """Called as a JoinGroup is sent: whether a NONE answer to it will prove a restarted session (see the
        module docstring: the first JoinGroup of this member id carrying its generation)."""
        gen = self.generation
        key = (gen.member_id, gen.generation_id)
        first = bool(gen.member_id) and gen.generation_id >= 0 and key != self._last_join_key
        self._last_join_key = key
        return first

    def _arm_session_check(self) -> None:
        self._session_check_at = self._session_proof_ms + self.config.session_timeout_ms - 1
        self._timers.arm_at("session", self._session_check_at, self._session_check)

    def _session_check(self) -> None:
        """The lazy check: one timer per member; a renewal since it was armed re-arms it at the later deadline.
        Compared with the deadline it was armed at, not with ``now``: under a coarse ``ManualClock`` jump ``now`` is
        the end of the jump, while the order that matters is the deadline order (see the module docstring)."""
        self._timers.fired("session")
        if not self.alive or not self.assignment:
            return   # nothing to protect; the next renewal arms the check again
        if self._session_proof_ms + self.config.session_timeout_ms - 1 > self._session_check_at:
            self._arm_session_check()
            return
        self._session_lapsed()

    def _session_lapsed(self) -> None:
        """No proof of membership for a whole session: the partitions may be another member's by now."""
        self.stats["session_lapses"] += 1
        self._notify("session_lapsed", self._session_proof_ms)
        self._lose_all()
        self._reset_generation(reset_member_id=False)
        self._abandon_round()
        self._request_rejoin()

    def _heartbeat_period_ms(self) -> int:
        """``heartbeat.interval.ms``, but at most a third of the session (see "Heartbeat cadence" above)."""
        return max(1, min(self.config.heartbeat_interval_ms, self.config.session_timeout_ms // 3))

    def _heartbeats_needed(self) -> bool:
        """Heartbeat in COMPLETING_REBALANCE and STABLE (as Kafka's clients do), and while a JoinGroup is in flight
        for a member that still owns partitions (the guard needs the proof; see the module docstring)."""
        state = self.state
        return state is MemberState.STABLE or state is MemberState.COMPLETING_REBALANCE or (
            state is MemberState.PREPARING_REBALANCE and bool(self.assignment)
        )
