"""How a member reaches a coordinator: an in-process transport over the coordinator's request API.

The member never calls the coordinator and never receives a response inside the same call stack: requests
and responses both travel through the injected clock (``call_at(now + latency_ms)``).  That keeps the
member re-entrancy free (a coordinator completing a join phase answers many parked JoinGroups from inside
one request; each answer is *scheduled*, not handled in place) and makes the whole group -- coordinator
and members -- one deterministic event loop driven by ``ManualClock.advance`` in tests and the simulator.
With :class:`~kafkagroup.messages.clock.AsyncioClock` the same objects run live on an asyncio loop.

Latency 0 still goes through the clock: with ``ManualClock`` a due timer scheduled while another fires runs
within the same ``advance`` (spec §7.1), so ``clock.advance(0)`` settles everything that is due now.

A parked JoinGroup that the coordinator supersedes (a newer JoinGroup of the same member) is never answered,
as in Kafka; the member's own request timeout covers that case.
"""
from __future__ import annotations

from typing import Any, Callable, Protocol

from kafkagroup.messages.clock import Clock
from kafkagroup.messages.deferred import Deferred
from kafkagroup.messages.api import (
    HeartbeatRequest,
    HeartbeatResponse,
    JoinGroupRequest,
    JoinGroupResponse,
    LeaveGroupRequest,
    LeaveGroupResponse,
    OffsetCommitRequest,
    OffsetCommitResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)

__all__ = ["GroupTransport", "InProcessTransport"]

Callback = Callable[[Any], None]


class GroupTransport(Protocol):  # pragma: no cover - typing only
    """What a :class:`~kafkagroup.client.member.GroupMember` needs; every response arrives later via ``on_response``."""

    def join_group(self, request: JoinGroupRequest, on_response: Callable[[JoinGroupResponse], None]) -> None: ...

    def sync_group(self, request: SyncGroupRequest, on_response: Callable[[SyncGroupResponse], None]) -> None: ...

    def heartbeat(self, request: HeartbeatRequest, on_response: Callable[[HeartbeatResponse], None]) -> None: ...

    def leave_group(self, request: LeaveGroupRequest, on_response: Callable[[LeaveGroupResponse], None]) -> None: ...

    def offset_commit(
        self, request: OffsetCommitRequest, on_response: Callable[[OffsetCommitResponse], None]
    ) -> None: ...


class InProcessTransport:
    """Deliver requests to an in-process coordinator after ``latency_ms`` and answers back after ``latency_ms``.

    ``coordinator`` is anything with the :class:`~kafkagroup.messages.interface.GroupCoordinatorAPI`
    methods; ``clock`` must be the clock that drives it.  ``requests_sent`` counts requests by API name.
    """

    def __init__(self, coordinator: Any, clock: Clock, latency_ms: int = 0) -> None:
        if latency_ms < 0:
            raise ValueError(f"latency_ms must not be negative, got {latency_ms}")
        self.coordinator = coordinator
        self.clock = clock
        self.latency_ms = int(latency_ms)
        self.requests_sent: dict[str, int] = {}

    # -- the five requests a member sends -----------------------------------------------------------
    def join_group(self, request: JoinGroupRequest, on_response: Callable[[JoinGroupResponse], None]) -> None:
        self._send("join_group", request, on_response, parked=True)

    def sync_group(self, request: SyncGroupRequest, on_response: Callable[[SyncGroupResponse], None]) -> None:
        self._send("sync_group", request, on_response, parked=True)

    def heartbeat(self, request: HeartbeatRequest, on_response: Callable[[HeartbeatResponse], None]) -> None:
        self._send("heartbeat", request, on_response, parked=False)

    def leave_group(self, request: LeaveGroupRequest, on_response: Callable[[LeaveGroupResponse], None]) -> None:
        self._send("leave_group", request, on_response, parked=False)

    def offset_commit(
        self, request: OffsetCommitRequest, on_response: Callable[[OffsetCommitResponse], None]
    ) -> None:
        self._send("offset_commit", request, on_response, parked=False)

    # -- plumbing --------------------------------------------------------------------------------------
    def _send(self, api: str, request: Any, on_response: Callback, *, parked: bool) -> None:
        self.requests_sent[api] = self.requests_sent.get(api, 0) + 1
        handler = getattr(self.coordinator, api)
        clock = self.clock

        def answer(value: Any) -> None:
            clock.call_at(clock.now_ms() + self.latency_ms, lambda: on_response(value))

        def deliver() -> None:
            result = handler(request)
            if not parked:
                answer(result)
                return
            deferred: Deferred[Any] = result

            def relay(d: Deferred[Any]) -> None:
                if d.done():  # a superseded JoinGroup is never answered (the member times it out)
                    answer(d.result())

            deferred.add_done_callback(relay)

        clock.call_at(clock.now_ms() + self.latency_ms, deliver)
