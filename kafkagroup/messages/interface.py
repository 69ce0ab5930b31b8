"""The coordinator's request API, as a Protocol a member client can code against.

Every handler takes one request (``kafkagroup.messages.api``) and answers with Kafka's error codes
(never raises for a protocol error; a malformed request *object* -- e.g. metadata that is not bytes -- is a
caller bug and raises :class:`~kafkagroup.errors.InvalidGroupError` naming the member).  A value Kafka's
wire format cannot carry (an offset of ``2**63``, a partition index of ``2**31``, a string with a lone
surrogate or over 32,767 UTF-8 bytes, a null where Kafka's string or array is not nullable) is answered
INVALID_REQUEST (42) for the whole request, see
:mod:`~kafkagroup.coordinator.request_limits`.  JoinGroup and SyncGroup may be *parked* by the coordinator, so they
return a :class:`~kafkagroup.messages.deferred.Deferred` that completes when the answer exists (the same
call, a later request, or a timer of the injected clock); every other request is answered synchronously.

In-process (tests, simulator) with :class:`~kafkagroup.messages.clock.ManualClock`::

    coord = GroupCoordinator(clock=clock, store=":memory:", group_initial_rebalance_delay_ms=50)
    r1 = coord.join_group(JoinGroupRequest("g", protocols=[("range", b"")], session_timeout_ms=500)).result()
    reply = coord.join_group(JoinGroupRequest("g", member_id=r1.member_id, protocols=[("range", b"")],
                                              session_timeout_ms=500))
    clock.advance(50)                      # the initial rebalance delay ends
    join = reply.result()                  # error 0, generation 1, leader == member_id

The implementation, ``kafkagroup.coordinator.GroupCoordinator``, is built as::

    GroupCoordinator(config=None | {"group.max.size": 4, ...} | CoordinatorConfig,
                     *, clock=ManualClock() | AsyncioClock(),
                     store="/path/groups.db" | GroupStore | ":memory:" (required: no default, so that
                           an in-memory store that loses commits on restart is always a visible choice),
                     owned_partitions=None (= all offsets-topic partitions) | iterable of ints,
                     enable_offset_expiration=True, member_id_factory=None (= prefix + "-" + uuid4),
                     **underscore_config_keys)          # e.g. group_initial_rebalance_delay_ms=50

plus ``complete_transaction`` (transaction markers), ``partition_for``, ``group(id)`` (inspection), ``load_partition(p, defer=)`` / ``complete_loading`` /
``unload_partition`` (Kafka's election / resignation), ``force_rebalance``, ``expire_offsets`` and
``shutdown``.

From asyncio, ``kafkagroup.coordinator.aio.AsyncGroupCoordinator`` wraps the same object with
``async def`` methods, the clock being the running loop.
"""
from __future__ import annotations

from typing import Protocol, runtime_checkable

from kafkagroup.messages.deferred import Deferred
from kafkagroup.messages.api import (
    DeleteGroupsRequest, DeleteGroupsResponse, DescribeGroupsRequest, DescribeGroupsResponse,
    HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest,
    LeaveGroupResponse, ListGroupsRequest, ListGroupsResponse, OffsetCommitRequest, OffsetCommitResponse,
    OffsetDeleteRequest, OffsetDeleteResponse, OffsetFetchRequest, OffsetFetchResponse, SyncGroupRequest,
    SyncGroupResponse, TxnOffsetCommitRequest, TxnOffsetCommitResponse,
)

__all__ = ["GroupCoordinatorAPI"]


@runtime_checkable
class GroupCoordinatorAPI(Protocol):
    """Classic group protocol requests (spec §2)."""

    def join_group(self, request: JoinGroupRequest) -> Deferred[JoinGroupResponse]:
        """JoinGroup (§2.2); parked until the join phase completes, or answered at once."""

    def sync_group(self, request: SyncGroupRequest) -> Deferred[SyncGroupResponse]:
        """SyncGroup (§2.3); a follower's is parked until the leader's assignment is stored."""

    def heartbeat(self, request: HeartbeatRequest) -> HeartbeatResponse:
        """Heartbeat (§2.4)."""

    def leave_group(self, request: LeaveGroupRequest) -> LeaveGroupResponse:
        """LeaveGroup (§2.5), batch; per-member results in request order."""

    def offset_commit(self, request: OffsetCommitRequest) -> OffsetCommitResponse:
        """OffsetCommit (§2.6); per-partition error codes; durable when answered with NONE."""

    def offset_fetch(self, request: OffsetFetchRequest) -> OffsetFetchResponse:
        """OffsetFetch (§2.7); ``require_stable`` reports pending transactional offsets as UNSTABLE_OFFSET_COMMIT."""

    def txn_offset_commit(self, request: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
        """TxnOffsetCommit (§2.6 last paragraph); durable but pending until the transaction's marker."""

    def offset_delete(self, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
        """OffsetDelete (KIP-496); durable when answered with NONE."""

    def describe_groups(self, request: DescribeGroupsRequest) -> DescribeGroupsResponse:
        """DescribeGroups (§2.8)."""

    def list_groups(self, request: ListGroupsRequest | None = None) -> ListGroupsResponse:
        """ListGroups (§2.8)."""

    def delete_groups(self, request: DeleteGroupsRequest) -> DeleteGroupsResponse:
        """DeleteGroups (§2.8)."""

    def partition_for(self, group_id: str) -> int:
        """The offsets-topic partition that owns ``group_id`` (§5)."""
