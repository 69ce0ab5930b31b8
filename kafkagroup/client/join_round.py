"""The join round of a member: JoinGroup, the leader's assignment, SyncGroup, and their error reactions (spec §6).

Protocol summary (spec references in brackets):

* onJoinPrepare before each JoinGroup: lost if the generation was reset, else EAGER revokes everything,
  COOPERATIVE revokes only partitions of topics no longer subscribed [§6.4];
* JoinGroup metadata per assignor = Subscription(topics, user data, owned partitions, generation, rack) [§6.2];
* the leader runs the selected assignor (skipped when the coordinator says ``skip_assignment``) [§6.5];
* onJoinComplete: COOPERATIVE revokes owned-minus-assigned, then rejoins; assigned callback gets the added
  partitions [§6.7]; rejoin rules [§6.8]; reactions to each coordinator error [§6.9].

Should the JoinGroup metadata fail to encode (a plug-in assignor's user data that is not bytes, or raises),
nothing is sent: the member keeps its state and generation, the error is raised from ``GroupMember.poll``, and
the join is tried again at the next explicit ``poll()``, subscription change, metadata change or
``request_rejoin()`` -- not on a timer, since the same inputs would fail the same way.  (Java sets
PREPARING_REBALANCE before building the metadata and rethrows from ``poll()``; its next ``poll()`` tries again.)

:class:`JoinRoundMixin` is one part of :class:`~kafkagroup.client.member.GroupMember` and works on its state.
"""
from __future__ import annotations

from typing import Mapping

from kafkagroup.client.errors import UnexpectedCoordinatorError
from kafkagroup.client.generation import NO_GENERATION, Generation, MemberState
from kafkagroup.client.leader import perform_assignment
from kafkagroup.client.listener import FirstError
from kafkagroup.client.ownership import (
    AssignedPartitions,
    assignment_delta,
    partitions_of_unsubscribed_topics,
)
from kafkagroup.client.rebalance_protocol import RebalanceProtocol
from kafkagroup.client.wire import build_subscription_bytes, parse_assignment, subscribed_topics_of
from kafkagroup.errors import InvariantError, ProtocolError
from kafkagroup.messages.api import JoinGroupRequest, JoinGroupResponse, SyncGroupRequest, SyncGroupResponse
from kafkagroup.messages.error_codes import ErrorCode

__all__ = ["JoinRoundMixin", "PROTOCOL_TYPE", "JOIN_GROUP_TIMEOUT_LAPSE_MS"]

PROTOCOL_TYPE = "consumer"
_E = ErrorCode

# errors that make Kafka mark the coordinator unknown and retry after backoff
_COORDINATOR_GONE = frozenset({_E.COORDINATOR_NOT_AVAILABLE, _E.NOT_COORDINATOR})
# JoinGroup errors that are fatal for the consumer (JoinGroupResponseHandler)
_JOIN_FATAL = frozenset({
    _E.FENCED_INSTANCE_ID, _E.INCONSISTENT_GROUP_PROTOCOL, _E.INVALID_SESSION_TIMEOUT, _E.INVALID_GROUP_ID,
    _E.GROUP_AUTHORIZATION_FAILED, _E.GROUP_MAX_SIZE_REACHED,
})
# SyncGroup errors that are fatal for the consumer (SyncGroupResponseHandler; 30 is GroupAuthorizationException)
_SYNC_FATAL = frozenset({_E.FENCED_INSTANCE_ID, _E.GROUP_AUTHORIZATION_FAILED})
# Kafka's JoinGroup request timeout is rebalance timeout + this margin (AbstractCoordinator.JOIN_GROUP_TIMEOUT_LAPSE)
JOIN_GROUP_TIMEOUT_LAPSE_MS = 5_000


class JoinRoundMixin:
    """JoinGroup -> (leader: assign) -> SyncGroup -> onJoinComplete, and the rejoin bookkeeping every other part
    of the member uses (``_request_rejoin``, ``_reset_generation``, ``_abandon_round``).  ``_round`` is the token
    of the round in flight; an answer carrying another token belongs to an abandoned round and is ignored."""

    def _rejoin_needed_or_pending(self) -> bool:
        if self._pattern is None and not self.subscription and self.joined_subscription is None:
            return False  # never subscribed: not using group management
        if self._rejoin_needed or self._round is not None:
            return True
        # leader: the metadata used for the assignment changed (§6.8)
        if self.is_leader and self.assignment_snapshot is not None:
            if self._leader_metadata_key() != self.assignment_snapshot:
                return True
        # the subscription changed since the last JoinGroup
        if self.joined_subscription is not None and self.joined_subscription != self.subscription:
            return True
        return False

    def _poll_once(self) -> None:
        if not self.alive or self.stalled:
            return
        if self._round is not None or "backoff" in self._timers or self._join_blocked:
            return
        if not self._rejoin_needed_or_pending():
            return
        if not self.subscription and self._pattern is None:
            return
        if self._needs_join_prepare:
            self._needs_join_prepare = False
            self._on_join_prepare()
        self._send_join_group()

    def _on_join_prepare(self) -> None:
        """§6.4 (offset auto-commit is not modelled)."""
        errs = FirstError()
        gen = self.generation
        if gen.is_reset:
            lost = self.assignment
            if lost:
                self._invoke("lost", lost, errs)
                self.assignment = frozenset()
        elif self.rebalance_protocol is RebalanceProtocol.EAGER:
            revoked = self.assignment
            self._invoke("revoked", revoked, errs)   # invoked even when empty, as Kafka does
            self.assignment = frozenset()
        else:
            revoked = partitions_of_unsubscribed_topics(self.assignment, self.subscription)
            if revoked:
                self._invoke("revoked", revoked, errs)
                self.assignment = self.assignment - revoked
        self.is_leader = False
        self.assignment_snapshot = None
        self._surface(errs)

    def _send_join_group(self) -> None:
        try:
            protocols = [
                (
                    assignor.name,
                    build_subscription_bytes(
                        assignor, self.subscription, self.assignment,
                        self.generation.generation_id, self.config.client_rack,
                    ),
                )
                for assignor in self.assignors
            ]
        except Exception as exc:  # noqa: BLE001 - a plug-in assignor's user-data hook is user code
            # nothing was sent: state, generation and the rejoin flag stay; poll() raises the error (see module doc)
            self._join_blocked = True
            self._surface_error(exc)
            return
        self.state = MemberState.PREPARING_REBALANCE
        self._notify("state", self.state)
        self.joined_subscription = self.subscription
        token = object()
        self._round = token
        self._round_generation = self.generation
        self._join_sent_ms = self.clock.now_ms()
        self._join_proves = self._join_proves_renewal()
        req = JoinGroupRequest(
            group_id=self.group_id,
            member_id=self.generation.member_id,
            group_instance_id=self.group_instance_id,
            protocol_type=PROTOCOL_TYPE,
            protocols=protocols,
            session_timeout_ms=self.config.session_timeout_ms,
            rebalance_timeout_ms=self.config.rebalance_timeout_ms,
            client_id=self.config.client_id,
        )
        self.stats["joins_sent"] += 1
        self.transport.join_group(req, lambda resp: self._on_join_response(token, resp))
        self._timers.arm(
            "request_timeout",
            self.config.rebalance_timeout_ms + JOIN_GROUP_TIMEOUT_LAPSE_MS,
            lambda: self._on_request_timeout(token),
        )

    def _on_request_timeout(self, token: object) -> None:
        if token is not self._round or not self.alive:
            return
        # the coordinator never answered (e.g. a superseded parked JoinGroup): disconnect and rejoin
        self._fail_round(retry_after_ms=self.config.retry_backoff_ms)

    def _on_join_response(self, token: object, resp: JoinGroupResponse) -> None:
        if token is not self._round or not self.alive:
            return  # stale answer of an abandoned round
        err = ErrorCode(resp.error_code)
        if err is _E.NONE:
            if self.state is not MemberState.PREPARING_REBALANCE:
                self._fail_round()
                return
            if resp.protocol_type is not None and resp.protocol_type != PROTOCOL_TYPE:
                self._fatal(_E.INCONSISTENT_GROUP_PROTOCOL, "JoinGroup")
                return
            self.state = MemberState.COMPLETING_REBALANCE
            self._notify("state", self.state)
            self.generation = Generation(resp.generation_id, resp.member_id, resp.protocol_name)
            if self._join_proves:
                self._session_renewed(self.generation, self._join_sent_ms)   # see session_guard
            self._timers.arm("heartbeat", self._heartbeat_period_ms(), self._heartbeat_tick)
            if resp.leader == resp.member_id:
                try:
                    assignments = self._on_leader_elected(resp)
                except Exception as exc:  # noqa: BLE001 - the assignor may be a user plug-in
                    # Kafka's onJoinLeader fails the join future with any RuntimeException: it surfaces from
                    # poll() as it is and the member rejoins (here after retry.backoff.ms)
                    self._surface_error(exc)
                    self._fail_round(retry_after_ms=self.config.retry_backoff_ms)
                    return
            else:
                assignments = {}
            self._send_sync_group(token, assignments)
        elif err is _E.MEMBER_ID_REQUIRED:
            # KIP-394: remember the id the coordinator handed out and join again at once
            self.generation = Generation(-1, resp.member_id, None)
            self._fail_round()
        elif err is _E.UNKNOWN_MEMBER_ID:
            if self.generation == self._round_generation:
                self._reset_generation(reset_member_id=True)
            self._fail_round()
        elif err in (_E.ILLEGAL_GENERATION, _E.REBALANCE_IN_PROGRESS):
            self._fail_round()
        elif err is _E.COORDINATOR_LOAD_IN_PROGRESS or err in _COORDINATOR_GONE:
            self._fail_round(retry_after_ms=self.config.retry_backoff_ms)
        elif err in _JOIN_FATAL:
            self._fatal(err, "JoinGroup")
        else:
            self._unexpected_error(err, "JoinGroup")

    def _on_leader_elected(self, resp: JoinGroupResponse) -> dict[str, bytes]:
        """§6.5; returns the assignments to send (empty when told to skip the assignment, KIP-814)."""
        self.is_leader = True
        self._metadata = self.cluster.snapshot()   # ensureFreshMetadata before assigning
        if resp.skip_assignment:
            # KIP-814: a restarted static leader keeps the group's assignment; it still watches the metadata
            # of every member's topics, from the current snapshot on.  (Kafka does the same, so a partition
            # added while the static leader was down goes unnoticed until the next metadata change.)
            topics: set[str] = set()
            for m in resp.members:
                topics.update(subscribed_topics_of(m.member_id, m.metadata))
            self._group_subscription = frozenset(topics)
            self.assignment_snapshot = self._leader_metadata_key()
            return {}
        protocol = resp.protocol_name
        assignor = self._assignor_by_name.get(protocol or "")
        if assignor is None:
            raise InvariantError(f"member {self.name!r}: coordinator selected unknown assignor {protocol!r}")
        result = perform_assignment(
            assignor, resp.members, self._metadata, self.rebalance_protocol,
            use_racks=self.config.client_rack is not None,
        )
        self._group_subscription = result.group_topics
        self.assignment_snapshot = self._leader_metadata_key()
        self.last_leader_assignment = result
        return result.assignments

    def _leader_metadata_key(self) -> tuple:
        topics = self._group_subscription if self._group_subscription is not None else self.subscription
        return self._metadata.restricted(topics, with_racks=self.config.client_rack is not None)

    def _send_sync_group(self, token: object, assignments: Mapping[str, bytes]) -> None:
        gen = self.generation
        req = SyncGroupRequest(
            group_id=self.group_id,
            generation_id=gen.generation_id,
            member_id=gen.member_id,
            group_instance_id=self.group_instance_id,
            protocol_type=PROTOCOL_TYPE,
            protocol_name=gen.protocol_name,
            assignments=list(assignments.items()),
        )
        self.stats["syncs_sent"] += 1
        self._round_generation = gen
        self._sync_sent_ms = self.clock.now_ms()
        self.transport.sync_group(req, lambda resp: self._on_sync_response(token, resp))

    def _on_sync_response(self, token: object, resp: SyncGroupResponse) -> None:
        if token is not self._round or not self.alive:
            return
        err = ErrorCode(resp.error_code)
        if err is _E.NONE:
            gen = self.generation
            if gen.is_reset or self.state is not MemberState.COMPLETING_REBALANCE:
                # The generation/state changed while the SyncGroup was in flight (an OffsetCommit answered
                # 22/25 reset it): the round failed, rejoin.  No second reset: the one that changed the
                # generation already decided whether the member id is kept (22 keeps it).  Checked before the
                # protocol name, which Kafka compares with the already-reset generation (null) and so reports
                # as INCONSISTENT_GROUP_PROTOCOL in this race.
                self._fail_round()
                return
            if (resp.protocol_type is not None and resp.protocol_type != PROTOCOL_TYPE) or (
                resp.protocol_name is not None and resp.protocol_name != gen.protocol_name
            ):
                self._fatal(_E.INCONSISTENT_GROUP_PROTOCOL, "SyncGroup")
                return
            self._session_renewed(gen, self._sync_sent_ms)   # see session_guard: the answer restarted the session
            self.state = MemberState.STABLE
            self._rejoin_needed = False
            self._round = None
            self._timers.cancel("request_timeout")
            self.stats["rebalances"] += 1
            self.generation_history.append((self.clock.now_ms(), gen.generation_id))
            self._notify("state", self.state)
            self._on_join_complete(gen, resp.assignment)
            self._needs_join_prepare = True
            if self._rejoin_needed_or_pending():
                self._schedule_poll()
        elif err is _E.REBALANCE_IN_PROGRESS:
            self._fail_round()
        elif err is _E.UNKNOWN_MEMBER_ID:
            self._reset_generation(reset_member_id=True)
            self._fail_round()
        elif err is _E.ILLEGAL_GENERATION:
            self._reset_generation(reset_member_id=False)
            self._fail_round()
        elif err is _E.COORDINATOR_LOAD_IN_PROGRESS or err in _COORDINATOR_GONE:
            self._fail_round(retry_after_ms=self.config.retry_backoff_ms)
        elif err in _SYNC_FATAL:
            self._fatal(err, "SyncGroup")
        else:
            self._unexpected_error(err, "SyncGroup")

    def _on_join_complete(self, gen: Generation, assignment_bytes: bytes) -> None:
        """§6.7."""
        if len(assignment_bytes) < 2:
            exc = InvariantError(
                f"member {self.name!r}: SyncGroup of generation {gen.generation_id} returned "
                f"{len(assignment_bytes)} assignment byte(s); a ConsumerProtocol Assignment needs at least 2"
            )
            self._surface_error(exc)
            self._request_rejoin()
            return
        try:
            assignment = parse_assignment(assignment_bytes, gen.member_id)
            assigned = AssignedPartitions.of(assignment)
        except ProtocolError as exc:
            self._surface_error(exc)
            self._request_rejoin()
            return
        if not assignment.topics <= self.subscription:   # topics_outside_subscription, from the decoded topics
            # the subscription changed since the JoinGroup: the assignment is outdated
            self._request_rejoin()
            return
        delta = assignment_delta(self.assignment, assigned)
        errs = FirstError()
        if self.rebalance_protocol is RebalanceProtocol.COOPERATIVE and delta.revoked:
            self._invoke("revoked", delta.revoked, errs)
            self._request_rejoin()   # "need to revoke partitions and re-join"
        assignor = self._assignor_by_name.get(gen.protocol_name or "")
        if assignor is not None:
            try:   # invokeOnAssignment: a plug-in's error is kept like a callback's, the remaining steps still run
                assignor.on_assignment(assignment, gen.generation_id)
            except Exception as exc:  # noqa: BLE001 - user code
                errs.keep(exc)
        self.assignment = assigned
        self._invoke("assigned", delta.added, errs)  # invoked even when empty
        self._surface(errs)

    def _fail_round(self, retry_after_ms: int = 0) -> None:
        """End the join round; rejoin at once or after a backoff (Kafka's joinGroupIfNeeded loop)."""
        self._round = None
        self._timers.cancel("request_timeout")
        self._rejoin_needed = True
        if self.state is not MemberState.UNJOINED and self.generation.is_reset:
            self.state = MemberState.UNJOINED
            self._notify("state", self.state)
        if retry_after_ms > 0:
            self._timers.arm("backoff", retry_after_ms, self._after_backoff)
        else:
            self._schedule_poll(0)   # Kafka's join loop retries within the same poll()

    def _unexpected_error(self, code: ErrorCode, api: str) -> None:
        """§6.9 "other -> KafkaException": raised from the next poll(); the rejoin flag stays set and the member
        joins again after retry.backoff.ms (Kafka's join loop rethrows it; the application's next poll rejoins)."""
        self._surface_error(UnexpectedCoordinatorError(code, api, self.name))
        self._fail_round(retry_after_ms=self.config.retry_backoff_ms)

    def _after_backoff(self) -> None:
        self._timers.fired("backoff")
        self._schedule_poll(0)

    def _request_rejoin(self) -> None:
        self._rejoin_needed = True
        if self._round is None:
            self._schedule_poll()

    def _reset_generation(self, *, reset_member_id: bool) -> None:
        """``resetStateAndGeneration``; the next join runs onJoinPrepare again, so owned partitions are lost."""
        self.generation = NO_GENERATION if reset_member_id else Generation(-1, self.generation.member_id, None)
        self.state = MemberState.UNJOINED
        self._needs_join_prepare = True
        self._notify("state", self.state)

    def _abandon_round(self) -> None:
        self._round = None
        self._timers.cancel("request_timeout")
