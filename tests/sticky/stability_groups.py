"""Seeded random groups for the stability properties of the sticky assignors, and the rebalance rounds
they are put through (feeding a result back as the next round's owned partitions).

A group: 1-5 topics of 0-12 partitions, 1-7 members, subscriptions uniform (every topic, or one shared
subset) or mixed (a random subset each), and, when rack-aware, member racks 1-3 or none and replica racks
(any subset of the three, empty included). Its owned partitions come from one of: nothing; the
assignment of an earlier, different group (a member joined or left, subscriptions changed); or
inconsistent claims (a partition claimed by two members at the same or at different generations, claims
of unsubscribed topics, unknown generation -1). The owned partitions never depend on the sticky engine, so
two builds see the same inputs.

Run as a script to print quality figures of the engine found first on sys.path, over the same groups
(for a baseline against another build: PYTHONPATH=<tree> python stability_groups.py 2000):
  python tests/sticky/stability_groups.py [GROUPS]
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, replace

import numpy as np

from kafkagroup.engine import assign_arrays

RACKS = 3


@dataclass(frozen=True)
class StabilityGroup:
    counts: list[int]
    subs: list[list[int]]                   # member -> sorted topic ids
    member_rack: list[int] | None           # None: no racks at all; 0: this member has no rack
    replicas: list[list[int]] | None        # partition -> replica rack ids (1..RACKS)
    owned: list[list[int]]                  # member -> claimed global partition ids
    generation: list[int]

    @property
    def topic_of(self) -> list[int]:
        return [t for t, c in enumerate(self.counts) for _ in range(c)]

    def arrays(self) -> dict:
        M = len(self.subs)
        sub_offsets = np.zeros(M + 1, np.int64)
        np.cumsum([len(s) for s in self.subs], out=sub_offsets[1:])
        out = dict(partition_count=np.array(self.counts, np.int32), sub_offsets=sub_offsets,
                   sub_topics=np.array([t for s in self.subs for t in s], np.int32))
        owned_offsets = np.zeros(M + 1, np.int64)
        np.cumsum([len(o) for o in self.owned], out=owned_offsets[1:])
        out.update(owned_offsets=owned_offsets, owned_partitions=np.array([p for o in self.owned for p in o], np.int32),
                   generation=np.array(self.generation, np.int32))
        if self.member_rack is not None:
            replica_offsets = np.zeros(len(self.replicas) + 1, np.int64)
            np.cumsum([len(r) for r in self.replicas], out=replica_offsets[1:])
            out.update(member_rack=np.array(self.member_rack, np.int32), replica_offsets=replica_offsets,
                       replica_racks=np.array([x for r in self.replicas for x in r], np.int32))
        return out

    def with_owned(self, owner: list[int], generation: int) -> "StabilityGroup":
        """Every member claims what `owner` gives it, at `generation` (a result fed back)."""
        owned = [[] for _ in self.subs]
        for p, m in enumerate(owner):
            if m >= 0:
                owned[m].append(p)
        return replace(self, owned=owned, generation=[generation] * len(self.subs))


def _subscriptions(rng: np.random.Generator, T: int, M: int) -> list[list[int]]:
    shape = rng.integers(3)
    if shape == 0:                                   # uniform: every topic
        return [list(range(T)) for _ in range(M)]
    if shape == 1:                                   # uniform: one shared subset
        s = sorted(rng.choice(T, int(rng.integers(1, T + 1)), replace=False).tolist())
        return [list(s) for _ in range(M)]
    return [sorted(rng.choice(T, int(rng.integers(1, T + 1)), replace=False).tolist()) for _ in range(M)]


def random_group(seed: int, racks: bool | None = None) -> StabilityGroup:
    """The seed's group with no owned partitions (racks: True/False forces rack-aware or not)."""
    rng = np.random.default_rng(seed)
    T = int(rng.integers(1, 6))
    counts = [int(c) for c in rng.integers(0, 13, size=T)]
    M = int(rng.integers(1, 8))
    subs = _subscriptions(rng, T, M)
    if racks is None:
        racks = bool(rng.random() < 0.75)
    member_rack = replicas = None
    if racks:
        member_rack = [0 if rng.random() < 0.2 else int(rng.integers(1, RACKS + 1)) for _ in range(M)]
        replicas = [sorted(rng.choice(np.arange(1, RACKS + 1), int(rng.integers(0, RACKS + 1)), replace=False).tolist())
                    for _ in range(sum(counts))]
    return StabilityGroup(counts, subs, member_rack, replicas, [[] for _ in range(M)], [-1] * M)


def churned_group(seed: int, racks: bool | None = None) -> StabilityGroup:
    """The seed's group with owned partitions: none, an earlier group's assignment, or inconsistent claims."""
    g = random_group(seed, racks)
    rng = np.random.default_rng(seed + 1_000_003)
    M, P = len(g.subs), sum(g.counts)
    kind = int(rng.integers(3))
    if kind == 0 or P == 0:
        return g
    if kind == 1:
        # An earlier group: one member more or less, some subscriptions different; its assignment,
        # mapped onto this group's members (claims of topics a member no longer subscribes to included).
        T = len(g.counts)
        earlier_subs = [list(s) if rng.random() < 0.7 else
                        sorted(rng.choice(T, int(rng.integers(1, T + 1)), replace=False).tolist()) for s in g.subs]
        extra = int(rng.integers(-1, 2))
        if extra > 0:
            earlier_subs.append(sorted(rng.choice(T, int(rng.integers(1, T + 1)), replace=False).tolist()))
        elif extra < 0 and M > 1:
            earlier_subs.pop(int(rng.integers(M)))
        E = len(earlier_subs)
        earlier = StabilityGroup(g.counts, earlier_subs, None if g.member_rack is None else
                                 [g.member_rack[m] if m < M else int(rng.integers(0, RACKS + 1)) for m in range(E)],
                                 g.replicas, [[] for _ in range(E)], [-1] * E)
        # roundrobin: a balanced earlier state that does not depend on the sticky engine under test
        owner = assign_arrays("roundrobin", **earlier.arrays()).owner.tolist()
        owned = [[p for p, m in enumerate(owner) if m == i] for i in range(min(E, M))] + [[] for _ in range(M - E)]
        return replace(g, owned=owned, generation=[3] * M)
    # Inconsistent claims: random partitions (any topic), duplicates across members, mixed generations.
    owned = [sorted(set(rng.choice(P, int(rng.integers(0, P + 1)), replace=True).tolist())) for _ in range(M)]
    generation = [int(rng.integers(-1, 4)) for _ in range(M)]
    return replace(g, owned=owned, generation=generation)


def run(strategy: str, g: StabilityGroup):
    return assign_arrays(strategy, **g.arrays())


def rack_matches(owner: list[int], g: StabilityGroup) -> int:
    """Partitions on a member in one of their replica racks (a member without rack matches all)."""
    if g.member_rack is None:
        return 0
    return sum(1 for p, m in enumerate(owner)
               if m >= 0 and (g.member_rack[m] == 0 or g.member_rack[m] in g.replicas[p]))


def figures(groups: int) -> dict[str, int]:
    """Quality over `groups` churned rack-aware groups, sticky and cooperative-sticky's first round."""
    out = {"groups": groups, "balance_gap": 0, "spread": 0, "rack_matches": 0, "moved": 0,
           "coop_withheld": 0, "coop_rack_matches": 0}
    for seed in range(groups):
        g = churned_group(seed, racks=True)
        r = run("sticky", g)
        owner = r.owner.tolist()
        out["balance_gap"] += r.metrics.balance_gap
        out["spread"] += r.metrics.max_load - r.metrics.min_load
        out["rack_matches"] += rack_matches(owner, g)
        out["moved"] += r.metrics.moved
        c = run("cooperative-sticky", g)
        out["coop_withheld"] += c.metrics.withheld
        out["coop_rack_matches"] += rack_matches(c.owner.tolist(), g)
    return out


if __name__ == "__main__":
    import kafkagroup

    print(kafkagroup.__file__, figures(int(sys.argv[1]) if len(sys.argv) > 1 else 2000))
