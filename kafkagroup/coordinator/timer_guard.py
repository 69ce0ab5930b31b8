"""The coordinator's timer boundary: no timer callback ever raises out of the clock.

Every timer the coordinator arms (join phase, pending sync, sessions, pending members, offset expiry) is
armed through a :class:`GuardedClock`, the only clock the rebalance engine holds.  A callback that raises
is a kafkagroup defect, never a client's doing -- but left alone it would escape from
``ManualClock.advance`` into the caller, or be printed by asyncio as "Exception in callback" and dropped,
either way leaving the group half-changed with no timer to move it on (a PreparingRebalance group with no
join timer answers nobody, ever).  Here the exception is caught and logged with its traceback, and when the
timer belongs to a group, ``on_failure(group)`` puts that group back into a consistent state (the engine's
:meth:`~kafkagroup.coordinator.rebalance.RebalanceEngine.reset_failed_group`).  A failure of the recovery
itself is logged too and never raised.

Kafka's runtime does the first half (``CoordinatorRuntime.EventBasedCoordinatorTimer`` logs a failed
timer operation, and drops it when it is not retried, as the classic join timer is not); it leaves the group
as the failed operation left it.

Only ``Exception`` is caught: ``KeyboardInterrupt`` / ``SystemExit`` still stop the loop.  Cost: one extra
call per fired timer.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable

from kafkagroup.messages.clock import Clock, TimerHandle

if TYPE_CHECKING:  # pragma: no cover
    from kafkagroup.coordinator.group import ClassicGroup

__all__ = ["GuardedClock"]

log = logging.getLogger("kafkagroup.coordinator")


class GuardedClock:
    """A :class:`Clock` whose timer callbacks cannot raise: failures are logged and handed to ``on_failure``.

    ``call_at(deadline, callback, group=g)`` names the group the timer acts on, so a failure can be repaired;
    without ``group`` a failure is only logged.
    """

    def __init__(self, clock: Clock, on_failure: Callable[["ClassicGroup"], None]) -> None:
        self.clock = clock
        self._on_failure = on_failure

    def now_ms(self) -> int:
        return self.clock.now_ms()

    def call_at(self, deadline_ms: int, callback: Callable[[], None], *,
                group: "ClassicGroup | None" = None) -> TimerHandle:
        return self.clock.call_at(deadline_ms, lambda: self._run(callback, group))

    def _run(self, callback: Callable[[], None], group: "ClassicGroup | None") -> None:
        try:
            callback()
        except Exception:
            where = f" of group {group.group_id}" if group is not None else ""
            log.exception("a coordinator timer%s failed (a kafkagroup defect)", where)
            if group is None:
                return
            try:
                self._on_failure(group)
            except Exception:
                log.exception("group %s could not be reset after its timer failed", group.group_id)
