"""asyncio driver: the coordinator live, in real time, on an event loop.

:class:`AsyncGroupCoordinator` wraps a :class:`GroupCoordinator` whose clock is the loop
(:class:`~kafkagroup.messages.clock.AsyncioClock`): timers are ``loop.call_at`` handles, parked
JoinGroup/SyncGroup responses are awaited, everything runs on the loop's thread (no locks needed)::

    async def main():
        coord = AsyncGroupCoordinator.create({"group.initial.rebalance.delay.ms": 100}, store="groups.db")
        first = await coord.join_group(JoinGroupRequest("g", protocols=[("range", b"")], session_timeout_ms=10_000))
        joined = await coord.join_group(dataclasses.replace(first_request, member_id=first.member_id))
        ...
        await coord.close()

``request_timeout_ms`` plays the client's ``request.timeout.ms``: a parked request that gets no answer in
time (Kafka never answers a JoinGroup replaced by a newer one) raises :class:`asyncio.TimeoutError`; a
superseded request raises :class:`~kafkagroup.messages.deferred.NotReadyError` at once.  Call the
methods from the loop's thread only.
"""
from __future__ import annotations

import asyncio
from typing import Any, Iterable, Mapping, TypeVar

from kafkagroup.messages.clock import AsyncioClock
from kafkagroup.coordinator.config import CoordinatorConfig
from kafkagroup.coordinator.coordinator import GroupCoordinator
from kafkagroup.messages.deferred import Deferred
from kafkagroup.messages.api import (
    DeleteGroupsRequest, DeleteGroupsResponse, DescribeGroupsRequest, DescribeGroupsResponse, HeartbeatRequest,
    HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse, ListGroupsRequest,
    ListGroupsResponse, OffsetCommitRequest, OffsetCommitResponse, OffsetDeleteRequest, OffsetDeleteResponse,
    OffsetFetchRequest, OffsetFetchResponse, SyncGroupRequest, SyncGroupResponse, TransactionResult,
    TxnOffsetCommitRequest, TxnOffsetCommitResponse,
)
from kafkagroup.messages.error_codes import ErrorCode
from kafkagroup.coordinator.store import GroupStore

__all__ = ["AsyncGroupCoordinator"]

T = TypeVar("T")


class AsyncGroupCoordinator:
    """``async def`` request methods over a loop-clocked :class:`GroupCoordinator`."""

    def __init__(self, coordinator: GroupCoordinator, *, request_timeout_ms: int | None = None) -> None:
        if not isinstance(coordinator.clock, AsyncioClock):
            raise TypeError("AsyncGroupCoordinator needs a GroupCoordinator whose clock is an AsyncioClock")
        self.coordinator = coordinator
        self.request_timeout_ms = request_timeout_ms

    @classmethod
    def create(cls, config: Mapping[str, Any] | CoordinatorConfig | None = None, *,
               store: GroupStore | str, owned_partitions: Iterable[int] | None = None,
               request_timeout_ms: int | None = None, enable_offset_expiration: bool = True,
               **config_kwargs: Any) -> "AsyncGroupCoordinator":
        """Build a coordinator on the running loop (call from a coroutine).  ``store`` is required, as for
        :class:`GroupCoordinator`: a file path for durable offsets, ``":memory:"`` only when losing them on
        restart is intended."""
        clock = AsyncioClock(asyncio.get_running_loop())
        coordinator = GroupCoordinator(config, clock=clock, store=store, owned_partitions=owned_partitions,
                                       enable_offset_expiration=enable_offset_expiration, **config_kwargs)
        return cls(coordinator, request_timeout_ms=request_timeout_ms)

    async def _wait(self, reply: Deferred[T]) -> T:
        if reply.done():
            return reply.result()
        if self.request_timeout_ms is None:
            return await reply.wait()
        return await asyncio.wait_for(reply.wait(), self.request_timeout_ms / 1000.0)

    async def join_group(self, request: JoinGroupRequest) -> JoinGroupResponse:
        return await self._wait(self.coordinator.join_group(request))

    async def sync_group(self, request: SyncGroupRequest) -> SyncGroupResponse:
        return await self._wait(self.coordinator.sync_group(request))

    async def heartbeat(self, request: HeartbeatRequest) -> HeartbeatResponse:
        return self.coordinator.heartbeat(request)

    async def leave_group(self, request: LeaveGroupRequest) -> LeaveGroupResponse:
        return self.coordinator.leave_group(request)

    async def offset_commit(self, request: OffsetCommitRequest) -> OffsetCommitResponse:
        return self.coordinator.offset_commit(request)

    async def offset_fetch(self, request: OffsetFetchRequest) -> OffsetFetchResponse:
        return self.coordinator.offset_fetch(request)

    async def txn_offset_commit(self, request: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
        return self.coordinator.txn_offset_commit(request)

    async def complete_transaction(self, producer_id: int, producer_epoch: int, partitions: Iterable[int],
                                   result: TransactionResult) -> dict[int, ErrorCode]:
        return self.coordinator.complete_transaction(producer_id, producer_epoch, partitions, result)

    async def offset_delete(self, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
        return self.coordinator.offset_delete(request)

    async def describe_groups(self, request: DescribeGroupsRequest) -> DescribeGroupsResponse:
        return self.coordinator.describe_groups(request)

    async def list_groups(self, request: ListGroupsRequest | None = None) -> ListGroupsResponse:
        return self.coordinator.list_groups(request)

    async def delete_groups(self, request: DeleteGroupsRequest) -> DeleteGroupsResponse:
        return self.coordinator.delete_groups(request)

    def partition_for(self, group_id: str) -> int:
        return self.coordinator.partition_for(group_id)

    async def close(self) -> None:
        """Shut the coordinator down (its timers are cancelled; parked requests of a partition it gave up
        are answered NOT_COORDINATOR)."""
        self.coordinator.shutdown()

    async def __aenter__(self) -> "AsyncGroupCoordinator":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
