"""The member's named one-shot timers over the injected clock (heartbeat, poll, backoff, request timeout, ...).

At most one timer per name is armed: arming a name again cancels the earlier one, so a callback that re-arms
itself never leaves a duplicate behind.  A timer's callback calls :meth:`TimerSet.fired` first, which forgets
its (now spent) handle so that ``name in timers`` reads "armed and not yet fired".
"""
from __future__ import annotations

from typing import Callable

from kafkagroup.messages.clock import Clock, TimerHandle

__all__ = ["TimerSet"]


class TimerSet:
    """Named timers of one member, armed on ``clock``."""

    __slots__ = ("_clock", "_handles")

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._handles: dict[str, TimerHandle] = {}

    def arm(self, name: str, delay_ms: int, fn: Callable[[], None]) -> None:
        """Call ``fn`` ``delay_ms`` from now, replacing the timer of that name if one is armed."""
        self.arm_at(name, self._clock.now_ms() + int(delay_ms), fn)

    def arm_at(self, name: str, deadline_ms: int, fn: Callable[[], None]) -> None:
        """Call ``fn`` at ``deadline_ms`` (clock time), replacing the timer of that name if one is armed."""
        old = self._handles.pop(name, None)
        if old is not None:
            old.cancel()
        self._handles[name] = self._clock.call_at(deadline_ms, fn)

    def cancel(self, name: str) -> None:
        """Disarm the timer of that name, if any."""
        old = self._handles.pop(name, None)
        if old is not None:
            old.cancel()

    def fired(self, name: str) -> None:
        """Called by a timer's own callback: forget its spent handle (nothing to cancel)."""
        self._handles.pop(name, None)

    def cancel_all(self) -> None:
        for handle in self._handles.values():
            handle.cancel()
        self._handles.clear()

    def __contains__(self, name: object) -> bool:
        return name in self._handles
