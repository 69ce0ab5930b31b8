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

Its parts, one concern per module (each a mixin working on the member's state):

* :mod:`.join_round` -- JoinGroup / leader assignment / SyncGroup and their error reactions [§6.2-§6.9];
* :mod:`.heartbeat` -- heartbeats and their error reactions [§6.9];
* :mod:`.session_guard` -- partitions are owned only while an answer proves the session (lost otherwise);
* :mod:`.offset_commit` -- ``commit_offsets`` (commitSync's retries and outcomes) [§6.9];
* :mod:`.poll_loop` -- automatic polls, the ``max.poll.interval.ms`` watch, the metadata refresh;
* :mod:`.timers` -- the named timers all of these arm on the injected clock;
* this module -- construction, the application-facing API, leaving the group (lost vs revoked) [§6.10], and
  how errors reach the application.

Application-facing behaviour: by default the member behaves as an application that polls continuously
(``auto_poll=True``): a requested rejoin starts ``poll_delay_ms`` later.  An application whose polls follow
their own timeline passes ``next_poll_ms``: a function returning the milliseconds until the application's next
``poll()`` (0: it is inside ``poll()`` now), asked each time the member needs a poll -- to rejoin, to retry, or
after a start or resume -- instead of ``poll_delay_ms`` (the simulator's poll loop, :mod:`kafkagroup.sim.app`,
is one).  :meth:`stall` stops polling (a
stuck consumer: after ``max.poll.interval.ms`` the member leaves the group, as Kafka's heartbeat thread
does, and reports its partitions lost), :meth:`poll` is the explicit poll: it raises, once, the first error since the last poll -- a rebalance
callback's or assignor plug-in's error, an :class:`UnexpectedCoordinatorError` (a JoinGroup/SyncGroup error
without a specific reaction; the member rejoins after ``retry.backoff.ms``), or a :class:`FatalMemberError`
(only 82/23/26/24/30/81; the member stops and reports its partitions lost at once).  Every such error is also kept in :attr:`GroupMember.errors`.

Values Kafka's wire format cannot carry never reach the coordinator: :class:`MemberConfig` refuses them at
construction, ``topics=`` / :meth:`GroupMember.subscribe` refuse a topic that is not a string, blank (Java's
``subscribe``: "cannot contain null or empty topic"), not UTF-8-encodable or over 32,767 bytes.  Should the
JoinGroup metadata still fail to encode, nothing is sent and the error is raised from :meth:`GroupMember.poll`
(see :mod:`.join_round`).
"""
from __future__ import annotations

import re
from typing import Any, Callable, Iterable, Mapping, Optional

from kafkagroup.client.cluster import ClusterMetadata, MetadataSnapshot
from kafkagroup.client.config import MemberConfig
from kafkagroup.client.errors import (
    CommitFailedError,
    FatalMemberError,
    OffsetCommitError,
    RebalanceInProgressError,
    UnexpectedCoordinatorError,
)
from kafkagroup.client.generation import NO_GENERATION, Generation, MemberState
from kafkagroup.client.heartbeat import HeartbeatMixin
from kafkagroup.client.join_round import JOIN_GROUP_TIMEOUT_LAPSE_MS, PROTOCOL_TYPE, JoinRoundMixin
from kafkagroup.client.leader import LeaderAssignment
from kafkagroup.client.listener import CallbackSet, FirstError, PartitionsCallback
from kafkagroup.client.offset_commit import OffsetCommitMixin
from kafkagroup.client.poll_loop import PollLoopMixin
from kafkagroup.client.rebalance_protocol import RebalanceProtocol, select_rebalance_protocol
from kafkagroup.client.session_guard import SessionGuardMixin
from kafkagroup.client.subscription import subscribed_topics
from kafkagroup.client.timers import TimerSet
from kafkagroup.client.transport import GroupTransport, InProcessTransport
from kafkagroup.assignors.configured import as_assignor
from kafkagroup.messages.api import LeaveGroupRequest, LeaveGroupResponse, MemberIdentity
from kafkagroup.messages.clock import Clock
from kafkagroup.messages.error_codes import ErrorCode
from kafkagroup.structs import TopicPartition

# The names below GroupMember were defined here before the split; they stay importable from this module.
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
    "JOIN_GROUP_TIMEOUT_LAPSE_MS",
    "subscribed_topics",
]


class GroupMember(JoinRoundMixin, HeartbeatMixin, SessionGuardMixin, OffsetCommitMixin, PollLoopMixin):
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
        next_poll_ms: Optional[Callable[[], int]] = None,
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
        # the assignor objects, one per configured strategy, built once here: each keeps its own state between
        # rebalances (the sticky assignors' last assignment and generation, as Java's onAssignment keeps it), and
        # the rebalance protocol is the highest they all support (Java's ConsumerCoordinator constructor)
        self.assignors = [as_assignor(a) for a in cfg.partition_assignment_strategy]
        self.rebalance_protocol: RebalanceProtocol = select_rebalance_protocol(self.assignors)
        self._assignor_by_name = {a.name: a for a in self.assignors}
        self.auto_poll = auto_poll
        self.poll_delay_ms = int(poll_delay_ms)
        #: when the application polls next (ms from now), if it decides that rather than ``poll_delay_ms``
        self.next_poll_ms: Optional[Callable[[], int]] = next_poll_ms

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
        self._join_sent_ms = 0                        # send time of the JoinGroup in flight
        self._join_proves = False                     # session_guard: its NONE answer proves a restarted session
        self._last_join_key: tuple[str, int] = ("", -1)   # (member id, generation) of the last JoinGroup sent
        self._sync_sent_ms = 0                        # send time of the SyncGroup in flight
        self._session_proof_ms = clock.now_ms()       # session_guard's R (only read while partitions are owned)
        self._session_check_at = 0                    # the deadline the session check is armed at

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
        self._timers = TimerSet(clock)
        self.stats = {
            "joins_sent": 0, "syncs_sent": 0, "heartbeats_sent": 0, "rebalances": 0,
            "assigned_callbacks": 0, "revoked_callbacks": 0, "lost_callbacks": 0,
            "partitions_assigned": 0, "partitions_revoked": 0, "partitions_lost": 0, "session_lapses": 0,
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
        self._timers.arm("metadata", self.config.metadata_max_age_ms, self._metadata_tick)
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
        self._timers.cancel("poll_now")
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

    def _lose_all(self) -> None:
        """The member is (or may be) no longer a member: every owned partition is reported lost now."""
        if not self.assignment:
            return
        errs = FirstError()
        lost, self.assignment = self.assignment, frozenset()
        self._invoke("lost", lost, errs)
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

    # ======================================================================= lifecycle & errors
    def _fatal(self, code: ErrorCode, api: str) -> None:
        """Stop for good, and stop owning at once: the owned partitions are reported lost now, not at close().
        A fenced instance id (82) is another process's, which may own the partitions already; after any other
        fatal error the member sends nothing more, so its session lapses and the coordinator hands its partitions
        on -- the member cannot keep them safely (see :mod:`.session_guard`).  Java leaves them owned until the
        application closes the consumer (onLeavePrepare reports them lost then, or revoked after a fenced
        OffsetCommit in a stable generation, where committing from the callback would be fenced too).  State
        and generation stay as the failed request left them, as in Java."""
        err = FatalMemberError(code, api, self.name)
        self.fatal_error = err
        self.errors.append(err)
        self._pending_error = self._pending_error or err
        self._round = None
        self._stop()
        self._notify("fatal", err)
        self._lose_all()

    def _stop(self) -> None:
        self._timers.cancel_all()
        self._round = None
        self._heartbeat_inflight = None

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
