"""The object API: names in, ``TopicPartition`` lists out.

>>> r = assign("range", {"t0": 3, "t1": 3}, {"C0": {"topics": ["t0", "t1"]}, "C1": {"topics": ["t0", "t1"]}})
>>> r.assignment["C0"], r.assignment["C1"]
([t0-0, t0-1, t1-0, t1-1], [t0-2, t1-2])
"""
from __future__ import annotations

import gc
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kafkagroup.engine import Metrics, assign_arrays
from kafkagroup.errors import InvalidGroupError
from kafkagroup.model import CompactGroup, TopicSpec, build_group
from kafkagroup.structs import TopicPartition


@dataclass(frozen=True)
class AssignmentResult:
    """What one assignment produced.

    ``assignment`` maps every member id to its partitions, sorted by (topic, partition) -- Java's
    order for roundrobin and rack-aware range; plain range and the sticky assignors return Java
    lists in HashMap order, which carries no meaning. ``withheld`` lists what a cooperative assignor
    holds back this round. ``engine_us`` is the native call alone; ``total_us`` includes interning
    names and building the lists.
    """

    strategy: str
    assignment: dict[str, list[TopicPartition]]
    withheld: list[TopicPartition]
    metrics: Metrics
    engine_us: float
    total_us: float
    unknown_topics: list[str] = field(default_factory=list)
    dropped_claims: int = 0


@contextmanager
def _no_cyclic_gc() -> Iterator[None]:
    """Pause the cyclic collector while building many small tuples: at 1M partitions its generation
    passes, triggered by the allocations alone (tuples hold no cycles), doubled the time to build the
    lists. Reference counting still frees everything; the collector resumes as it was."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def partitions_by_member(group: CompactGroup, owner: np.ndarray) -> dict[str, list[TopicPartition]]:
    """Per-member TopicPartition lists from owner[], ascending global id within each member."""
    members = group.members
    assigned = np.flatnonzero(owner >= 0)
    order = assigned[np.argsort(owner[assigned], kind="stable")]
    counts = np.bincount(owner[assigned], minlength=len(members)).tolist()
    with _no_cyclic_gc():
        topics, partitions = group.partition_names(order)
        tps = list(map(TopicPartition, topics, partitions))
        out: dict[str, list[TopicPartition]] = {}
        start = 0
        for member, count in zip(members, counts):
            out[member] = tps[start:start + count]
            start += count
    return out


def assign(strategy: str, partitions_per_topic: Mapping[str, TopicSpec], subscriptions: Mapping[str, Any], *,
           partition_racks: Mapping[str, Sequence[Sequence[str | None] | None]] | None = None,
           strict: bool = True) -> AssignmentResult:
    """Assign the partitions of `partitions_per_topic` to the members of `subscriptions`.

    `strategy` is a Kafka protocol name ("range", "roundrobin", ...); `partitions_per_topic` maps a
    topic to its partition count or to one replica-rack list per partition; `subscriptions` maps a
    member id to ``{"topics": [...], "owned": [(topic, p), ...], "generation": g, "rack": r,
    "instance": group_instance_id}`` (every key but topics optional; Subscription objects work too).
    Raises :class:`~kafkagroup.errors.InvalidGroupError` naming the member, topic or partition at fault.
    """
    start = time.perf_counter()
    if not isinstance(strategy, str):
        raise InvalidGroupError(f"strategy must be a protocol name, got {strategy!r}")
    group = build_group(partitions_per_topic, subscriptions, partition_racks=partition_racks, strict=strict)
    result = assign_arrays(strategy, **group.arrays())
    assignment = partitions_by_member(group, result.owner)
    topics, partitions = group.partition_names(result.withheld)
    withheld = list(map(TopicPartition, topics, partitions))
    return AssignmentResult(strategy=strategy, assignment=assignment, withheld=withheld, metrics=result.metrics,
                            engine_us=result.engine_us, total_us=(time.perf_counter() - start) * 1e6,
                            unknown_topics=group.unknown_topics, dropped_claims=group.dropped_claims)
