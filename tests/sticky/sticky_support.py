"""Helpers for the sticky tests: a small group model over dense ids, the native call, and Kafka's
verifyValidityAndBalance restated. (Not named conftest.py: tests import it, and in rootdir import mode
another folder's conftest module would shadow it.)"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kafkagroup.assignors.sticky  # noqa: E402,F401  (registers "sticky" / "cooperative-sticky")
from kafkagroup.engine import assign_arrays  # noqa: E402


@dataclass
class Group:
    """A group over dense ids: topic t has counts[t] partitions; member m subscribes subs[m]."""

    counts: list[int]
    subs: list[set[int]]
    owned: list[list[int]] = field(default_factory=list)      # global partition ids
    generation: list[int] = field(default_factory=list)

    @property
    def num_members(self) -> int:
        return len(self.subs)

    @property
    def base(self) -> list[int]:
        out = [0]
        for c in self.counts:
            out.append(out[-1] + c)
        return out

    @property
    def topic_of(self) -> list[int]:
        return [t for t, c in enumerate(self.counts) for _ in range(c)]

    def arrays(self) -> dict:
        M = self.num_members
        sub_offsets = np.zeros(M + 1, np.int64)
        sub_topics: list[int] = []
        for m, s in enumerate(self.subs):
            sub_topics.extend(sorted(s))
            sub_offsets[m + 1] = len(sub_topics)
        out = dict(partition_count=np.array(self.counts, np.int32), sub_offsets=sub_offsets,
                   sub_topics=np.array(sub_topics, np.int32))
        if self.owned:
            oo = np.zeros(M + 1, np.int64)
            flat: list[int] = []
            for m, o in enumerate(self.owned):
                flat.extend(o)
                oo[m + 1] = len(flat)
            out.update(owned_offsets=oo, owned_partitions=np.array(flat, np.int32),
                       generation=np.array(self.generation or [-1] * M, np.int32))
        return out


def run(strategy: str, g: Group):
    return assign_arrays(strategy, **g.arrays())


def check_valid(owner, g: Group, withheld=()) -> None:
    """Every partition of a subscribed topic has exactly one subscribed owner (or is withheld)."""
    topic_of = g.topic_of
    withheld = set(int(x) for x in withheld)
    subscribed = set().union(*g.subs) if g.subs else set()
    for p, m in enumerate(np.asarray(owner).tolist()):
        t = topic_of[p]
        if m >= 0:
            assert t in g.subs[m], f"partition {p} given to member {m} not subscribed to topic {t}"
            assert p not in withheld
        elif t in subscribed:
            assert p in withheld, f"partition {p} of subscribed topic {t} left unassigned"


def check_balanced(owner, g: Group) -> None:
    """Kafka's isBalanced: no partition can move to an eligible member with >= 2 fewer."""
    load = [0] * g.num_members
    for m in np.asarray(owner).tolist():
        if m >= 0:
            load[m] += 1
    topic_of = g.topic_of
    for p, m in enumerate(np.asarray(owner).tolist()):
        if m < 0:
            continue
        for other in range(g.num_members):
            if topic_of[p] in g.subs[other]:
                assert load[other] >= load[m] - 1, f"partition {p} could move from {m} ({load[m]}) to {other} ({load[other]})"


def check_matches_reference(r, g: Group) -> None:
    """A native sticky result is valid, balanced, chain-optimal, and equal to the pure-Python reference in
    load vector and moves (the checks the churn tests share; each adds its own lower-bound assertion)."""
    from sticky_reference import chain_improvable, loads_of, moved_of, previous_owners, reference_assign

    owner = r.owner.tolist()
    check_valid(owner, g)
    check_balanced(owner, g)
    assert not chain_improvable(owner, g.num_members, g.subs, g.topic_of)
    sticky = previous_owners(sum(g.counts), g.subs, g.topic_of, g.owned, g.generation)
    ref = reference_assign(g.num_members, g.subs, g.topic_of, sticky)
    assert sorted(loads_of(owner, g.num_members)) == sorted(loads_of(ref, g.num_members))
    assert moved_of(owner, sticky) == moved_of(ref, sticky) == r.metrics.moved
    assert r.metrics.balance_gap == 0 and r.metrics.unassigned == 0
