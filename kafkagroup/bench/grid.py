"""The bench grid: seeded groups along Kafka's own benchmark axes (kafkagroup.scenarios), fresh or one
rebalance after churn (members left / joined, ownership carried over by next_generation from a sticky
assignment of the fresh group, so every peer sees the same owned partitions), with and without racks.

``--quick``: the 10k-partition rows (about a minute here). Full grid: up to 1M partitions x 2,000 members.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import kafkagroup
from kafkagroup.model import CompactGroup
from kafkagroup.scenarios import next_generation, random_group, uniform_group

RACKS = ("az1", "az2", "az3")


@dataclass
class Scenario:
    name: str
    group: CompactGroup
    churn: bool
    racks: bool

    @property
    def partitions(self) -> int:
        return int(self.group.partition_count.sum())

    @property
    def rounds(self) -> int:
        """Timed rounds per peer: fewer on big groups (their figures are stable and the peers slow)."""
        return 5 if self.partitions <= 20_000 else 3 if self.partitions <= 200_000 else 1


def with_racks(group: CompactGroup, seed: int = 7) -> CompactGroup:
    """KIP-881 inputs on the same group: member i of the original numbering (read from its name, so a
    churned group keeps each member's rack) on rack i % 3, every partition replicated on 2 of 3 racks."""
    rng = np.random.default_rng(seed)
    total = int(group.partition_count.sum())
    first = rng.integers(1, 4, size=total)
    second = (first + rng.integers(0, 2, size=total)) % 3 + 1  # a different rack
    group.racks = [None, *RACKS]
    group.replica_racks = np.stack([np.minimum(first, second), np.maximum(first, second)], axis=1).ravel().astype(np.int32)
    group.replica_offsets = np.arange(0, 2 * total + 1, 2, dtype=np.int64)
    group.member_rack = np.array([int(m[1:]) % 3 + 1 for m in group.members], dtype=np.int32)
    return group


def _churned(base: CompactGroup, *, remove: int = 0, add: int = 0, racks: bool = False) -> CompactGroup:
    fresh = with_racks(_copy(base)) if racks else base
    owner = kafkagroup.assign_arrays("sticky", **fresh.arrays()).owner
    after = next_generation(base, owner, remove=remove, add=add, seed=3)
    return with_racks(after) if racks else after


def _copy(group: CompactGroup) -> CompactGroup:
    return CompactGroup(topics=group.topics, members=group.members, racks=list(group.racks),
                        partition_count=group.partition_count, topic_base=group.topic_base,
                        sub_offsets=group.sub_offsets, sub_topics=group.sub_topics)


def scenarios(quick: bool) -> list[Scenario]:
    """The grid's rows, smallest first (built lazily would save memory; 1M-partition groups are ~20 MB)."""
    u10 = uniform_group(topics=100, partitions=100, members=100)
    r10 = random_group(topics=200, partitions=50, members=500, seed=42)
    rows = [
        Scenario("10k uniform x100 fresh", u10, False, False),
        Scenario("10k uniform x100 -10", _churned(u10, remove=10), True, False),
        Scenario("10k random50% x500 fresh", r10, False, False),
        Scenario("10k random50% x500 -10 +5", _churned(r10, remove=10, add=5), True, False),
        Scenario("10k random50% x500 racks -10", _churned(r10, remove=10, racks=True), True, True),
    ]
    if quick:
        return rows
    u100 = uniform_group(topics=100, partitions=1000, members=1000)
    r100 = random_group(topics=1000, partitions=100, members=1000, seed=42)
    u1m = uniform_group(topics=500, partitions=2000, members=2000)
    rows += [
        Scenario("100k uniform x1000 fresh", u100, False, False),
        Scenario("100k uniform x1000 -100", _churned(u100, remove=100), True, False),
        Scenario("100k random50% x1000 fresh", r100, False, False),
        Scenario("1M uniform x2000 fresh", u1m, False, False),
        Scenario("1M uniform x2000 -200", _churned(u1m, remove=200), True, False),
        Scenario("1M uniform x2000 racks -200", _churned(u1m, remove=200, racks=True), True, True),
    ]
    return rows
