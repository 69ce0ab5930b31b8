"""The bench's peers, each answering one question the same way: given a group and a strategy, what is
the assignment (per member, global partition ids) and how long did the assignor itself take?

- kafkagroup: the native engine through :func:`kafkagroup.assign_arrays` (wall time of the call, input
  validation included).
- kafka-python: its RangePartitionAssignor, RoundRobinPartitionAssignor, StickyPartitionAssignor and
  CooperativeStickyAssignor, fed already decoded metadata (no protocol decoding timed); each call capped
  with SIGALRM (main thread only) and reported as "> cap". It has no rack-aware assignors: rack rows are
  reported as not applicable rather than run on a different input.
- Java: Apache Kafka's own classes through :mod:`kafkagroup.bench.java_peer`, capped too (the JVM is
  killed and restarted past the cap).
"""
from __future__ import annotations

import signal
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import numpy as np

import kafkagroup
from kafkagroup.bench.java_peer import JavaAssignors, JavaTimeout
from kafkagroup.model import CompactGroup


@dataclass
class PeerRun:
    """One peer on one input. ``per_member`` is None when there is no assignment to check (not run, capped,
    failed); ``status`` then says why: "ok", "> 60 s", "n/a: ...", "fails: ..."."""
    times_ms: list[float] = field(default_factory=list)
    per_member: list[np.ndarray] | None = None
    status: str = "ok"

    @property
    def median_ms(self) -> float | None:
        return statistics.median(self.times_ms) if self.times_ms and self.status == "ok" else None


def split_owner(owner: np.ndarray, members: int) -> list[np.ndarray]:
    """owner[] -> per-member ascending global ids (vectorised; -1 = unassigned is dropped)."""
    assigned = np.flatnonzero(owner >= 0)
    by_member = assigned[np.argsort(owner[assigned], kind="stable")]
    bounds = np.searchsorted(owner[by_member], np.arange(members + 1)) if by_member.size else np.zeros(members + 1, int)
    return [by_member[bounds[i]:bounds[i + 1]] for i in range(members)]


class KafkagroupPeer:
    name = f"kafkagroup {kafkagroup.__version__}" if hasattr(kafkagroup, "__version__") else "kafkagroup"
    strategies = ("range", "roundrobin", "sticky", "cooperative-sticky")

    def run(self, strategy: str, group: CompactGroup, *, racks: bool, rounds: int, cap_s: float) -> PeerRun:
        arrays = group.arrays()
        kafkagroup.assign_arrays(strategy, **arrays)  # warm-up (first-touch page faults, caches)
        times, result = [], None
        for _ in range(rounds):
            start = time.perf_counter()
            result = kafkagroup.assign_arrays(strategy, **arrays)
            times.append((time.perf_counter() - start) * 1000)
        return PeerRun(times, split_owner(result.owner, len(group.members)))


class _Timeout(Exception):
    pass


def capped(fn: Callable[[], Any], cap_s: float) -> tuple[Any, float]:
    """(result, ms) of fn(), raising _Timeout past `cap_s` (SIGALRM: pure-Python peers stop cleanly).

    The alarm repeats every 50 ms after the cap until fn() ends. Python drops an exception raised while it
    runs a finalizer (``__del__``, a weakref callback such as WeakKeyDictionary's) and reports it as
    "Exception ignored in ...", so an alarm that lands in one raises nothing and the next one stops fn().
    A finalizer called from C code that is neither is not recognised: its alarm is still lost (and
    reported), and the repeat still stops fn(). Once fn() has ended, a late alarm raises nothing."""
    running = True

    def on_alarm(signum: int, frame: Any) -> None:
        if running and not _in_finalizer(frame):
            raise _Timeout()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, cap_s, 0.05)
    try:
        start = time.perf_counter()
        out = fn()
        return out, (time.perf_counter() - start) * 1000
    finally:
        running = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


_FINALIZER_FILES = ("weakref.py", "_weakrefset.py")


def _in_finalizer(frame: Any) -> bool:
    """Whether the interrupted code runs inside ``__del__`` or the weakref module (where Python's own
    weakref callbacks live): an exception raised there would be dropped."""
    while frame is not None:
        code = frame.f_code
        if code.co_name == "__del__" or code.co_filename.endswith(_FINALIZER_FILES):
            return True
        frame = frame.f_back
    return False


class KafkaPythonCluster:
    """The two calls kafka-python's assignors make on ClusterMetadata, over ``{topic: partition count}``
    (also the stand-in the benches in benches/ hand kafka-python)."""

    def __init__(self, topics: dict[str, int]) -> None:
        self._parts = {t: set(range(n)) for t, n in topics.items()}

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return self._parts.get(topic)

    def topics(self) -> set[str]:
        return set(self._parts)


class KafkaPythonPeer:
    strategies = ("range", "roundrobin", "sticky", "cooperative-sticky")

    def __init__(self) -> None:
        import kafka
        from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
        from kafka.coordinator.assignors.range import RangePartitionAssignor
        from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
        from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
        self.name = f"kafka-python {kafka.__version__}"
        self._classes = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
                         "sticky": StickyPartitionAssignor, "cooperative-sticky": CooperativeStickyAssignor}

    def _members(self, strategy: str, group: CompactGroup, instance_ids: list[str | None] | None) -> list[Any]:
        from kafka.coordinator.assignors.sticky.user_data import StickyAssignorUserData
        from kafka.structs import TopicPartition as KpTopicPartition  # noqa: F401 (kafka-python's own tuple)
        members = []
        for i, mid in enumerate(group.members):
            topics = [group.topics[t] for t in group.sub_topics[group.sub_offsets[i]:group.sub_offsets[i + 1]].tolist()]
            by_topic: dict[str, list[int]] = {}
            if group.owned_offsets is not None:
                ids = group.owned_partitions[group.owned_offsets[i]:group.owned_offsets[i + 1]]
                names, numbers = group.partition_names(ids)
                for t, p in zip(names, numbers):
                    by_topic.setdefault(t, []).append(p)
            generation = int(group.generation[i]) if group.generation is not None else -1
            owned = [SimpleNamespace(topic=t, partitions=ps) for t, ps in by_topic.items()]
            user_data = (StickyAssignorUserData(list(by_topic.items()), generation)
                         if strategy == "sticky" and by_topic else b"")
            metadata = SimpleNamespace(topics=topics, user_data=user_data, owned_partitions=owned,
                                       generation_id=generation)
            members.append(SimpleNamespace(member_id=mid, metadata=metadata,
                                           group_instance_id=instance_ids[i] if instance_ids else None))
        return members

    def run(self, strategy: str, group: CompactGroup, *, racks: bool, rounds: int, cap_s: float,
            instance_ids: list[str | None] | None = None) -> PeerRun:
        if racks:
            return PeerRun(status="n/a: no rack-aware assignors")
        cluster = KafkaPythonCluster(dict(zip(group.topics, group.partition_count.tolist())))
        members = self._members(strategy, group, instance_ids)
        times, out = [], None
        for _ in range(rounds):
            try:
                out, ms = capped(lambda: self._classes[strategy]().assign(cluster, members), cap_s)
            except _Timeout:
                return PeerRun(status=f"> {cap_s:g} s")
            except Exception as e:  # the peer's own defect: reported in the row, the bench goes on
                return PeerRun(status=f"fails: {type(e).__name__}: {e}"[:120])
            times.append(ms)
            if sum(times) > 1000:  # slow peers: one round is evidence enough
                break
        index = {t: i for i, t in enumerate(group.topics)}
        per_member = []
        for mid in group.members:
            assignment = out.get(mid)
            parts = assignment.partitions() if assignment is not None else []
            per_member.append(np.array([group.topic_base[index[tp.topic]] + tp.partition for tp in parts],
                                       dtype=np.int64))
        return PeerRun(times, per_member)


class JavaPeer:
    strategies = ("range", "roundrobin", "sticky", "cooperative-sticky")

    def __init__(self, driver: JavaAssignors) -> None:
        self.driver = driver
        self.name = driver.name

    def settle(self) -> None:
        """Wait for the JVM to finish the last call's JIT and collection work (run_grid calls it before
        timing any peer, so no peer's timing overlaps it)."""
        self.driver.settle()

    def run(self, strategy: str, group: CompactGroup, *, racks: bool, rounds: int, cap_s: float,
            instance_ids: list[str | None] | None = None) -> PeerRun:
        # The cap covers a warm-up call and a timed one (each about as long): past 2 x cap + 5 s, at least
        # one call took longer than the cap, reported as "> cap" like kafka-python's.
        try:
            # Warm-up: up to 20 calls (the JIT compiles the hot loops) within the budget; slow assignors
            # stop after one warm-up call, which is most of the JIT's work on a big input.
            result = self.driver.assign(strategy, group, instance_ids=instance_ids, warmup=20, rounds=rounds,
                                        budget_ms=int(min(cap_s, 10) * 300), timeout_s=2 * cap_s + 5)
        except JavaTimeout:
            return PeerRun(status=f"> {cap_s:g} s")
        except RuntimeError as e:
            return PeerRun(status=f"fails: {e}"[:160])
        return PeerRun(result.times_ms, result.assignment)
