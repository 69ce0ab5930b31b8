"""A response that may arrive later: what ``join_group`` and ``sync_group`` return.

Kafka parks a JoinGroup until the join phase completes and a follower's SyncGroup until the leader's
assignment is stored.  The coordinator therefore returns a :class:`Deferred` for those two requests; it is
completed (exactly once) by whatever event produces the answer -- often the same call, sometimes a later
request or a timer fired by the clock.  Usage in-process with the manual clock::

    reply = coordinator.join_group(JoinGroupRequest("g", member_id=m, protocols=[("range", b"")]))
    assert not reply.done()
    clock.advance(50)
    assert reply.result().generation_id == 1

and from asyncio (``kafkagroup.coordinator.aio`` does this): ``await reply.wait()`` or
``reply.add_done_callback(lambda d: fut.set_result(d.result()))``.

A parked JoinGroup replaced by a newer JoinGroup of the same member is never answered (as in Kafka: the
client's request times out); such a deferred reports ``superseded() is True`` and stays not done.
Single-threaded by design: complete and observe it on the thread that drives the coordinator.
"""
from __future__ import annotations

import asyncio
from typing import Callable, Generic, TypeVar

from kafkagroup.messages.errors import NotReadyError   # re-exported: its old home

__all__ = ["Deferred", "NotReadyError"]

T = TypeVar("T")


class Deferred(Generic[T]):
    """One response, produced now or later; callbacks run synchronously when it completes."""

    __slots__ = ("_value", "_done", "_callbacks", "_superseded", "_what")

    def __init__(self, what: object = "") -> None:
        self._value: T | None = None
        self._done = False
        self._callbacks: list[Callable[["Deferred[T]"], None]] | None = None
        self._superseded = False
        self._what = what   # the request (formatted only for messages: no cost on the hot path)

    @property
    def description(self) -> str:
        what = self._what
        if isinstance(what, str):
            return what
        group_id, member_id = getattr(what, "group_id", "?"), getattr(what, "member_id", "?")
        return f"{type(what).__name__.removesuffix('Request')}({group_id}, {member_id!r})"

    def done(self) -> bool:
        return self._done

    def superseded(self) -> bool:
        """True when a newer request of the same member replaced this one; it will never complete."""
        return self._superseded

    def result(self) -> T:
        if not self._done:
            state = "superseded by a newer request" if self._superseded else "not answered yet"
            raise NotReadyError(f"response {self.description} {state}".strip())
        return self._value  # type: ignore[return-value]

    def add_done_callback(self, fn: Callable[["Deferred[T]"], None]) -> None:
        """Call ``fn(self)`` when completed or superseded (immediately if already so); check ``done()``."""
        if self._done or self._superseded:
            fn(self)
            return
        if self._callbacks is None:
            self._callbacks = []
        self._callbacks.append(fn)

    def set_result(self, value: T) -> None:
        if self._done:
            raise RuntimeError(f"response {self.description} completed twice")
        self._value = value
        self._done = True
        callbacks, self._callbacks = self._callbacks, None
        if callbacks:
            for fn in callbacks:
                fn(self)

    def mark_superseded(self) -> None:
        if self._done or self._superseded:
            return
        self._superseded = True
        callbacks, self._callbacks = self._callbacks, None
        if callbacks:
            for fn in callbacks:
                fn(self)

    async def wait(self) -> T:
        """Await the response on the running asyncio loop (the coordinator must be driven by that loop)."""
        if self._done:
            return self._value  # type: ignore[return-value]
        if self._superseded:
            raise NotReadyError(f"response {self.description} superseded by a newer request")
        fut: asyncio.Future[T] = asyncio.get_running_loop().create_future()

        def relay(d: "Deferred[T]") -> None:
            if fut.done():
                return
            if d._done:
                fut.set_result(d._value)  # type: ignore[arg-type]
            else:
                fut.set_exception(NotReadyError(f"response {d.description} superseded by a newer request"))

        self.add_done_callback(relay)
        return await fut

    def __repr__(self) -> str:
        if self._done:
            return f"Deferred(done, {self._value!r})"
        return f"Deferred({'superseded' if self._superseded else 'pending'} {self.description})"
