"""The server-wide bound on memory held for answers (``queued.max.answer.bytes``).

A Fetch answer can be as large as ``fetch.max.bytes`` (55 MiB by default), and every connection may have one
in flight.  Its records are the log's own batches, not copies, but the answer keeps them alive until it has
been written -- after the log dropped them (``log.retention.bytes``), they are memory held for that client
alone, as long as it takes to read them.  Every Fetch therefore *reserves* its records' bytes before it
builds its answer, and gives them back once the answer is handed to the socket (:class:`AnswerHold`); a
reservation that does not fit waits, in arrival order, until enough is given back.
A reservation is granted whenever nothing is held, so one answer larger than the bound is still served
(alone): requests wait, they never fail because of the bound.

Answers of the other APIs (the coordinator's, Metadata, ...) are counted (``held`` says so) but never
wait: they are small or shared (Metadata is cached), and a heartbeat must never queue behind data.

Limits, stated: what is counted is the answer's bytes; a connection's socket buffer may keep up to
``connection._WRITE_HIGH_WATER`` + ``connection._WRITE_SLICE`` bytes of an answer after it is released.
"""
from __future__ import annotations

import asyncio
import contextvars
from collections import deque

__all__ = ["AnswerBudget", "AnswerHold", "current_hold", "set_current_hold", "reset_current_hold"]


class AnswerBudget:
    """Bytes held for answers across the server, at most ``max_bytes`` unless one answer alone is larger."""

    def __init__(self, max_bytes: int) -> None:
        if max_bytes < 1:
            raise ValueError(f"queued.max.answer.bytes must be at least 1, got {max_bytes}")
        self.max_bytes = max_bytes
        self.held = 0
        self.peak = 0
        self._waiters: deque[tuple[int, asyncio.Future[None]]] = deque()

    @property
    def waiting(self) -> int:
        """Reservations waiting for bytes to be given back."""
        return sum(1 for _, f in self._waiters if not f.done())

    def _fits(self, n: int) -> bool:
        return self.held == 0 or self.held + n <= self.max_bytes

    def _take(self, n: int) -> None:
        self.held += n
        self.peak = max(self.peak, self.held)

    async def reserve(self, n: int) -> None:
        """Take ``n`` bytes, waiting (behind earlier waiters) until they fit."""
        if not self._waiters and self._fits(n):
            self._take(n)
            return
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((n, waiter))
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():    # granted, then cancelled before it ran
                self.release(n)
            else:
                self._grant()                               # a later, smaller waiter may fit now
            raise

    def count(self, n: int) -> None:
        """Take ``n`` bytes without waiting (answers that must not queue behind data)."""
        self._take(n)

    def release(self, n: int) -> None:
        self.held -= n
        self._grant()

    def _grant(self) -> None:
        while self._waiters:
            n, waiter = self._waiters[0]
            if waiter.done():                 # cancelled while waiting
                self._waiters.popleft()
                continue
            if not self._fits(n):
                return
            self._waiters.popleft()
            self._take(n)
            waiter.set_result(None)


class AnswerHold:
    """What one request holds in the budget, released (all at once) when its answer has been handed over."""

    __slots__ = ("budget", "bytes")

    def __init__(self, budget: AnswerBudget) -> None:
        self.budget = budget
        self.bytes = 0

    async def reserve(self, n: int) -> None:
        await self.budget.reserve(n)
        self.bytes += n

    def count(self, n: int) -> None:
        self.budget.count(n)
        self.bytes += n

    def release(self) -> None:
        if self.bytes:
            self.budget.release(self.bytes)
            self.bytes = 0


# The hold of the request being handled: set by the connection before it calls a handler (a handler's
# coroutine, even run as its own task, sees the same hold object).
_CURRENT: contextvars.ContextVar[AnswerHold | None] = contextvars.ContextVar("kafkagroup_answer_hold", default=None)


def current_hold() -> AnswerHold | None:
    """The hold of the request being handled (None outside a connection: a handler called directly)."""
    return _CURRENT.get()


def set_current_hold(hold: AnswerHold | None) -> contextvars.Token[AnswerHold | None]:
    return _CURRENT.set(hold)


def reset_current_hold(token: contextvars.Token[AnswerHold | None]) -> None:
    _CURRENT.reset(token)
