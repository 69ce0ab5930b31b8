"""Injected time for the coordinator: a :class:`Clock` protocol, a manual test clock and a real-time clock.

Times are integer milliseconds.  The coordinator only ever asks two things of a clock: the current time
(``now_ms()``) and "call this function at deadline d" (``call_at(d, fn)``, returning a handle with
``cancel()``).  Callbacks always run on the thread that drives the clock, so the coordinator needs no locks.

:class:`ManualClock` has exactly the firing semantics of spec §7.1 (Kafka's ``MockCoordinatorTimer``)::

    >>> clock = ManualClock()
    >>> timer = clock.call_at(50, lambda: print("fired at", clock.now_ms()))
    >>> clock.advance(49)
    >>> clock.advance(1)          # due means deadline <= now
    fired at 50

``advance(ms)`` first moves ``now`` by ``ms`` and then repeatedly runs the earliest pending timer whose
deadline is ``<= now``; a callback sees the *new* ``now`` (a timer re-armed by a late timer is relative to
the new ``now``), and timers scheduled while firing run in the same ``advance`` if already due.  Timers with
equal deadlines run in scheduling order (``tie_break="fifo"``, default) or the reverse (``"lifo"``); the
spec's scripts give the same outcome under both, and the scenario tests run under both.

:class:`AsyncioClock` is the real-time clock: epoch milliseconds advanced by the loop's monotonic time,
timers on ``loop.call_at`` (see :mod:`kafkagroup.coordinator.aio`).
"""
from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from typing import Callable, Literal, Protocol, runtime_checkable

__all__ = ["Clock", "TimerHandle", "ManualClock", "AsyncioClock"]


@runtime_checkable
class TimerHandle(Protocol):
    """What ``Clock.call_at`` returns."""

    def cancel(self) -> None:
        """Prevent the callback from running (no effect once it ran)."""


@runtime_checkable
class Clock(Protocol):
    """Millisecond time source plus one-shot timers."""

    def now_ms(self) -> int:
        """Current time in milliseconds."""

    def call_at(self, deadline_ms: int, callback: Callable[[], None]) -> TimerHandle:
        """Run ``callback()`` once, when the time reaches ``deadline_ms`` (at once on the next firing if past)."""


class _ManualTimer:
    __slots__ = ("deadline", "callback", "cancelled", "_clock")

    def __init__(self, clock: "ManualClock", deadline: int, callback: Callable[[], None]) -> None:
        self._clock = clock
        self.deadline = deadline
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        if not self.cancelled:
            self.cancelled = True
            self.callback = _noop  # drop references held by the callback
            self._clock._note_cancelled()


def _noop() -> None:
    return None


class ManualClock:
    """Test clock with spec §7.1 semantics; time moves only through :meth:`advance` / :meth:`advance_to`.

    Storage: a binary heap of (deadline, sequence, timer); cancelled timers are dropped lazily and the heap
    is compacted when more than half of it is cancelled, so memory stays proportional to live timers even
    when millions of timers are re-armed between two advances.
    """

    def __init__(self, start_ms: int = 0, *, tie_break: Literal["fifo", "lifo"] = "fifo") -> None:
        if tie_break not in ("fifo", "lifo"):
            raise ValueError(f"tie_break must be 'fifo' or 'lifo', not {tie_break!r}")
        self._now = int(start_ms)
        self._heap: list[tuple[int, int, _ManualTimer]] = []
        self._seq = itertools.count(0, 1 if tie_break == "fifo" else -1)
        self._cancelled = 0
        self._firing = False

    def now_ms(self) -> int:
        return self._now

    def call_at(self, deadline_ms: int, callback: Callable[[], None]) -> _ManualTimer:
        timer = _ManualTimer(self, int(deadline_ms), callback)
        heapq.heappush(self._heap, (timer.deadline, next(self._seq), timer))
        return timer

    def advance(self, ms: int) -> None:
        """``now += ms``, then run every timer that is due (deadline <= now), earliest first."""
        if ms < 0:
            raise ValueError(f"cannot move a clock backwards (advance by {ms} ms)")
        self.advance_to(self._now + int(ms))

    def advance_to(self, t_ms: int) -> None:
        """Set ``now = t_ms`` (not earlier than now), then run the due timers."""
        if t_ms < self._now:
            raise ValueError(f"cannot move a clock backwards from {self._now} to {t_ms}")
        if self._firing:
            raise RuntimeError("advance() called from inside a timer callback")
        self._now = int(t_ms)
        self._firing = True
        try:
            heap = self._heap
            while heap and heap[0][0] <= self._now:
                _, _, timer = heapq.heappop(heap)
                if timer.cancelled:
                    self._cancelled -= 1
                    continue
                timer.cancelled = True  # fired: a later cancel() is a no-op and is not counted
                callback, timer.callback = timer.callback, _noop
                callback()
        finally:
            self._firing = False

    def pending(self) -> int:
        """Number of timers scheduled and not cancelled or fired."""
        return len(self._heap) - self._cancelled

    def next_deadline(self) -> int | None:
        """Earliest deadline of a live timer, or None. Cancelled timers on top of the heap are dropped
        on the way (in place, so it is safe from inside a timer callback): amortised O(log n)."""
        heap = self._heap
        while heap and heap[0][2].cancelled:
            heapq.heappop(heap)
            self._cancelled -= 1
        return heap[0][0] if heap else None

    def _note_cancelled(self) -> None:
        self._cancelled += 1
        if self._cancelled > 64 and self._cancelled * 2 > len(self._heap) and not self._firing:
            self._heap = [entry for entry in self._heap if not entry[2].cancelled]
            heapq.heapify(self._heap)
            self._cancelled = 0


class AsyncioClock:
    """Real time on an asyncio event loop: timers are ``loop.call_at`` handles.

    ``now_ms()`` is epoch milliseconds (commit and state timestamps are stored and compared across
    restarts, as Kafka's are) advanced by the loop's monotonic clock: the offset between the two is taken
    once, so a wall-clock step never makes timers jump.  All coordinator calls and timer callbacks run on
    the loop's thread.  ``loop`` defaults to the running loop at the first use.  asyncio may run a timer
    up to its clock resolution early; while a timer runs, ``now_ms()`` is never less than its deadline, so
    a callback always observes itself as due (and time never goes backwards).
    """

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._loop = loop
        self._offset_s: float | None = None
        self._floor = 0

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    def _epoch_offset(self) -> float:
        if self._offset_s is None:
            self._offset_s = time.time() - self.loop.time()
        return self._offset_s

    def now_ms(self) -> int:
        now = int((self.loop.time() + self._epoch_offset()) * 1000.0)
        if now < self._floor:
            return self._floor
        self._floor = now
        return now

    def call_at(self, deadline_ms: int, callback: Callable[[], None]) -> asyncio.TimerHandle:
        deadline_ms = int(deadline_ms)

        def fire() -> None:
            if self._floor < deadline_ms:
                self._floor = deadline_ms
            callback()

        return self.loop.call_at(deadline_ms / 1000.0 - self._epoch_offset(), fire)
