"""The application around each simulated member: Kafka's poll loop, with a batch of records to process.

A real consumer application runs ``while True: records = consumer.poll(timeout); process(records)``.  That is
what makes rebalances slow in practice, and what this module models:

- each ``poll()`` returns up to ``max.poll.records`` records (the topics are assumed to have a backlog, so a
  member that owns partitions always gets a full batch); processing a record takes a time drawn from a
  seeded log-normal distribution (:class:`ProcessingModel`).  By default one draw holds for every record of
  a batch (``per="batch"``: the records of one fetch come from the same partitions and meet the same
  downstream state, so their costs are correlated; batch times then vary as much as a record's cost does,
  which is what keeps members' polls out of step).  ``per="record"`` draws every record independently: a
  batch then takes their sum, whose spread shrinks with the square root of ``max.poll.records`` -- members
  that started together stay nearly in step, which a real fleet does not;
- the member only acts on the group at a poll: a rejoin requested by the heartbeat thread (REBALANCE_IN_PROGRESS)
  waits until the batch in hand is processed, and so does applying a SyncGroup answer (Kafka runs
  ``onJoinComplete`` -- revoke / assign callbacks -- inside ``poll()``);
- a member that owns nothing is blocked inside ``poll()`` (waiting for an assignment): it acts at once;
- a batch that takes longer than ``max.poll.interval.ms`` makes the member leave the group when the interval
  expires, as Kafka's heartbeat thread does ("consumer poll timeout has expired"); it rejoins at the poll that
  follows the batch.

Cost: batch boundaries are generated lazily with numpy, a chunk at a time, and no timer fires at a boundary
unless the member needs a poll there, so a quiet member costs nothing per batch.  Limits: the sum of
``max.poll.records`` log-normal draws is taken from its normal approximation (same mean and variance) above
:data:`EXACT_SUM_RECORDS` records; fetch latency and offset commits are not modelled.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Optional

import numpy as np

from kafkagroup.client.member import GroupMember
from kafkagroup.client.transport import InProcessTransport
from kafkagroup.messages.api import SyncGroupRequest, SyncGroupResponse
from kafkagroup.messages.clock import Clock

__all__ = ["ProcessingModel", "PollLoop", "ApplicationMember", "PollGatedTransport", "EXACT_SUM_RECORDS"]

#: batches of at most this many records are the exact sum of per-record draws; larger ones use the normal
#: approximation of that sum (the central limit theorem; within a few percent from ~30 records on)
EXACT_SUM_RECORDS = 32
_CHUNK = 256   # batch boundaries generated per numpy call


@dataclass(frozen=True)
class ProcessingModel:
    """Records per poll and the time to process one record (log-normal: ``median`` ms, shape ``sigma``)."""

    max_poll_records: int = 500
    record_ms_median: float = 2.0
    record_ms_sigma: float = 0.5
    per: str = "batch"                  # "batch": one draw per batch; "record": one draw per record

    def __post_init__(self) -> None:
        if self.per not in ("batch", "record"):
            raise ValueError(f"per must be 'batch' or 'record', not {self.per!r}")

    @property
    def record_ms_mean(self) -> float:
        return self.record_ms_median * math.exp(self.record_ms_sigma ** 2 / 2)

    @property
    def batch_ms_mean(self) -> float:
        return self.max_poll_records * self.record_ms_mean

    @property
    def batch_ms_sd(self) -> float:
        s2 = self.record_ms_sigma ** 2
        sd = math.sqrt((math.exp(s2) - 1) * self.record_ms_median ** 2 * math.exp(s2))
        if self.per == "batch":
            return self.max_poll_records * sd
        return math.sqrt(self.max_poll_records) * sd

    def draw_batches(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` batch durations in whole milliseconds (at least 1)."""
        if self.per == "batch":
            draws = self.max_poll_records * rng.lognormal(math.log(self.record_ms_median), self.record_ms_sigma, n)
        elif self.max_poll_records <= EXACT_SUM_RECORDS:
            draws = rng.lognormal(math.log(self.record_ms_median), self.record_ms_sigma,
                                  (n, self.max_poll_records)).sum(axis=1)
        else:
            draws = rng.normal(self.batch_ms_mean, self.batch_ms_sd, n)
        return np.maximum(np.rint(draws), 1).astype(np.int64)


class PollLoop:
    """One member's application thread: when it polls next, given what it owns.

    ``consuming`` is True while the member owns partitions (it processes batch after batch; boundaries in
    ``_ends``, absolute ms); otherwise the application waits inside ``poll()`` and acts at once.
    ``on_poll_timeout`` is called at ``batch start + max_poll_interval_ms`` for a batch that is too long and
    ``on_batch_end_after_timeout`` when that batch is finally done.
    """

    def __init__(
        self, clock: Clock, model: ProcessingModel, rng: np.random.Generator, max_poll_interval_ms: int,
        on_poll_timeout: Callable[[], None], on_late_poll: Callable[[], None],
    ) -> None:
        self.clock = clock
        self.model = model
        self.rng = rng
        self.max_poll_interval_ms = int(max_poll_interval_ms)
        self.on_poll_timeout = on_poll_timeout
        self.on_late_poll = on_late_poll
        self.consuming = False
        self.poll_timeouts = 0
        self._ends = np.empty(0, dtype=np.int64)
        self._i = 0
        # a too-long batch is only possible if the distribution reaches max.poll.interval.ms
        self._can_time_out = (model.per == "batch" or model.max_poll_records <= EXACT_SUM_RECORDS
                              or model.batch_ms_mean + 12 * model.batch_ms_sd >= max_poll_interval_ms)
        self._watch: Any = None

    # -- what the member asks -------------------------------------------------------------------------
    def ms_to_next_poll(self) -> int:
        if not self.consuming:
            return 0
        now = self.clock.now_ms()
        return self._next_end(now) - now

    def at_next_poll(self, fn: Callable[[], None]) -> None:
        delay = self.ms_to_next_poll()
        if delay <= 0:
            fn()
        else:
            self.clock.call_at(self.clock.now_ms() + delay, fn)

    # -- what ownership changes do -------------------------------------------------------------------
    def owned_changed(self, owned: int) -> None:
        if owned and not self.consuming:
            self.consuming = True
            self._ends = np.empty(0, dtype=np.int64)
            self._i = 0
            self._extend(self.clock.now_ms())
        elif not owned and self.consuming:
            self.consuming = False
            self._cancel_watch()

    def stop(self) -> None:
        self.consuming = False
        self._cancel_watch()

    # -- timeline ------------------------------------------------------------------------------------
    def _next_end(self, now: int) -> int:
        while self._ends[-1] < now:
            self._extend(int(self._ends[-1]))
        i = int(np.searchsorted(self._ends, now, side="left"))
        if i > self._i:
            self._i = i
        return int(self._ends[self._i])

    def _extend(self, start: int) -> None:
        durations = self.model.draw_batches(self.rng, _CHUNK)
        ends = start + np.cumsum(durations)
        self._ends, self._i = ends, 0
        if self._can_time_out:
            self._arm_watch(start, durations, ends)

    def _arm_watch(self, start: int, durations: np.ndarray, ends: np.ndarray) -> None:
        """One timer per chunk: at the first too-long batch's deadline, else at the chunk's end (extend)."""
        self._cancel_watch()
        long = np.flatnonzero(durations > self.max_poll_interval_ms)
        if long.size:
            k = int(long[0])
            batch_start = start if k == 0 else int(ends[k - 1])
            batch_end = int(ends[k])
            self._watch = self.clock.call_at(batch_start + self.max_poll_interval_ms,
                                             lambda: self._poll_timeout(batch_end))
        else:
            last = int(ends[-1])
            self._watch = self.clock.call_at(last, lambda: self._chunk_done(last))

    def _chunk_done(self, last: int) -> None:
        self._watch = None
        if self.consuming and int(self._ends[-1]) == last:
            self._extend(last)

    def _poll_timeout(self, batch_end: int) -> None:
        self._watch = None
        if not self.consuming:
            return
        self.poll_timeouts += 1
        self.on_poll_timeout()
        self.clock.call_at(batch_end, self.on_late_poll)
        # the member leaves now and reports its partitions lost (client/poll_loop.py); it finishes its batch
        # and rejoins at the next poll

    def _cancel_watch(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
            self._watch = None


class PollGatedTransport(InProcessTransport):
    """In-process transport whose SyncGroup answers are applied at the application's next poll
    (Kafka hands the SyncGroup result to ``onJoinComplete`` inside ``poll()``)."""

    def __init__(self, coordinator: Any, clock: Clock, latency_ms: int, loop: PollLoop) -> None:
        super().__init__(coordinator, clock, latency_ms)
        self.loop = loop

    def sync_group(self, request: SyncGroupRequest, on_response: Callable[[SyncGroupResponse], None]) -> None:
        super().sync_group(request, lambda resp: self.loop.at_next_poll(lambda: on_response(resp)))


class ApplicationMember(GroupMember):
    """A :class:`GroupMember` whose polls happen when its application (a :class:`PollLoop`) polls.

    The one hook: GroupMember schedules every poll it needs through ``_schedule_poll(delay)``; here the
    delay is the time until the application's next poll instead of a fixed ``poll_delay_ms``.
    """

    loop: Optional[PollLoop] = None

    def _schedule_poll(self, delay_ms: Optional[int] = None) -> None:
        loop = self.loop
        super()._schedule_poll(loop.ms_to_next_poll() if loop is not None else delay_ms)
