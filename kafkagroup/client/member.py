"""A classic-protocol consumer-group member: JoinGroup / SyncGroup / Heartbeat / LeaveGroup (spec §6).

:class:`GroupMember` is the rebalancing half of a Kafka consumer (``AbstractCoordinator`` +
``ConsumerCoordinator``) without the fetching half.  It is event driven: every action is a callback of
the injected clock (timers) or of the transport (responses, which also arrive through the clock), so one
``ManualClock`` drives a coordinator and any number of members deterministically, and an
``AsyncioClock`` drives them live.  Example (the group settles after the initial rebalance delay)::

    clock = ManualClock()
    coordinator = GroupCoordinator(clock=clock, store=":memory:", group_initial_rebalance_delay_ms=0)
    cluster = ClusterMetadata({"orders": 6})
    a = GroupMember(coordinator, clock=clock, cluster=cluster, topics=["orders"],
                    config={"group.id": "g", "partition.assignment.strategy": "cooperative-sticky"},
                    on_assign=print)
    a.start(); clock.advance(0)          # prints frozenset({orders-0, ..., orders-5})

Protocol summary (spec references in brackets):

* rebalance protocol from the assignors' supported protocols, highest common one [§6.1];
* onJoinPrepare before each JoinGroup: lost if the generation was reset, else EAGER revokes everything,
  COOPERATIVE revokes only partitions of topics no longer subscribed [§6.4];
* JoinGroup metadata per assignor = Subscription(topics, user data, owned partitions, generation, rack) [§6.2];
* the leader runs the selected assignor (skipped when the coordinator says ``skip_assignment``) [§6.5];
* onJoinComplete: COOPERATIVE revokes owned-minus-assigned, then rejoins; assigned callback gets the added
  partitions [§6.7]; rejoin rules [§6.8]; reactions to each coordinator error [§6.9]; lost vs revoked [§6.10].

Application-facing behaviour: by default the member behaves as an application that polls continuously
(``auto_poll=True``): a requested rejoin starts ``poll_delay_ms`` later.  :meth:`stall` stops polling (a
stuck consumer: after ``max.poll.interval.ms`` the member leaves the group, as Kafka's heartbeat thread
does), :meth:`poll` is the explicit poll: it raises, once, the first error since the last poll -- a rebalance
callback's or assignor plug-in's error, an :class:`UnexpectedCoordinatorError` (a JoinGroup/SyncGroup error
without a specific reaction; the member rejoins after ``retry.backoff.ms``), or a :class:`FatalMemberError`
(only 82/23/26/24/30/81; the member stops).  Every such error is also kept in :attr:`GroupMember.errors`.

Values Kafka's wire format cannot carry never reach the coordinator: :class:`MemberConfig` refuses them at
construction, ``topics=`` / :meth:`GroupMember.subscribe` refuse a topic that is not a string, blank (Java's
``subscribe``: "cannot contain null or empty topic"), not UTF-8-encodable or over 32,767 bytes.  Should the
JoinGroup metadata still fail to encode (a plug-in assignor's user data that is not bytes, or raises), nothing
is sent: the member keeps its state and generation, the error is raised from :meth:`GroupMember.poll`, and the
join is tried again at the next explicit ``poll()``, subscription change, metadata change or
``request_rejoin()`` -- not on a timer, since the same inputs would fail the same way.  (Java sets
PREPARING_REBALANCE before building the metadata and rethrows from ``poll()``; its next ``poll()`` tries again.)
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import Any, Callable, Iterable, Mapping, Optional

from kafkagroup.client.cluster import ClusterMetadata, MetadataSnapshot
from kafkagroup.client.config import MemberConfig
from kafkagroup.client.leader import LeaderAssignment, perform_assignment
from kafkagroup.client.listener import CallbackSet, FirstError, PartitionsCallback
from kafkagroup.client.ownership import (
    assignment_delta,
    partitions_of_unsubscribed_topics,
    topics_outside_subscription,
)
from kafkagroup.client.rebalance_protocol import RebalanceProtocol
from kafkagroup.client.transport import GroupTransport, InProcessTransport
from kafkagroup.client.wire import (
    AssignorState,
    build_subscription_bytes,
    parse_assignment,
    parse_member_subscription,
)
from kafkagroup.messages.clock import Clock, TimerHandle
from kafkagroup.messages.error_codes import ErrorCode
from kafkagroup.messages.api import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    OffsetCommitRequest,
    OffsetCommitResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafkagroup.errors import InvalidGroupError, InvariantError, KafkaGroupError, ProtocolError
from kafkagroup.protocol.consumer_protocol import string_problem
from kafkagroup.structs import TopicPartition

__all__ = [
    "MemberState",
    "Generation",
    "NO_GENERATION",
    "GroupMember",
    "FatalMemberError",
    "CommitFailedError",
    "RebalanceInProgressError",
    "OffsetCommitError",
    "UnexpectedCoordinatorError",
    "PROTOCOL_TYPE",
]

PROTOCOL_TYPE = "consumer"
_E = ErrorCode

# JoinGroup/SyncGroup errors after which Kafka's join loop retries at once (no backoff).
_RETRY_NOW = frozenset({_E.UNKNOWN_MEMBER_ID, _E.ILLEGAL_GENERATION, _E.REBALANCE_IN_PROGRESS, _E.MEMBER_ID_REQUIRED})
# errors that make Kafka mark the coordinator unknown and retry after backoff
_COORDINATOR_GONE = frozenset({_E.COORDINATOR_NOT_AVAILABLE, _E.NOT_COORDINATOR})
# JoinGroup errors that are fatal for the consumer (JoinGroupResponseHandler)
_JOIN_FATAL = frozenset({
    _E.FENCED_INSTANCE_ID, _E.INCONSISTENT_GROUP_PROTOCOL, _E.INVALID_SESSION_TIMEOUT, _E.INVALID_GROUP_ID,
    _E.GROUP_AUTHORIZATION_FAILED, _E.GROUP_MAX_SIZE_REACHED,
})
# SyncGroup errors that are fatal for the consumer (SyncGroupResponseHandler; 30 is GroupAuthorizationException)
_SYNC_FATAL = frozenset({_E.FENCED_INSTANCE_ID, _E.GROUP_AUTHORIZATION_FAILED})
# OffsetCommitResponseHandler: errors raised to the user as they are ...
_COMMIT_SURFACED = frozenset({
    _E.OFFSET_METADATA_TOO_LARGE, _E.INVALID_COMMIT_OFFSET_SIZE, _E.GROUP_AUTHORIZATION_FAILED,
})
# ... and errors commitSync retries after retry.backoff.ms ("just retry", or rediscover the coordinator and retry)
_COMMIT_RETRIABLE = frozenset({
    _E.COORDINATOR_LOAD_IN_PROGRESS, _E.UNKNOWN_TOPIC_OR_PARTITION,
    _E.COORDINATOR_NOT_AVAILABLE, _E.NOT_COORDINATOR, _E.REQUEST_TIMED_OUT,
})
# Kafka's JoinGroup request timeout is rebalance timeout + this margin (AbstractCoordinator.JOIN_GROUP_TIMEOUT_LAPSE)
JOIN_GROUP_TIMEOUT_LAPSE_MS = 5_000


class MemberState(Enum):
    """``AbstractCoordinator.MemberState``."""

    UNJOINED = "UNJOINED"
    PREPARING_REBALANCE = "PREPARING_REBALANCE"      # JoinGroup sent
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"    # JoinGroup answered, SyncGroup sent
    STABLE = "STABLE"                                # SyncGroup answered


@dataclass(frozen=True)
class Generation:
    """(generationId, memberId, protocolName); NO_GENERATION = (-1, "", None)."""

    generation_id: int
    member_id: str
    protocol_name: Optional[str]

    @property
    def is_reset(self) -> bool:
        return self.generation_id == -1 or self.member_id == ""


NO_GENERATION = Generation(-1, "", None)


class FatalMemberError(KafkaGroupError, RuntimeError):
    """The coordinator answered with an error Kafka's consumer treats as fatal; ``code`` is the error."""

    def __init__(self, code: ErrorCode, api: str, member: str) -> None:
        self.code = ErrorCode(code)
        self.api = api
        super().__init__(f"member {member!r}: {api} failed with {self.code.name} ({int(self.code)}), fatal")


class UnexpectedCoordinatorError(KafkaGroupError, RuntimeError):
    """Kafka's ``KafkaException("Unexpected error in join group response ...")``: a JoinGroup/SyncGroup error the
    consumer has no specific reaction for (e.g. UNKNOWN_SERVER_ERROR after a failed group-metadata write, §2.9).
    Raised once from :meth:`GroupMember.poll`; not fatal: the member rejoins after ``retry.backoff.ms``."""

    def __init__(self, code: ErrorCode, api: str, member: str) -> None:
        self.code = ErrorCode(code)
        self.api = api
        super().__init__(
            f"member {member!r}: unexpected error in {api} response: {self.code.name} ({int(self.code)}); "
            f"the member rejoins"
        )


class CommitFailedError(KafkaGroupError, RuntimeError):
    """Kafka's CommitFailedException: the member is no longer part of the generation it committed for."""


class RebalanceInProgressError(KafkaGroupError, RuntimeError):
    """Kafka's RebalanceInProgressException for a commit: rejoin, then commit again."""


class OffsetCommitError(KafkaGroupError, RuntimeError):
    """An OffsetCommit error other than the group-membership ones: ``code`` is the error; ``retriable`` says
    whether it was a retriable error that kept failing until the commit's timeout (Kafka's TimeoutException
    of commitSync) or one that is raised to the user at once (OFFSET_METADATA_TOO_LARGE,
    INVALID_COMMIT_OFFSET_SIZE, authorization failures, "Unexpected error in commit")."""

    def __init__(self, code: ErrorCode, member: str, *, retriable: bool = False) -> None:
        self.code = ErrorCode(code)
        self.retriable = retriable
        what = "kept failing until the commit timed out" if retriable else "is not retriable"
        super().__init__(f"member {member!r}: offset commit failed with {self.code.name} ({int(self.code)}), {what}")


def subscribed_topics(topics: Iterable[str]) -> frozenset[str]:
    """The topics of a ``subscribe(topics)`` call, checked as Java's ``KafkaConsumer.subscribe`` does (no null or
    blank topic: IllegalArgumentException) and for what a ConsumerProtocolSubscription can carry (a Kafka STRING:
    UTF-8-encodable, at most 32,767 bytes).  Names Kafka's ``Topic.validate`` would refuse (characters outside
    [a-zA-Z0-9._-], over 249 characters) are accepted, as Java's subscribe accepts them: such a topic simply
    never appears in the metadata, so it gets no partitions."""
    if isinstance(topics, (str, bytes)):
        raise InvalidGroupError(f"subscribe takes a collection of topic names, got the single {type(topics).__name__} "
                                f"{topics[:60]!r}")
    chosen = frozenset(topics)
    for topic in chosen:
        if not isinstance(topic, str) or not topic.strip():
            raise InvalidGroupError(f"Topic collection to subscribe to cannot contain null or empty topic: {topic!r}")
        problem = string_problem(topic)
        if problem is not None:
            shown = repr(topic) if len(topic) <= 60 else f"{topic[:40]!r}...({len(topic)} chars)"
            raise InvalidGroupError(f"cannot subscribe to topic {shown}: the name {problem}")
    return chosen


class GroupMember:
    """One consumer-group member (see the module docstring).

    ``coordinator`` is an in-process coordinator (wrapped in :class:`InProcessTransport`) or any
    :class:`~kafkagroup.client.transport.GroupTransport`.  ``config`` takes Kafka keys
    (``"group.id"``, ``"partition.assignment.strategy"``, ``"group.instance.id"``, ``"session.timeout.ms"``,
    ``"heartbeat.interval.ms"``, ``"max.poll.interval.ms"``, ``"client.rack"``, ...); the same keys are
    accepted as underscore keyword arguments.  Subscribe with ``topics=[...]`` or ``pattern=...``.

    Observable state: :attr:`state`, :attr:`generation`, :attr:`assignment` (owned partitions),
    :attr:`is_leader`, :attr:`rebalance_protocol`, :attr:`fatal_error`, :attr:`errors`; counters in
    :attr:`stats`.  ``name`` only labels the member in messages and reports.
    """

    def __init__(
        self,
        coordinator: Any,
        *,
        clock: Clock,
        cluster: ClusterMetadata,
        topics: Optional[Iterable[str]] = None,
        pattern: Optional[str | re.Pattern[str]] = None,
        config: Optional[MemberConfig | Mapping[str, Any]] = None,
        listener: Optional[object] = None,
        on_assign: Optional[PartitionsCallback] = None,
        on_revoke: Optional[PartitionsCallback] = None,
        on_lost: Optional[PartitionsCallback] = None,
        auto_poll: bool = True,
        poll_delay_ms: int = 0,
        network_latency_ms: int = 0,
        name: Optional[str] = None,
        **kafka_config: Any,
    ) -> None:
        if isinstance(config, MemberConfig):
            if kafka_config:
                config = config.with_changes(**{k.replace(".", "_"): v for k, v in kafka_config.items()})
            self.config: MemberConfig = config
        else:
            self.config = MemberConfig.from_kafka(config, **kafka_config)
        cfg = self.config
        self.clock = clock
        self.cluster = cluster
        # a coordinator (it has the request API incl. partition_for) is wrapped; anything else is a transport
        self.transport: GroupTransport = (
            InProcessTransport(coordinator, clock, network_latency_ms)
            if hasattr(coordinator, "partition_for") else coordinator
        )
        self.name = name or cfg.group_instance_id or f"{cfg.client_id}@{id(self):x}"
        self.callbacks = CallbackSet(listener, on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
        self.rebalance_protocol: RebalanceProtocol = cfg.rebalance_protocol
        self.assignors = list(cfg.partition_assignment_strategy)
        self._assignor_state = {
            n: AssignorState(n, None if isinstance(a, str) else a)
            for n, a in zip(cfg.assignor_names, self.assignors)
        }
        self.auto_poll = auto_poll
        self.poll_delay_ms = int(poll_delay_ms)

        # -- group state (AbstractCoordinator) ------------------------------------------------------
        self.state = MemberState.UNJOINED
        self.generation = NO_GENERATION
        self.is_leader = False
        self._rejoin_needed = True
        self._needs_join_prepare = True
        self._join_blocked = False                   # the JoinGroup metadata failed to encode: wait for a change
        self._round: Optional[object] = None        # token of the join+sync round in flight
        self._round_generation: Optional[Generation] = None
        self._heartbeat_inflight: Optional[object] = None

        # -- subscription / assignment state (ConsumerCoordinator + SubscriptionState) ---------------
        self._pattern = re.compile(pattern) if isinstance(pattern, str) else pattern
        if topics is not None and pattern is not None:
            raise ValueError("subscribe with topics or with a pattern, not both")
        self._metadata: MetadataSnapshot = cluster.snapshot()
        self.subscription: frozenset[str] = subscribed_topics(topics) if topics is not None else frozenset()
        if self._pattern is not None:
            self.subscription = self._metadata.matching(self._pattern)
        self.joined_subscription: Optional[frozenset[str]] = None
        self.assignment: frozenset[TopicPartition] = frozenset()
        self.assignment_snapshot: Optional[tuple] = None   # leader: metadata the assignment was computed on
        self._group_subscription: Optional[frozenset[str]] = None  # leader: every member's topics
        self.last_leader_assignment: Optional[LeaderAssignment] = None

        # -- lifecycle / errors ---------------------------------------------------------------------
        self.started = False
        self.closed = False
        self.crashed = False
        self.stalled = False
        self.fatal_error: Optional[FatalMemberError] = None
        self.errors: list[BaseException] = []          # every error raised to "the application", in order
        self._pending_error: Optional[BaseException] = None
        self._last_poll_ms = clock.now_ms()
        self._timers: dict[str, TimerHandle] = {}
        self.stats = {
            "joins_sent": 0, "syncs_sent": 0, "heartbeats_sent": 0, "rebalances": 0,
            "assigned_callbacks": 0, "revoked_callbacks": 0, "lost_callbacks": 0,
            "partitions_assigned": 0, "partitions_revoked": 0, "partitions_lost": 0,
        }
        #: (time, generation id) of every completed rebalance of this member
        self.generation_history: list[tuple[int, int]] = []
        #: optional hook called as observer(member, event, detail) on state changes (simulator)
        self.observer: Optional[Callable[["GroupMember", str, Any], None]] = None

    # =============================================================================== application API
    @property
    def member_id(self) -> str:
        return self.generation.member_id

    @property
    def group_id(self) -> str:
        return self.config.group_id

    @property
    def group_instance_id(self) -> Optional[str]:
        return self.config.group_instance_id

    def start(self) -> None:
        """Begin taking part in the group (the consumer's first ``poll``)."""
        if self.closed or self.crashed:
            raise RuntimeError(f"member {self.name!r} was closed; create a new member to rejoin")
        if self.started:
            return
        self.started = True
        self._last_poll_ms = self.clock.now_ms()
        self._arm("metadata", self.config.metadata_max_age_ms, self._metadata_tick)
        self._arm_poll_timer()
        self._schedule_poll(0)

    def poll(self) -> None:
        """The application's poll: resets max.poll.interval, joins if needed; raises a pending error."""
        if not self.started:
            self.start()
        self._last_poll_ms = self.clock.now_ms()
        self._arm_poll_timer()
        self._join_blocked = False   # an explicit poll tries a failed JoinGroup encoding again (Java's next poll)
        self._poll_once()
        self._raise_pending()

    def subscribe(self, topics: Optional[Iterable[str]] = None, *, pattern: Optional[str] = None) -> None:
        """Change the subscription; a different set of topics makes the member rejoin (§6.8)."""
        if (topics is None) == (pattern is None):
            raise ValueError("subscribe with exactly one of topics / pattern")
        chosen = subscribed_topics(topics) if topics is not None else frozenset()
        self._pattern = re.compile(pattern) if pattern is not None else None
        self.subscription = self._metadata.matching(self._pattern) if self._pattern is not None else chosen
        self._join_blocked = False
        if self.started:
            self._schedule_poll()

    def request_rejoin(self) -> None:
        """Ask for a rebalance at the next poll (Kafka's ``requestRejoin``; e.g. to pick up a changed assignor)."""
        self._join_blocked = False
        self._request_rejoin()

    def stall(self) -> None:
        """The application stops polling (stuck processing); after max.poll.interval.ms the member leaves."""
        self.stalled = True
        self._cancel("poll_now")
        self._arm_poll_timer()

    def resume(self) -> None:
        """The application polls again (rejoins if it had left on poll timeout)."""
        self.stalled = False
        self._last_poll_ms = self.clock.now_ms()
        self._arm_poll_timer()
        self._schedule_poll(0)

    def refresh_metadata(self) -> None:
        """Take a fresh metadata snapshot now (otherwise taken every metadata.max.age.ms)."""
        previous, self._metadata = self._metadata, self.cluster.snapshot()
        if self._metadata.version != previous.version:
            self._join_blocked = False
        if self._pattern is not None:
            self.subscription = self._metadata.matching(self._pattern)
        if self._rejoin_needed_or_pending() and self._round is None:
            self._schedule_poll()

    def commit_offsets(
        self,
        offsets: Mapping[TopicPartition, int],
        callback: Optional[Callable[[Optional[BaseException]], None]] = None,
        *,
        timeout_ms: Optional[int] = None,
    ) -> None:
        """OffsetCommit for the current generation; ``callback(error or None)`` gets the outcome (§6.9).

        Like Kafka's ``commitSync``: retriable errors (14, 3, and 15/16/7 after which Kafka rediscovers the
        coordinator) are retried every ``retry.backoff.ms`` until ``timeout_ms`` (default
        ``default.api.timeout.ms``) has passed, then reported as a retriable :class:`OffsetCommitError`.
        Each retry checks the membership again, so a rebalance started meanwhile ends the commit with
        :class:`RebalanceInProgressError`.  Group errors: 27 -> :class:`RebalanceInProgressError` (rejoin
        requested), 25/22 -> :class:`CommitFailedError` (generation reset), 82 -> :class:`FatalMemberError`;
        12/28/29/30 and unexpected codes -> :class:`OffsetCommitError` at once.
        """
        timeout = self.config.default_api_timeout_ms if timeout_ms is None else int(timeout_ms)
        self._send_commit(dict(offsets), callback, self.clock.now_ms() + timeout)

    def _send_commit(
        self, offsets: dict[TopicPartition, int],
        callback: Optional[Callable[[Optional[BaseException]], None]], deadline_ms: int,
    ) -> None:
        if self.state is not MemberState.STABLE or self.generation.is_reset or not self.alive:
            err: BaseException = (
                RebalanceInProgressError(f"member {self.name!r}: commit during a rebalance")
                if self.state in (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE)
                else CommitFailedError(f"member {self.name!r}: not part of an active generation")
            )
            if callback:
                callback(err)
            return
        sent = self.generation
        req = OffsetCommitRequest.of(
            self.group_id, offsets, generation_id=sent.generation_id, member_id=sent.member_id,
            group_instance_id=self.group_instance_id,
        )
        self.transport.offset_commit(req, lambda r: self._handle_commit(sent, r, offsets, callback, deadline_ms))

    def unsubscribe(self) -> None:
        """Give up the assignment and leave the group (dynamic members send LeaveGroup, static ones do not)."""
        self._on_leave_prepare()
        self._maybe_leave_group("the consumer unsubscribed from all topics")
        self.subscription = frozenset()
        self._pattern = None

    def close(self) -> None:
        """Leave cleanly (onLeavePrepare + LeaveGroup for dynamic members) and stop every timer."""
        if self.closed or self.crashed:
            return
        self._on_leave_prepare()
        self._maybe_leave_group("the consumer is being closed")
        self._stop()
        self.closed = True
        self._notify("closed", None)

    def crash(self) -> None:
        """The process dies: nothing is sent, no callback runs; the coordinator notices by session expiry."""
        if self.closed or self.crashed:
            return
        self._stop()
        self.crashed = True
        self._notify("crashed", self.assignment)

    @property
    def rejoin_pending(self) -> bool:
        """A rejoin is requested or in flight (Kafka's ``rejoinNeededOrPending``, §6.8)."""
        return self._rejoin_needed_or_pending()

    @property
    def alive(self) -> bool:
        return self.started and not (self.closed or self.crashed or self.fatal_error is not None)

    # ============================================================================== the join round
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
                    name,
                    build_subscription_bytes(
                        self._assignor_state[name], self.subscription, self.assignment,
                        self.generation.generation_id, self.config.client_rack,
                    ),
                )
                for name in self.config.assignor_names
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
        self._arm(
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
            self._arm("heartbeat", self.config.heartbeat_interval_ms, self._heartbeat_tick)
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
                topics.update(parse_member_subscription(resp.protocol_name or "", m.member_id,
                                                        m.group_instance_id, m.metadata).topics)
            self._group_subscription = frozenset(topics)
            self.assignment_snapshot = self._leader_metadata_key()
            return {}
        protocol = resp.protocol_name
        assignor = next(
            (a for a, n in zip(self.assignors, self.config.assignor_names) if n == protocol), None
        )
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
            self.state = MemberState.STABLE
            self._rejoin_needed = False
            self._round = None
            self._cancel("request_timeout")
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
            assigned = frozenset(parse_assignment(assignment_bytes, gen.member_id))
        except ProtocolError as exc:
            self._surface_error(exc)
            self._request_rejoin()
            return
        if topics_outside_subscription(assigned, self.subscription):
            # the subscription changed since the JoinGroup: the assignment is outdated
            self._request_rejoin()
            return
        delta = assignment_delta(self.assignment, assigned)
        errs = FirstError()
        if self.rebalance_protocol is RebalanceProtocol.COOPERATIVE and delta.revoked:
            self._invoke("revoked", delta.revoked, errs)
            self._request_rejoin()   # "need to revoke partitions and re-join"
        state = self._assignor_state.get(gen.protocol_name or "")
        if state is not None:
            try:   # invokeOnAssignment: a plug-in's error is kept like a callback's, the remaining steps still run
                state.on_assignment(sorted(assigned, key=lambda tp: (tp.topic, tp.partition)), gen.generation_id)
            except Exception as exc:  # noqa: BLE001 - user code
                errs.keep(exc)
        self.assignment = assigned
        self._invoke("assigned", delta.added, errs)  # invoked even when empty
        self._surface(errs)

    def _fail_round(self, retry_after_ms: int = 0) -> None:
        """End the join round; rejoin at once or after a backoff (Kafka's joinGroupIfNeeded loop)."""
        self._round = None
        self._cancel("request_timeout")
        self._rejoin_needed = True
        if self.state is not MemberState.UNJOINED and self.generation.is_reset:
            self.state = MemberState.UNJOINED
            self._notify("state", self.state)
        if retry_after_ms > 0:
            self._arm("backoff", retry_after_ms, self._after_backoff)
        else:
            self._schedule_poll(0)   # Kafka's join loop retries within the same poll()

    def _unexpected_error(self, code: ErrorCode, api: str) -> None:
        """§6.9 "other -> KafkaException": raised from the next poll(); the rejoin flag stays set and the member
        joins again after retry.backoff.ms (Kafka's join loop rethrows it; the application's next poll rejoins)."""
        self._surface_error(UnexpectedCoordinatorError(code, api, self.name))
        self._fail_round(retry_after_ms=self.config.retry_backoff_ms)

    def _after_backoff(self) -> None:
        self._timers.pop("backoff", None)
        self._schedule_poll(0)

    # ================================================================================ heartbeats
    def _heartbeat_tick(self) -> None:
        self._timers.pop("heartbeat", None)
        if not self.alive or self.state not in (MemberState.COMPLETING_REBALANCE, MemberState.STABLE):
            return   # heartbeats stop while unjoined or parked in JoinGroup
        if self._heartbeat_inflight is not None:
            self._arm("heartbeat", self.config.heartbeat_interval_ms, self._heartbeat_tick)
            return
        sent = self.generation
        token = object()
        self._heartbeat_inflight = token
        req = HeartbeatRequest(self.group_id, sent.generation_id, sent.member_id, self.group_instance_id)
        self.stats["heartbeats_sent"] += 1
        self.transport.heartbeat(req, lambda r: self._on_heartbeat_response(token, sent, r))
        self._arm("heartbeat", self.config.heartbeat_interval_ms, self._heartbeat_tick)

    def _on_heartbeat_response(self, token: object, sent: Generation, resp: HeartbeatResponse) -> None:
        if token is self._heartbeat_inflight:
            self._heartbeat_inflight = None
        if not self.alive:
            return
        err = ErrorCode(resp.error_code)
        if err is _E.NONE:
            return
        if err is _E.REBALANCE_IN_PROGRESS:
            if self.state is MemberState.STABLE:
                self._request_rejoin()
            return
        if err in (_E.ILLEGAL_GENERATION, _E.UNKNOWN_MEMBER_ID, _E.FENCED_INSTANCE_ID):
            if self.generation != sent:
                return   # answer for an older generation: ignore
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
        # coordinator errors: Kafka marks the coordinator unknown and rediscovers it; in-process it stays known

    # =============================================================================== offset commit
    def _handle_commit(
        self, sent: Generation, resp: OffsetCommitResponse, offsets: dict[TopicPartition, int],
        callback: Optional[Callable[[Optional[BaseException]], None]], deadline_ms: int,
    ) -> None:
        """``OffsetCommitResponseHandler``.  Kafka stops at the first failed partition in response order; here
        the errors of all partitions are ranked instead: membership errors, then errors raised to the user,
        then unexpected ones, then retriable ones, then TOPIC_AUTHORIZATION_FAILED (Kafka collects that one
        and raises it only if nothing else failed)."""
        errors = set(resp.errors().values()) - {_E.NONE}
        outcome: Optional[BaseException] = None
        if _E.GROUP_AUTHORIZATION_FAILED in errors:
            outcome = OffsetCommitError(_E.GROUP_AUTHORIZATION_FAILED, self.name)
        elif _E.REBALANCE_IN_PROGRESS in errors:
            self._request_rejoin()
            outcome = RebalanceInProgressError(f"member {self.name!r}: commit rejected, the group is rebalancing")
        elif errors & {_E.UNKNOWN_MEMBER_ID, _E.ILLEGAL_GENERATION}:
            if self.generation != sent and self.state is MemberState.PREPARING_REBALANCE:
                outcome = RebalanceInProgressError(f"member {self.name!r}: generation changed during the commit")
            else:
                self._reset_generation(reset_member_id=_E.UNKNOWN_MEMBER_ID in errors)
                self._request_rejoin()
                outcome = CommitFailedError(
                    f"member {self.name!r}: commit failed, the member is no longer part of generation "
                    f"{sent.generation_id}"
                )
        elif _E.FENCED_INSTANCE_ID in errors:
            if self.generation == sent:
                self._fatal(_E.FENCED_INSTANCE_ID, "OffsetCommit")
                outcome = self.fatal_error
            elif self.state is MemberState.PREPARING_REBALANCE:
                outcome = RebalanceInProgressError(f"member {self.name!r}: the commit's old generation was fenced")
            else:
                outcome = CommitFailedError(f"member {self.name!r}: fenced by another instance")
        elif errors - _COMMIT_RETRIABLE - {_E.TOPIC_AUTHORIZATION_FAILED}:
            surfaced = errors & _COMMIT_SURFACED
            code = min(surfaced) if surfaced else min(errors - _COMMIT_RETRIABLE - {_E.TOPIC_AUTHORIZATION_FAILED})
            outcome = OffsetCommitError(code, self.name)
        elif errors & _COMMIT_RETRIABLE:
            code = min(errors & _COMMIT_RETRIABLE)
            if self.clock.now_ms() + self.config.retry_backoff_ms < deadline_ms:
                self.clock.call_at(self.clock.now_ms() + self.config.retry_backoff_ms,
                                   lambda: self._send_commit(offsets, callback, deadline_ms))
                return
            outcome = OffsetCommitError(code, self.name, retriable=True)
        elif errors:
            outcome = OffsetCommitError(_E.TOPIC_AUTHORIZATION_FAILED, self.name)
        if callback:
            callback(outcome)

    # ================================================================================= leaving
    def _on_leave_prepare(self) -> None:
        """§6.10: lost if the generation is reset or a rebalance is in progress, revoked otherwise."""
        dropped = self.assignment
        if not dropped:
            return
        errs = FirstError()
        if self.generation.is_reset or self.state in (
            MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE
        ):
            self._invoke("lost", dropped, errs)
        else:
            self._invoke("revoked", dropped, errs)
        self.assignment = frozenset()
        self._surface(errs)

    def _maybe_leave_group(self, reason: str) -> None:
        """Dynamic members send LeaveGroup (static ones never do, KIP-345); both reset their generation."""
        gen = self.generation
        if (
            self.group_instance_id is None
            and self.state is not MemberState.UNJOINED
            and gen.member_id
            and self.alive
        ):
            req = LeaveGroupRequest(self.group_id, [MemberIdentity(gen.member_id, None, reason)])
            self.transport.leave_group(req, self._on_leave_response)
        self._reset_generation(reset_member_id=True)
        self._abandon_round()
        self._rejoin_needed = True

    def _on_leave_response(self, resp: LeaveGroupResponse) -> None:
        # nothing depends on it (Kafka only logs); kept for observers
        self._notify("left", resp)

    # ============================================================================ timers & helpers
    def _arm_poll_timer(self) -> None:
        """max.poll.interval.ms watch: only an application that polls explicitly or has stalled can be late
        (an auto-polling member polls at every event)."""
        if not self.alive or (self.auto_poll and not self.stalled):
            self._cancel("poll")
            return
        self._arm_at("poll", self._last_poll_ms + self.config.max_poll_interval_ms, self._poll_timeout)

    def _poll_timeout(self) -> None:
        self._timers.pop("poll", None)
        if not self.alive or self.state is MemberState.UNJOINED:
            return
        # Kafka's heartbeat thread: "consumer poll timeout has expired" -> leave the group
        self._cancel("heartbeat")
        self._maybe_leave_group("consumer poll timeout has expired")
        self.state = MemberState.UNJOINED
        self._notify("state", self.state)

    def _metadata_tick(self) -> None:
        self._timers.pop("metadata", None)
        if not self.alive:
            return
        self.refresh_metadata()
        self._arm("metadata", self.config.metadata_max_age_ms, self._metadata_tick)

    def _schedule_poll(self, delay_ms: Optional[int] = None) -> None:
        if not self.alive or self.stalled or not self.auto_poll:
            return
        if "poll_now" in self._timers:
            return
        delay = self.poll_delay_ms if delay_ms is None else delay_ms
        self._arm("poll_now", delay, self._auto_poll)

    def _auto_poll(self) -> None:
        self._timers.pop("poll_now", None)
        if not self.alive or self.stalled:
            return
        self._last_poll_ms = self.clock.now_ms()
        self._poll_once()

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
        self._cancel("request_timeout")

    def _fatal(self, code: ErrorCode, api: str) -> None:
        """Stop for good.  State and generation stay as the failed request left them, as in Java: after a fatal
        JoinGroup/SyncGroup the rebalance is still in progress, so the application's close() (onLeavePrepare)
        reports the owned partitions lost -- another member may own them already -- rather than revoked."""
        err = FatalMemberError(code, api, self.name)
        self.fatal_error = err
        self.errors.append(err)
        self._pending_error = self._pending_error or err
        self._round = None
        self._stop()
        self._notify("fatal", err)

    def _stop(self) -> None:
        for handle in self._timers.values():
            handle.cancel()
        self._timers.clear()
        self._round = None
        self._heartbeat_inflight = None

    def _arm(self, key: str, delay_ms: int, fn: Callable[[], None]) -> None:
        self._arm_at(key, self.clock.now_ms() + int(delay_ms), fn)

    def _arm_at(self, key: str, deadline_ms: int, fn: Callable[[], None]) -> None:
        old = self._timers.pop(key, None)
        if old is not None:
            old.cancel()
        self._timers[key] = self.clock.call_at(deadline_ms, fn)

    def _cancel(self, key: str) -> None:
        old = self._timers.pop(key, None)
        if old is not None:
            old.cancel()

    def _invoke(self, kind: str, partitions: frozenset[TopicPartition], errs: FirstError) -> None:
        fn = {"assigned": self.callbacks.on_assign, "revoked": self.callbacks.on_revoke,
              "lost": self.callbacks.on_lost}[kind]
        self.stats[f"{kind}_callbacks"] += 1
        self.stats[f"partitions_{kind}"] += len(partitions)
        self._notify(kind, partitions)
        errs.call(fn, partitions)

    def _surface(self, errs: FirstError) -> None:
        exc = errs.wrapped()
        if exc is not None:
            self._surface_error(exc)

    def _surface_error(self, exc: BaseException) -> None:
        self.errors.append(exc)
        if self._pending_error is None:
            self._pending_error = exc
        self._notify("error", exc)

    def _raise_pending(self) -> None:
        exc, self._pending_error = self._pending_error, None
        if exc is not None:
            raise exc

    def _notify(self, event: str, detail: Any) -> None:
        if self.observer is not None:
            self.observer(self, event, detail)

    def __repr__(self) -> str:
        return (
            f"GroupMember({self.name!r}, {self.state.value}, gen={self.generation.generation_id}, "
            f"id={self.generation.member_id!r}, owns={len(self.assignment)})"
        )
