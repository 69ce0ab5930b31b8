"""The application's poll loop as the member sees it: automatic polls (``auto_poll``), the
``max.poll.interval.ms`` watch (a stalled application leaves the group, as Kafka's heartbeat thread makes it),
and the periodic metadata refresh (``metadata.max.age.ms``).

:class:`PollLoopMixin` is one part of :class:`~kafkagroup.client.member.GroupMember` and works on its state.
"""
from __future__ import annotations

from typing import Optional

from kafkagroup.client.generation import MemberState

__all__ = ["PollLoopMixin"]


class PollLoopMixin:
    """Timers standing in for the application's ``poll()`` calls."""

    def _arm_poll_timer(self) -> None:
        """max.poll.interval.ms watch: only an application that polls explicitly or has stalled can be late
        (an auto-polling member polls at every event)."""
        if not self.alive or (self.auto_poll and not self.stalled):
            self._timers.cancel("poll")
            return
        self._timers.arm_at("poll", self._last_poll_ms + self.config.max_poll_interval_ms, self._poll_timeout)

    def _poll_timeout(self) -> None:
        self._timers.fired("poll")
        if not self.alive or self.state is MemberState.UNJOINED:
            return
        # Kafka's heartbeat thread: "consumer poll timeout has expired" -> leave the group.  The partitions are
        # reported lost at once (Java reports them at the application's next poll): once the LeaveGroup is sent
        # the coordinator may hand them on, and the member must not own what it no longer holds (session_guard)
        self._timers.cancel("heartbeat")
        self._lose_all()
        self._maybe_leave_group("consumer poll timeout has expired")
        self.state = MemberState.UNJOINED
        self._notify("state", self.state)

    def _metadata_tick(self) -> None:
        self._timers.fired("metadata")
        if not self.alive:
            return
        self.refresh_metadata()
        self._timers.arm("metadata", self.config.metadata_max_age_ms, self._metadata_tick)

    def _schedule_poll(self, delay_ms: Optional[int] = None) -> None:
        if not self.alive or self.stalled or not self.auto_poll:
            return
        if "poll_now" in self._timers:
            return
        delay = self.poll_delay_ms if delay_ms is None else delay_ms
        self._timers.arm("poll_now", delay, self._auto_poll)

    def _auto_poll(self) -> None:
        self._timers.fired("poll_now")
        if not self.alive or self.stalled:
            return
        self._last_poll_ms = self.clock.now_ms()
        self._poll_once()
