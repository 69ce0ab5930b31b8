"""An asyncio event loop whose time the test controls: it never waits, it jumps.

``VirtualTimeLoop.time()`` is a counter that starts at 0 s and moves only when the loop has nothing ready
to run: where a real loop would block in ``select(timeout)`` until the next timer, this one polls the
selector without blocking and, if nothing is ready, adds ``timeout`` to its time.  So ``loop.call_at``
timers (hence :class:`~kafkagroup.messages.clock.AsyncioClock` and the coordinator's timers) fire in
deadline order at exactly their deadlines, and ``await asyncio.sleep(s)`` means "let ``s`` seconds of loop
time pass" -- deterministic, and no wall time spent waiting.  Usage::

    with asyncio.Runner(loop_factory=VirtualTimeLoop) as runner:
        runner.run(scenario())

Limit: a loop with no timer and nothing ready would block forever on a real selector; here that raises
RuntimeError (in a test it is a deadlock).  I/O from other threads or sockets is still polled, but the
loop does not wait for it.
"""
from __future__ import annotations

import asyncio
import selectors
from typing import Any

__all__ = ["VirtualTimeLoop"]


class _JumpingSelector:
    """Delegates to a real selector, but ``select`` never blocks: it advances the loop's time instead."""

    def __init__(self, loop: "VirtualTimeLoop") -> None:
        self._inner = selectors.DefaultSelector()
        self._loop = loop

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        events = self._inner.select(0)
        if events or timeout == 0:
            return events
        if timeout is None:
            raise RuntimeError("the event loop would wait forever: no timer is scheduled and nothing is ready")
        self._loop._now += timeout
        return []

    def __getattr__(self, name: str) -> Any:   # register, unregister, modify, get_key, get_map, close
        return getattr(self._inner, name)


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """See the module docstring."""

    def __init__(self) -> None:
        self._now = 0.0
        super().__init__(selector=_JumpingSelector(self))  # type: ignore[arg-type]

    def time(self) -> float:
        return self._now
