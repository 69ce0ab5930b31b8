"""The classic group coordinator: request entry points, the coordinator gate, partition load/unload.

Design (one thread, injected time, synchronous durable writes):

* Every request enters here and is first checked against what Kafka's wire format can carry
  (:mod:`~kafkagroup.coordinator.request_limits`: an int outside its int16/32/64 field, a string that is not
  UTF-8 or over 32,767 bytes -> INVALID_REQUEST (42) for the whole request, nothing read or written).  It
  then passes the gate of spec §2.1 (invalid group id 24 -> inactive 15 -> partition loading 14 -> partition
  not owned 16, the Scala order; SyncGroup turns 14 into 27, Heartbeat into 0) and is handed to
  :class:`~kafkagroup.coordinator.membership.MembershipHandlers`,
  :class:`~kafkagroup.coordinator.offsets.OffsetHandlers` or (TxnOffsetCommit and transaction markers)
  :class:`~kafkagroup.coordinator.offsets_txn.TxnOffsetHandlers`.  Errors are answered with Kafka's codes; an
  internal ``IllegalStateException`` (:class:`IllegalGroupStateError`) becomes UNKNOWN_SERVER_ERROR (-1),
  as Kafka's request handler does.
* JoinGroup and SyncGroup return a :class:`~kafkagroup.messages.deferred.Deferred`: done at once, or
  later when the join phase completes / the leader's assignment is stored.  Everything else returns its
  response directly.  Timers run on the injected :class:`~kafkagroup.messages.clock.Clock`:
  :class:`ManualClock` in tests and simulations (``clock.advance(ms)``), :class:`AsyncioClock` live
  (see :mod:`kafkagroup.coordinator.aio`).  Calls and timer callbacks must come from one thread.
* State is written to a :class:`~kafkagroup.coordinator.store.GroupStore` (SQLite) where Kafka appends to
  ``__consumer_offsets``; a coordinator constructed on the same file loads every group and acknowledged
  offset of the partitions it owns (§2.10): groups with members come back Stable, others Empty, sessions
  restart at load time.  ``store`` is required: a file path (or an open ``GroupStore``) for a coordinator
  whose acknowledged commits must survive a restart, ``":memory:"`` -- asked for explicitly -- for tests and
  simulations, where everything is lost with the process.

Example (one member, two-step join, initial delay 50 ms)::

    >>> from kafkagroup.coordinator import ManualClock, JoinGroupRequest, SyncGroupRequest
    >>> clock = ManualClock()
    >>> coord = GroupCoordinator({"group.initial.rebalance.delay.ms": 50}, clock=clock, store=":memory:")
    >>> ask = JoinGroupRequest("g", protocols=[("range", b"")], session_timeout_ms=10_000, client_id="C0")
    >>> first = coord.join_group(ask).result()
    >>> first.error_code.name, first.member_id.startswith("C0-")
    ('MEMBER_ID_REQUIRED', True)
    >>> ask.member_id = first.member_id
    >>> reply = coord.join_group(ask)
    >>> reply.done()
    False
    >>> clock.advance(50)
    >>> joined = reply.result()
    >>> joined.generation_id, joined.leader == first.member_id, str(coord.group("g").state)
    (1, True, 'CompletingRebalance')
    >>> synced = coord.sync_group(SyncGroupRequest("g", 1, first.member_id, assignments=[(first.member_id, b"x")]))
    >>> synced.result().assignment, str(coord.group("g").state)
    (b'x', 'Stable')
"""
from __future__ import annotations

import logging
from typing import Any, Callable, Iterable, Mapping, TypeVar

from kafkagroup.messages.clock import Clock
from kafkagroup.coordinator.config import CoordinatorConfig
from kafkagroup.messages.deferred import Deferred
from kafkagroup.messages.error_codes import ErrorCode
from kafkagroup.coordinator.errors import IllegalGroupStateError, StoreError, StoreWriteError, group_write_error
from kafkagroup.coordinator.consumer.group import ConsumerGroup
from kafkagroup.coordinator.consumer.classic_members import ClassicMemberHandlers
from kafkagroup.coordinator.consumer.heartbeat import ConsumerGroupHandlers
from kafkagroup.coordinator.migration import Migration
from kafkagroup.coordinator.consumer.offsets import (
    consumer_commit_error, consumer_fetch_error, consumer_txn_commit_error, describe_consumer_group, expired_offsets,
    list_entry,
)
from kafkagroup.coordinator.group import ClassicGroup, ClassicGroupMember, GroupState
from kafkagroup.coordinator.groups import GroupRegistry
from kafkagroup.coordinator.offset_state import GroupOffsets
from kafkagroup.messages.consumer_api import (
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse, DescribedConsumerGroup,
)
from kafkagroup.messages.topics import StaticTopics, TopicsView
from kafkagroup.coordinator.membership import MembershipHandlers
from kafkagroup.messages.api import (
    DeletableGroupResult, DeleteGroupsRequest, DeleteGroupsResponse, DescribedGroup, DescribedGroupMember,
    DescribeGroupsRequest, DescribeGroupsResponse, HeartbeatRequest, HeartbeatResponse, JoinGroupRequest,
    JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse, ListedGroup, ListGroupsRequest, ListGroupsResponse,
    OffsetCommitRequest, OffsetCommitResponse, OffsetDeleteRequest, OffsetDeleteResponse, OffsetFetchRequest,
    OffsetFetchResponse, SyncGroupRequest, SyncGroupResponse, TransactionResult, TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
)
from kafkagroup.coordinator.offsets import OffsetHandlers, uniform_commit_response, uniform_commit_topics
from kafkagroup.coordinator.offsets_txn import TxnOffsetHandlers
from kafkagroup.coordinator.partitioning import partition_for
from kafkagroup.coordinator import request_limits as limits
from kafkagroup.coordinator.rebalance import RebalanceEngine
from kafkagroup.coordinator.store import GroupRecord, GroupStore, MemberRecord
from kafkagroup.coordinator.consumer import records as consumer_records

__all__ = ["GroupCoordinator"]

log = logging.getLogger("kafkagroup.coordinator")
R = TypeVar("R")  # the response type a Deferred carries

_S = GroupState
_E = ErrorCode


def _refused(violation: str) -> ErrorCode:
    """Log a request Kafka's wire format cannot carry (see :mod:`~kafkagroup.coordinator.request_limits`)."""
    log.warning("%s: answered INVALID_REQUEST (42)", violation)
    return _E.INVALID_REQUEST


class GroupCoordinator:
    """Kafka's classic group coordinator for the offsets-topic partitions it owns (spec §1-§5).

    ``config``: a mapping with Kafka's keys, a :class:`CoordinatorConfig`, or None; underscore keyword
    arguments (``group_max_size=4``) are merged in.  ``store`` (required, no default): a :class:`GroupStore`,
    or a path that this coordinator opens and :meth:`shutdown` closes -- a file for commits that must survive
    a restart, ``":memory:"`` for tests and simulations (lost with the process).  ``owned_partitions``:
    the offsets-topic partitions this coordinator leads (default: all), loaded from the store at once.
    ``enable_offset_expiration``: run the retention task every ``offsets.retention.check.interval.ms``
    (Kafka's unit tests disable it, and so do the scenario tests).  ``topics``: the cluster's topics as
    consumer groups (KIP-848) need them (a :class:`~kafkagroup.messages.topics.TopicsView`; default: none).
    ``target_offload(job, done)``: runs a consumer group's target computation off the calling thread and calls
    ``done(result or exception)`` back on it (serve: a worker thread of the loop); None computes in the
    heartbeat.
    """

    def __init__(
        self,
        config: Mapping[str, Any] | CoordinatorConfig | None = None,
        *,
        clock: Clock,
        store: GroupStore | str,
        owned_partitions: Iterable[int] | None = None,
        enable_offset_expiration: bool = True,
        member_id_factory: Callable[[str], str] | None = None,
        topics: TopicsView | None = None,
        target_offload: Callable[[Callable[[], Any], Callable[[Any], None]], None] | None = None,
        **config_kwargs: Any,
    ) -> None:
        if isinstance(config, CoordinatorConfig):
            if config_kwargs:
                config = CoordinatorConfig.from_mapping(
                    {f: getattr(config, f) for f in config.__dataclass_fields__}, **config_kwargs)
        else:
            config = CoordinatorConfig.from_mapping(config, **config_kwargs)
        self.config: CoordinatorConfig = config
        self.clock = clock
        self._owns_store = not isinstance(store, GroupStore)
        self.store: GroupStore = GroupStore(store) if isinstance(store, str) else store
        self.groups: dict[str, ClassicGroup] = {}
        self._num_partitions = config.offsets_topic_num_partitions
        self._owned: set[int] = set()
        self._loading: set[int] = set()
        self._active = True
        self.engine = RebalanceEngine(clock, config, self._persist_group)
        self.membership = MembershipHandlers(config, self.engine, self.groups, self._create_group,
                                             member_id_factory)
        self.offsets = OffsetHandlers(clock, config, self.engine, self.store, self.groups, self._create_group,
                                      self.partition_for)
        # one group-id namespace: classic groups (self.groups, shared with the classic handlers) and
        # consumer groups (KIP-848), which need the cluster's topics to compute target assignments
        self.registry = GroupRegistry(self.groups, self._new_classic_group)
        self.txn = TxnOffsetHandlers(clock, config, self.store, self.groups, self._create_group, self.partition_for,
                                     self._offsets_of)
        self.topics: TopicsView = topics if topics is not None else StaticTopics()
        # consumer-group member ids have no client-id prefix (Kafka: a bare UUID); one factory serves both kinds
        # so that a simulation's ids are all deterministic
        consumer_ids = None if member_id_factory is None else (lambda: member_id_factory("member"))
        self.consumer = ConsumerGroupHandlers(config, self.engine.clock, self.topics, self.registry,
                                              member_id_factory=consumer_ids, offload=target_offload)
        self.consumer.on_change = self._persist_consumer_group
        # classic members inside consumer groups, and conversions between the kinds (mixed groups)
        self.classic_members = ClassicMemberHandlers(self.consumer)
        self.registry.migration = Migration(config, self.engine, self.consumer, self.topics)
        self._expiry_timer: Any = None
        partitions = range(self._num_partitions) if owned_partitions is None else owned_partitions
        for p in partitions:
            self.load_partition(p)
        if enable_offset_expiration:
            self._schedule_offset_expiration()

    # ====================================================================== lookup

    def partition_for(self, group_id: str) -> int:
        """The offsets-topic partition of ``group_id`` (§5)."""
        return partition_for(group_id, self._num_partitions)

    def group(self, group_id: str) -> ClassicGroup | None:
        """The in-memory group (for inspection; mutate only through requests)."""
        return self.groups.get(group_id)

    @property
    def owned_partitions(self) -> frozenset[int]:
        return frozenset(self._owned)

    @property
    def loading_partitions(self) -> frozenset[int]:
        return frozenset(self._loading)

    def _gate(self, group_id: str | None, *, allow_empty: bool) -> ErrorCode | None:
        """§2.1: 24, 15, 14, 16 in the Scala order; None when the request may proceed."""
        if group_id is None or (not allow_empty and group_id == ""):
            return _E.INVALID_GROUP_ID
        if not self._active:
            return _E.COORDINATOR_NOT_AVAILABLE
        p = partition_for(group_id, self._num_partitions)
        if p in self._loading:
            return _E.COORDINATOR_LOAD_IN_PROGRESS
        if p not in self._owned:
            return _E.NOT_COORDINATOR
        return None

    def _repair_after_failure(self, group_id: str) -> None:
        """After a membership handler raised: a group it left PreparingRebalance with no join timer would
        never answer anyone again (the join phase completes only on that timer or on a join), so it is reset
        as after a failed timer (``RebalanceEngine.reset_failed_group``).  A failure that left the group
        consistent -- most of them are refusals raised before anything changed -- leaves it alone, so a
        request cannot reset a healthy group."""
        group = self.groups.get(group_id)
        if group is not None and group.state is _S.PREPARING_REBALANCE and group.join_timer is None:
            log.error("group %s was left in PreparingRebalance without a join timer: resetting it", group_id)
            self.engine.reset_failed_group(group)

    def _answer_by_handler(self, api: str, handler: Callable[[Any, Deferred[R]], None], request: Any,
                           reply: Deferred[R], failure: Callable[[], R]) -> Deferred[R]:
        """JoinGroup and SyncGroup: ``handler`` answers ``reply`` now or parks it. If it raises
        IllegalGroupStateError, the group is repaired (``_repair_after_failure``) and ``reply``, unless
        already answered, gets ``failure()`` (UNKNOWN_SERVER_ERROR)."""
        try:
            handler(request, reply)
        except IllegalGroupStateError:
            log.exception("%s of group %s failed", api, request.group_id)
            self._repair_after_failure(request.group_id)
            if not reply.done():
                reply.set_result(failure())
        return reply

    def _create_group(self, group_id: str) -> ClassicGroup:
        group = ClassicGroup(group_id, now_ms=self.clock.now_ms())
        self.groups[group_id] = group
        return group

    def _new_classic_group(self, group_id: str, offsets: GroupOffsets) -> ClassicGroup:
        return ClassicGroup(group_id, now_ms=self.clock.now_ms(), offsets=offsets)

    def _offsets_of(self, group_id: str) -> GroupOffsets | None:
        """The offsets of the loaded group holding ``group_id``, of either kind."""
        group = self.registry.get(group_id)
        return None if group is None else group.offset_state

    def _consumer_group_holds(self, group_id: str) -> ConsumerGroup | None:
        """Before a JoinGroup: the consumer group with members that holds the id (its classic members are served
        by :mod:`~kafkagroup.coordinator.consumer.classic_members`); an empty consumer group of the id becomes a
        classic one (Kafka's conversion) and None is answered."""
        if self.registry.take_over_empty_consumer_group(group_id):
            return None
        return self.registry.consumer[group_id]

    def add_group(self, group: ClassicGroup) -> ClassicGroup:
        """Register a group built outside the request path (Kafka's ``GroupMetadataManager.addGroup``):
        tools and tests that construct a group in a given state.  An existing group with the id wins."""
        return self.groups.setdefault(group.group_id, group)

    def force_rebalance(self, group_id: str, reason: str = "requested") -> bool:
        """Start a rebalance of a Stable / CompletingRebalance / Empty group (``prepareRebalance``)."""
        group = self.groups.get(group_id)
        if group is None or not group.can_rebalance():
            return False
        self.engine.prepare_rebalance(group, reason)
        return True

    # ===================================================================== JoinGroup

    def expire_session(self, group_id: str, member_id: str) -> bool:
        """Expire ``member_id``'s session now, as if no heartbeat had come within its session timeout (a test
        broker's control: kafkagroup.testing). The member is removed, its parked JoinGroup answered
        UNKNOWN_MEMBER_ID, and the group rebalances; unlike the timer, a member parked in JoinGroup is not
        spared. False when the group has no such member."""
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if group is None or member is None:
            return False
        log.info("member %s of group %s: session expired on request", member_id, group_id)
        self.engine.remove_member_and_update_group(group, member)
        return True

    def join_group(self, request: JoinGroupRequest) -> Deferred[JoinGroupResponse]:
        violation = limits.join_group_violation(request)
        reply: Deferred[JoinGroupResponse] = Deferred(request)
        if violation is not None:  # JoinGroupRequest.getErrorResponse: no member id, generation -1
            reply.set_result(JoinGroupResponse(_refused(violation)))
            return reply
        error = self._gate(request.group_id, allow_empty=False)
        if error is None and not (self.config.group_min_session_timeout_ms <= request.session_timeout_ms
                                  <= self.config.group_max_session_timeout_ms):
            error = _E.INVALID_SESSION_TIMEOUT
        if error is not None:
            reply.set_result(JoinGroupResponse(error, member_id=request.member_id))
            return reply
        consumer_group = self._consumer_group_holds(request.group_id)
        if consumer_group is not None:          # a classic member inside a consumer group: answered at once
            try:
                reply.set_result(self.classic_members.join(consumer_group, request))
            except IllegalGroupStateError:
                log.exception("JoinGroup of group %s failed", request.group_id)
                reply.set_result(JoinGroupResponse(_E.UNKNOWN_SERVER_ERROR, member_id=""))
            finally:
                self._persist_consumer_group(request.group_id)
            return reply
        return self._answer_by_handler("JoinGroup", self.membership.join_group, request, reply,
                                       lambda: JoinGroupResponse(_E.UNKNOWN_SERVER_ERROR, member_id=""))

    # ===================================================================== SyncGroup

    def sync_group(self, request: SyncGroupRequest) -> Deferred[SyncGroupResponse]:
        violation = limits.sync_group_violation(request)
        reply: Deferred[SyncGroupResponse] = Deferred(request)
        if violation is not None:
            reply.set_result(SyncGroupResponse(_refused(violation)))
            return reply
        error = self._gate(request.group_id, allow_empty=False)
        if error is not None:
            if error is _E.COORDINATOR_LOAD_IN_PROGRESS:
                error = _E.REBALANCE_IN_PROGRESS  # the active rebalance is lost: rejoin (Scala)
            reply.set_result(SyncGroupResponse(error))
            return reply
        consumer_group = self.registry.consumer.get(request.group_id)
        if consumer_group is not None:          # a classic member inside a consumer group: answered at once
            try:
                reply.set_result(self.classic_members.sync(consumer_group, request))
            except IllegalGroupStateError:
                log.exception("SyncGroup of group %s failed", request.group_id)
                reply.set_result(SyncGroupResponse(_E.UNKNOWN_SERVER_ERROR))
            finally:
                self._persist_consumer_group(request.group_id)
            return reply
        return self._answer_by_handler("SyncGroup", self.membership.sync_group, request, reply,
                                       lambda: SyncGroupResponse(_E.UNKNOWN_SERVER_ERROR))

    # ===================================================================== Heartbeat

    def heartbeat(self, request: HeartbeatRequest) -> HeartbeatResponse:
        violation = limits.heartbeat_violation(request)
        if violation is not None:
            return HeartbeatResponse(_refused(violation))
        error = self._gate(request.group_id, allow_empty=False)
        if error is not None:
            return HeartbeatResponse(_E.NONE if error is _E.COORDINATOR_LOAD_IN_PROGRESS else error)
        consumer_group = self.registry.consumer.get(request.group_id)
        if consumer_group is not None:
            try:
                return HeartbeatResponse(self.classic_members.heartbeat(consumer_group, request))
            except IllegalGroupStateError:
                log.exception("Heartbeat of group %s failed", request.group_id)
                return HeartbeatResponse(_E.UNKNOWN_SERVER_ERROR)
            finally:
                self._persist_consumer_group(request.group_id)
        try:
            return HeartbeatResponse(self.membership.heartbeat(request))
        except IllegalGroupStateError:
            log.exception("Heartbeat of group %s failed", request.group_id)
            self._repair_after_failure(request.group_id)
            return HeartbeatResponse(_E.UNKNOWN_SERVER_ERROR)

    # ==================================================================== LeaveGroup

    def leave_group(self, request: LeaveGroupRequest) -> LeaveGroupResponse:
        violation = limits.leave_group_violation(request)
        if violation is not None:
            return LeaveGroupResponse(_refused(violation), [])
        error = self._gate(request.group_id, allow_empty=False)
        if error is not None:
            return LeaveGroupResponse(error, [])
        consumer_group = self.registry.consumer.get(request.group_id)
        if consumer_group is not None:
            try:
                return self.classic_members.leave(consumer_group, request)
            except IllegalGroupStateError:
                log.exception("LeaveGroup of group %s failed", request.group_id)
                return LeaveGroupResponse(_E.UNKNOWN_SERVER_ERROR, [])
            finally:
                self._persist_consumer_group(request.group_id)
        try:
            return self.membership.leave_group(request)
        except IllegalGroupStateError:
            log.exception("LeaveGroup of group %s failed", request.group_id)
            self._repair_after_failure(request.group_id)
            return LeaveGroupResponse(_E.UNKNOWN_SERVER_ERROR, [])

    # ======================================================================= offsets

    def offset_commit(self, request: OffsetCommitRequest) -> OffsetCommitResponse:
        violation = limits.offset_commit_violation(request)
        if violation is not None:  # every partition, as OffsetCommitRequest.getErrorResponse
            return uniform_commit_response(request, _refused(violation))
        error = self._gate(request.group_id, allow_empty=True)
        if error is not None:
            return uniform_commit_response(request, error)
        consumer_group = self.registry.consumer.get(request.group_id)
        if consumer_group is not None:
            error = consumer_commit_error(consumer_group, request)
            if error is not None:
                return uniform_commit_response(request, error)
            return self.offsets.store_commit(request.group_id, consumer_group.offset_state, request)
        try:
            return self.offsets.offset_commit(request)
        except IllegalGroupStateError:
            log.exception("OffsetCommit of group %s failed", request.group_id)
            return uniform_commit_response(request, _E.UNKNOWN_SERVER_ERROR)

    def offset_fetch(self, request: OffsetFetchRequest) -> OffsetFetchResponse:
        violation = limits.offset_fetch_violation(request)
        if violation is not None:  # v2+: a request-level error and no partitions
            return OffsetFetchResponse(_refused(violation), [])
        error = self._gate(request.group_id, allow_empty=True)
        if error is not None:
            return OffsetFetchResponse(error, [])
        consumer_group = self.registry.consumer.get(request.group_id)
        if consumer_group is not None:
            error = consumer_fetch_error(consumer_group, request)
            if error is not None:
                return OffsetFetchResponse(error, [])
            return self.offsets.fetch(consumer_group.offset_state, request)
        return self.offsets.offset_fetch(request)

    def txn_offset_commit(self, request: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
        """TxnOffsetCommit: offsets held pending for the producer until :meth:`complete_transaction`."""
        violation = limits.txn_offset_commit_violation(request)
        if violation is not None:
            return TxnOffsetCommitResponse(uniform_commit_topics(request.topics, _refused(violation)))
        error = self._gate(request.group_id, allow_empty=False)
        if error is not None:
            return TxnOffsetCommitResponse(uniform_commit_topics(request.topics, error))
        consumer_group = self.registry.consumer.get(request.group_id)
        if consumer_group is not None:
            error = consumer_txn_commit_error(consumer_group, request)
            if error is not None:
                return TxnOffsetCommitResponse(uniform_commit_topics(request.topics, error))
            return self.txn.store_pending(request.group_id, consumer_group.offset_state, request)
        try:
            return self.txn.txn_offset_commit(request)
        except IllegalGroupStateError:
            log.exception("TxnOffsetCommit of group %s failed", request.group_id)
            return TxnOffsetCommitResponse(uniform_commit_topics(request.topics, _E.UNKNOWN_SERVER_ERROR))

    def complete_transaction(self, producer_id: int, producer_epoch: int, partitions: Iterable[int],
                             result: TransactionResult) -> dict[int, ErrorCode]:
        """A transaction marker for offsets-topic ``partitions`` (Kafka's WriteTxnMarkers to
        ``__consumer_offsets``, then ``onTransactionCompleted``): COMMIT makes the producer's pending offsets
        committed, ABORT drops them; durable when answered NONE.  Per partition: NONE, INVALID_PRODUCER_EPOCH
        (an older epoch than the producer wrote there), the store's append error, NOT_LEADER_OR_FOLLOWER
        (neither owned nor loading here, or the coordinator is shut down), UNKNOWN_TOPIC_OR_PARTITION (no such
        partition).  A loading partition takes the marker in the store; its groups see it when loaded."""
        if not isinstance(result, TransactionResult):
            raise ValueError(f"transaction marker of producer {producer_id}: result must be a TransactionResult, "
                             f"got {result!r}")
        partitions = list(partitions)
        violation = limits.transaction_marker_violation(producer_id, producer_epoch, partitions)
        if violation is not None:
            error = _refused(violation)
            return {p: error for p in partitions}
        answers: dict[int, ErrorCode] = {}
        for p in partitions:
            if not 0 <= p < self._num_partitions:
                answers[p] = _E.UNKNOWN_TOPIC_OR_PARTITION
            elif not self._active or (p not in self._owned and p not in self._loading):
                answers[p] = _E.NOT_LEADER_OR_FOLLOWER
            else:
                answers[p] = self.txn.complete_transaction(p, producer_id, producer_epoch,
                                                           result is TransactionResult.COMMIT)
        return answers

    def offset_delete(self, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
        """OffsetDelete (KIP-496): group-level or per-partition errors, deletion durable when answered."""
        violation = limits.offset_delete_violation(request)
        if violation is not None:  # OffsetDeleteRequest.getErrorResponse: the request-level error only
            return OffsetDeleteResponse(_refused(violation))
        error = self._gate(request.group_id, allow_empty=False)
        if error is not None:
            return OffsetDeleteResponse(error)
        try:
            return self.offsets.offset_delete(request)
        except IllegalGroupStateError:
            log.exception("OffsetDelete of group %s failed", request.group_id)
            return OffsetDeleteResponse(_E.UNKNOWN_SERVER_ERROR)

    def expire_offsets(self) -> int:
        """Run the retention task once over every loaded group (§3.9); returns the offsets removed."""
        removed = 0
        for group in list(self.groups.values()):
            if group.state is not _S.DEAD:
                removed += self.offsets.cleanup_group(group)[0]
        for consumer_group in list(self.registry.consumer.values()):
            removed += self._expire_consumer_group_offsets(consumer_group)
        return removed

    def _expire_consumer_group_offsets(self, group: ConsumerGroup) -> int:
        """Expired offsets of a consumer group removed durably; an empty group left without offsets is deleted
        with them (Kafka writes its tombstone).  A failed write changes nothing (retried next period)."""
        state = group.offset_state
        expired = expired_offsets(group, self.clock.now_ms(), self.config.offsets_retention_ms)
        remove_group = (group.is_empty() and len(expired) == len(state.committed) and not state.pending_txn_offsets)
        if not expired and not remove_group:
            return 0
        try:
            self.store.delete_offsets(group.group_id, expired, delete_group=remove_group)
        except StoreWriteError as exc:
            log.warning("offset expiry of group %s failed: %s", group.group_id, exc)
            return 0
        for tp in expired:
            del state.committed[tp]
        if remove_group:
            group.dead = True
            self.consumer.drop_timers(group)
            del self.registry.consumer[group.group_id]
        return len(expired)

    def _schedule_offset_expiration(self) -> None:
        def run() -> None:
            self._expiry_timer = None
            if self._active:
                try:
                    self.expire_offsets()
                finally:  # a failed pass (logged by the timer guard) must not end the retention task
                    self._schedule_offset_expiration()

        self._expiry_timer = self.engine.clock.call_at(
            self.clock.now_ms() + self.config.offsets_retention_check_interval_ms, run)

    # ============================================== consumer groups (KIP-848)

    def consumer_group_heartbeat(self, request: ConsumerGroupHeartbeatRequest) -> ConsumerGroupHeartbeatResponse:
        """ConsumerGroupHeartbeat (API 68): see :mod:`~kafkagroup.coordinator.consumer.heartbeat`."""
        error = self._gate(request.group_id, allow_empty=True)
        if error is not None:
            return ConsumerGroupHeartbeatResponse(error)
        try:
            return self.consumer.heartbeat(request)
        except IllegalGroupStateError:
            log.exception("ConsumerGroupHeartbeat of group %s failed", request.group_id)
            return ConsumerGroupHeartbeatResponse(_E.UNKNOWN_SERVER_ERROR)
        finally:
            self._persist_consumer_group(request.group_id)

    def consumer_group_describe(self, request: ConsumerGroupDescribeRequest) -> ConsumerGroupDescribeResponse:
        """ConsumerGroupDescribe (API 69): consumer groups only; a classic or unknown id is GROUP_ID_NOT_FOUND."""
        out = []
        for group_id in request.group_ids:
            error = self._gate(group_id, allow_empty=True)
            if error is not None:
                out.append(DescribedConsumerGroup(error, group_id))
                continue
            group = self.registry.consumer.get(group_id)
            if group is None:
                message = (f"Group {group_id} is not a consumer group." if group_id in self.groups
                           else f"Group {group_id} not found.")
                out.append(DescribedConsumerGroup(_E.GROUP_ID_NOT_FOUND, group_id, message))
            else:
                out.append(describe_consumer_group(group, self.topics))
        return ConsumerGroupDescribeResponse(out)

    def consumer_group(self, group_id: str) -> ConsumerGroup | None:
        """The in-memory consumer group (for inspection; mutate only through requests)."""
        return self.registry.consumer.get(group_id)

    # ====================================================== Describe / List / Delete

    def describe_groups(self, request: DescribeGroupsRequest) -> DescribeGroupsResponse:
        violation = limits.describe_groups_violation(request)
        if violation is not None:  # every group of the request
            error = _refused(violation)
            return DescribeGroupsResponse([DescribedGroup(error, group_id, "") for group_id in request.groups or ()])
        out = []
        for group_id in request.groups:
            error = self._gate(group_id, allow_empty=True)
            if error is not None:
                out.append(DescribedGroup(error, group_id, ""))
                continue
            group = self.groups.get(group_id)
            if group is not None:
                out.append(self._describe(group))
            elif request.version < 6:       # a missing group and a consumer group both answer Dead (Kafka)
                out.append(DescribedGroup(_E.NONE, group_id, "Dead"))
            else:                           # KIP-1043: v6 says why
                message = (f"Group {group_id} is not a classic group." if group_id in self.registry.consumer
                           else f"Group {group_id} not found.")
                out.append(DescribedGroup(_E.GROUP_ID_NOT_FOUND, group_id, "Dead", error_message=message))
        return DescribeGroupsResponse(out)

    @staticmethod
    def _describe(group: ClassicGroup) -> DescribedGroup:
        if group.state is _S.STABLE and group.protocol_name is not None:
            protocol = group.protocol_name
            members = [DescribedGroupMember(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                            m.metadata(protocol), m.assignment) for m in group.members.values()]
            return DescribedGroup(_E.NONE, group.group_id, str(group.state), group.protocol_type or "", protocol,
                                  members)
        # Outside Stable no protocol metadata, but each member's current assignment all the same (Kafka's
        # ClassicGroupMember.describeNoMetadata): during a rebalance, the previous generation's.
        members = [DescribedGroupMember(m.member_id, m.group_instance_id, m.client_id, m.client_host, b"",
                                        m.assignment) for m in group.members.values()]
        return DescribedGroup(_E.NONE, group.group_id, str(group.state), group.protocol_type or "", "", members)

    def list_groups(self, request: ListGroupsRequest | None = None) -> ListGroupsResponse:
        violation = limits.list_groups_violation(request)
        if violation is not None:
            return ListGroupsResponse(_refused(violation), [])
        if not self._active:
            return ListGroupsResponse(_E.COORDINATOR_NOT_AVAILABLE, [])
        wanted = {s.lower() for s in request.states_filter} if request is not None else set()
        groups = [ListedGroup(g.group_id, g.protocol_type or "", str(g.state)) for g in self.groups.values()
                  if not wanted or str(g.state).lower() in wanted]
        groups += [list_entry(g) for g in self.registry.consumer.values()
                   if not wanted or g.state_name.lower() in wanted]
        return ListGroupsResponse(_E.COORDINATOR_LOAD_IN_PROGRESS if self._loading else _E.NONE, groups)

    def delete_groups(self, request: DeleteGroupsRequest) -> DeleteGroupsResponse:
        violation = limits.delete_groups_violation(request)
        if violation is not None:  # every group of the request
            error = _refused(violation)
            return DeleteGroupsResponse([DeletableGroupResult(group_id, error)
                                         for group_id in dict.fromkeys(request.groups_names or ())])
        results = []
        for group_id in dict.fromkeys(request.groups_names):
            error = self._gate(group_id, allow_empty=True)
            if error is None:
                error = self._delete_group(group_id)
            results.append(DeletableGroupResult(group_id, error))
        return DeleteGroupsResponse(results)

    def _delete_group(self, group_id: str) -> ErrorCode:
        consumer_group = self.registry.consumer.get(group_id)
        if consumer_group is not None:
            if not consumer_group.is_empty():
                return _E.NON_EMPTY_GROUP
            try:
                self.store.delete_group(group_id)
            except StoreWriteError as exc:
                log.warning("deleting group %s failed: %s", group_id, exc)
                return group_write_error(exc.code)
            consumer_group.dead = True
            consumer_group.offset_state.clear()
            del self.registry.consumer[group_id]
            return _E.NONE
        group = self.groups.get(group_id)
        if group is None or group.state is _S.DEAD:
            return _E.GROUP_ID_NOT_FOUND
        if group.state is not _S.EMPTY:
            return _E.NON_EMPTY_GROUP
        try:
            self.store.delete_group(group_id)
        except StoreWriteError as exc:
            log.warning("deleting group %s failed: %s", group_id, exc)
            return group_write_error(exc.code)
        group.transition_to(_S.DEAD, self.clock.now_ms())
        group.offset_state.clear()
        del self.groups[group_id]
        return _E.NONE

    # ================================================================ persistence

    def _persist_group(self, group: ClassicGroup, assignment: dict[str, bytes] | None) -> ErrorCode:
        """Write the group metadata record; returns the mapped response error (§2.9), NONE on success."""
        protocol = group.protocol_name
        members = [MemberRecord(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                m.rebalance_timeout_ms, m.session_timeout_ms,
                                m.metadata(protocol) if protocol is not None else b"",
                                m.assignment if assignment is None else assignment.get(m.member_id, b""))
                   for m in group.members.values()]
        record = GroupRecord(group.group_id, self.partition_for(group.group_id), group.protocol_type,
                             group.generation_id, protocol, group.leader_id, group.state_timestamp, members)
        try:
            self.store.store_group(record)
        except StoreWriteError as exc:
            log.warning("storing metadata of group %s failed: %s", group.group_id, exc)
            return group_write_error(exc.code)
        return _E.NONE

    def _persist_consumer_group(self, group_id: str) -> None:
        """Write what changed in consumer group ``group_id`` (if it is one) to the store: one transaction, none
        when nothing changed.  A failed write is logged and the group is written whole at its next change (the
        request's answer stands: its changes are in memory already; a restart before then loses them)."""
        group = self.registry.consumer.get(group_id)
        if group is None or group.dead:
            return
        complete = not self.store.consumer_group_known(group_id)
        record, removed = consumer_records.changes(group, self.partition_for(group_id), complete=complete)
        try:
            self.store.store_consumer_group(record, removed, complete=complete)
        except StoreWriteError as exc:
            log.warning("storing consumer group %s failed: %s (written whole at its next change)", group_id, exc)

    # ============================================================ partition moves

    def load_partition(self, partition: int, *, defer: bool = False) -> None:
        """Become the coordinator of ``partition`` (Kafka's ``onElection``): requests for its groups get
        COORDINATOR_LOAD_IN_PROGRESS until the groups and offsets are read back (at once, or at
        :meth:`complete_loading` when ``defer``)."""
        if not 0 <= partition < self._num_partitions:
            raise ValueError(f"partition {partition} outside offsets.topic.num.partitions={self._num_partitions}")
        if partition in self._owned or partition in self._loading:
            raise ValueError(f"partition {partition} is already owned or loading")
        self._loading.add(partition)
        if not defer:
            self.complete_loading(partition)

    def complete_loading(self, partition: int) -> None:
        if partition not in self._loading:
            raise ValueError(f"partition {partition} is not loading")
        snapshot = self.store.load_partition(partition)
        now = self.clock.now_ms()
        loaded = []
        for group_id, record in snapshot.groups.items():
            group = self._group_from_record(record, now)
            group.offsets = snapshot.offsets.get(group_id, {})
            loaded.append(group)
        consumer_groups = []
        for group_id, consumer_record in snapshot.consumer_groups.items():
            try:
                consumer_groups.append(consumer_records.group_from_record(
                    consumer_record, GroupOffsets(snapshot.offsets.get(group_id, {}))))
            except (ValueError, IllegalGroupStateError) as exc:     # a row this release cannot read
                raise StoreError(self.store.path, f"loading offsets-topic partition {partition}: {exc}") from exc
        # offsets only (committed or pending transactional): a simple (manual-assignment) group
        for group_id in dict.fromkeys([*snapshot.offsets, *snapshot.pending]):
            if group_id not in snapshot.groups and group_id not in snapshot.consumer_groups:
                group = ClassicGroup(group_id, now_ms=now)
                group.state_timestamp = None
                group.offsets = snapshot.offsets.get(group_id, {})
                loaded.append(group)
        self._loading.discard(partition)
        self._owned.add(partition)
        for group in loaded:
            for producer_id, pending in snapshot.pending.get(group.group_id, {}).items():
                group.add_pending_txn_offsets(producer_id, pending.items())
            self.groups[group.group_id] = group
            self.txn.on_group_loaded(partition, group.group_id, group.offset_state)
            self.engine.on_group_loaded(group)
        for consumer_group in consumer_groups:
            for producer_id, pending in snapshot.pending.get(consumer_group.group_id, {}).items():
                consumer_group.offset_state.add_pending_txn_offsets(producer_id, pending.items())
            self.registry.consumer[consumer_group.group_id] = consumer_group
            self.txn.on_group_loaded(partition, consumer_group.group_id, consumer_group.offset_state)
            self.consumer.on_group_loaded(consumer_group)

    @staticmethod
    def _group_from_record(record: GroupRecord, now: int) -> ClassicGroup:
        state = _S.STABLE if record.members else _S.EMPTY
        group = ClassicGroup(record.group_id, now_ms=now, state=state)
        group.generation_id = record.generation_id
        group.protocol_name = record.protocol_name
        for m in record.members:
            protocols = [(record.protocol_name, m.subscription)] if record.protocol_name is not None else []
            group.add(ClassicGroupMember(
                m.member_id, group_instance_id=m.group_instance_id, client_id=m.client_id,
                client_host=m.client_host, rebalance_timeout_ms=m.rebalance_timeout_ms,
                session_timeout_ms=m.session_timeout_ms, protocol_type=record.protocol_type or "",
                protocols=protocols, assignment=m.assignment))
        group.protocol_type = record.protocol_type
        group.leader_id = record.leader_id if record.leader_id in group.members else next(iter(group.members), None)
        group.state_timestamp = record.state_timestamp
        group.snapshot_subscriptions()
        return group

    def unload_partition(self, partition: int) -> None:
        """Stop coordinating ``partition`` (Kafka's ``onResignation``): its groups go Dead, parked requests
        are answered NOT_COORDINATOR, timers stop, and the groups leave memory (the store keeps them)."""
        self._loading.discard(partition)
        self._owned.discard(partition)
        self.txn.on_partition_unloaded(partition)
        for group_id in [g for g in self.groups if self.partition_for(g) == partition]:
            group = self.groups.pop(group_id)
            if group.state is not _S.DEAD:
                self.engine.on_group_unloaded(group)
        for group_id in [g for g in self.registry.consumer if self.partition_for(g) == partition]:
            self.consumer.drop_timers(self.registry.consumer.pop(group_id))

    def shutdown(self) -> None:
        """Stop: every request is answered COORDINATOR_NOT_AVAILABLE; a store opened here is closed."""
        if not self._active:
            return
        self._active = False
        if self._expiry_timer is not None:
            self._expiry_timer.cancel()
            self._expiry_timer = None
        for p in sorted(self._owned | self._loading):
            self.unload_partition(p)
        if self._owns_store:
            self.store.close()
