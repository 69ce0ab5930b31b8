"""KIP-881 for the sticky assignors (different or equal subscriptions): rack-matching first, as long as
balance and stickiness do not suffer.

Kafka's rules restated: in rack-aware mode a previously owned partition is kept only when the owner's
rack holds a replica (a member without rack matches everything); balance ranks above stickiness, and
stickiness (to those rack-matching owners) above further alignment. The engine then aligns racks: the
partitions not held by their sticky owner are spread over the members holding them, each keeping
its count (per topic; with equal subscriptions its total over all topics), so that the most sit on a
rack-matching member (and then moves them along load-keeping chains, which can only add matches).
Checked on small random groups:
- the load vector and `moved` (against the rack-filtered owners) are the exhaustive optimum's;
- per topic, the rack matches among those partitions equal a brute-force maximum over every
  redistribution that keeps each holder's count; with equal subscriptions, the matches over all
  topics equal a maximum matching of those partitions to the holders' slots.
(Stability over rounds, with weak owners: test_sticky_stability.py.)"""
from __future__ import annotations

from itertools import permutations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sticky_support import Group, check_balanced, check_valid
from kafkagroup.engine import assign_arrays
from sticky_reference import exhaustive_optimum, loads_of, moved_of, previous_owners

RACKS = 3


@st.composite
def rack_groups(draw):
    """Small groups with racks; about a third with equal subscriptions (Kafka's constrained path)."""
    T = draw(st.integers(1, 3))
    counts = [draw(st.integers(0, 5)) for _ in range(T)]
    while sum(counts) > 11:
        counts[counts.index(max(counts))] -= 1
    M = draw(st.integers(2, 6))
    subs = [set(draw(st.lists(st.integers(0, T - 1), min_size=1, max_size=T))) for _ in range(M)]
    if draw(st.integers(0, 2)) == 0:
        subs = [set(subs[0]) for _ in range(M)]
    P = sum(counts)
    owned = [draw(st.lists(st.integers(0, P - 1), max_size=3)) if P else [] for _ in range(M)]
    generation = [draw(st.integers(-1, 2)) for _ in range(M)]
    member_rack = [draw(st.integers(0, RACKS)) for _ in range(M)]  # 0: no rack
    replicas = [sorted(set(draw(st.lists(st.integers(1, RACKS), min_size=0, max_size=2)))) for _ in range(P)]
    return Group(counts, subs, owned, generation), member_rack, replicas


def rack_arrays(g: Group, member_rack, replicas) -> dict:
    a = g.arrays()
    offsets = np.zeros(len(replicas) + 1, np.int64)
    np.cumsum([len(r) for r in replicas], out=offsets[1:])
    flat = [x for r in replicas for x in r]
    a.update(member_rack=np.array(member_rack, np.int32), replica_offsets=offsets,
             replica_racks=np.array(flat, np.int32))
    return a


def matches(m: int, part: int, member_rack, replicas) -> bool:
    return member_rack[m] == 0 or member_rack[m] in replicas[part]


def rack_aware_mode(g: Group, member_rack, replicas) -> bool:
    """Kafka's useRackAwareAssignment over the partitions of subscribed topics."""
    subscribed = set().union(*g.subs)
    parts = [p for p, t in enumerate(g.topic_of) if t in subscribed]
    union = set().union(*(set(replicas[p]) for p in parts)) if parts else set()
    if not (set(member_rack) - {0}) & union:
        return False
    return any(set(replicas[p]) != union for p in parts)


def best_within_topic(pool: list[int], holders: list[int], member_rack, replicas) -> int:
    """Most rack matches over every way to hand `pool` to the multiset of slots `holders`."""
    best = 0
    for slots in set(permutations(holders)):
        best = max(best, sum(matches(m, p, member_rack, replicas) for p, m in zip(pool, slots)))
    return best


def best_across_topics(pool: list[int], holders: list[int], member_rack, replicas) -> int:
    """Most rack matches when `pool` may go to any holder, each holder taking as many as it holds now:
    a bipartite matching of partitions to slots by augmenting paths (Kuhn)."""
    slots = [m for m in sorted(set(holders)) for _ in range(holders.count(m))]
    slot_of: dict[int, int] = {}  # slot index -> pool index

    def augment(i: int, seen: set[int]) -> bool:
        for j, m in enumerate(slots):
            if j in seen or not matches(m, pool[i], member_rack, replicas):
                continue
            seen.add(j)
            if j not in slot_of or augment(slot_of[j], seen):
                slot_of[j] = i
                return True
        return False

    return sum(augment(i, set()) for i in range(len(pool)))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rack_groups())
def test_rack_aware_optimal_then_aligned(case):
    g, member_rack, replicas = case
    r = assign_arrays("sticky", **rack_arrays(g, member_rack, replicas))
    owner = r.owner.tolist()
    check_valid(owner, g)
    check_balanced(owner, g)
    aware = rack_aware_mode(g, member_rack, replicas)
    sticky = previous_owners(sum(g.counts), g.subs, g.topic_of, g.owned, g.generation)
    if aware:  # Kafka keeps an owned partition only on a rack-matching owner
        sticky = [o if o >= 0 and matches(o, p, member_rack, replicas) else -1 for p, o in enumerate(sticky)]
    vector, min_moved = exhaustive_optimum(g.num_members, g.subs, g.topic_of, sticky)
    assert tuple(sorted(loads_of(owner, g.num_members), reverse=True)) == vector
    assert moved_of(owner, sticky) == min_moved
    assert r.metrics.balance_gap == 0
    if not aware:
        return
    for t in range(len(g.counts)):
        pool = [p for p, m in enumerate(owner) if m >= 0 and g.topic_of[p] == t and sticky[p] != m]
        holders = [owner[p] for p in pool]
        got = sum(matches(owner[p], p, member_rack, replicas) for p in pool)
        assert got == best_within_topic(pool, holders, member_rack, replicas), (t, pool, holders)
    if len({frozenset(s) for s in g.subs}) == 1:
        # equal subscriptions: any member may take any topic, so the best is over all topics at once
        pool = [p for p, m in enumerate(owner) if m >= 0 and sticky[p] != m]
        got = sum(matches(owner[p], p, member_rack, replicas) for p in pool)
        assert got == best_across_topics(pool, [owner[p] for p in pool], member_rack, replicas)
    # deterministic
    again = assign_arrays("sticky", **rack_arrays(g, member_rack, replicas))
    assert again.owner.tolist() == owner


def test_rack_alignment_after_churn_example():
    """The smallest group a random search found (against the engine without the alignment step) where
    balancing leaves topic 0's ownerless partitions on the wrong racks: aligned, topic 0 reaches the
    brute-force maximum of rack matches (one more than without alignment)."""
    subs = [set(), set(), set(), {1}, {0}, {0}, set(), {1}, {0, 1}, {0}, {0}, {0}]
    owned = [[], [], [], [7, 9, 10, 11], [0, 3, 6, 10], [1, 4, 7], [], [1, 10, 12], [], [2, 5, 8], [], []]
    g = Group([9, 4], subs, owned, [5, 5, 5, 5, 5, 5, 5, 3, 5, 5, -1, -1])
    member_rack = [0, 2, 0, 2, 3, 1, 1, 2, 2, 3, 2, 0]
    replicas = [[], [], [1, 2], [], [1, 3], [1, 2], [1, 2], [2], [2, 3], [2], [2, 3], [3], [1]]
    owner = assign_arrays("sticky", **rack_arrays(g, member_rack, replicas)).owner.tolist()
    check_valid(owner, g)
    check_balanced(owner, g)
    assert rack_aware_mode(g, member_rack, replicas)
    sticky = previous_owners(sum(g.counts), g.subs, g.topic_of, g.owned, g.generation)
    sticky = [o if o >= 0 and matches(o, p, member_rack, replicas) else -1 for p, o in enumerate(sticky)]
    pool = [p for p, m in enumerate(owner) if m >= 0 and g.topic_of[p] == 0 and sticky[p] < 0]
    got = sum(matches(owner[p], p, member_rack, replicas) for p in pool)
    assert got == best_within_topic(pool, [owner[p] for p in pool], member_rack, replicas)


@pytest.mark.parametrize("seed", range(200))
def test_equal_subscriptions_align_across_topics(seed):
    """Medium groups with equal subscriptions (Kafka's constrained path fills racks greedily, member by
    member): quotas kept, and the ownerless partitions reach a maximum matching over all topics. A fixed
    sweep of seeds: aligning topic by topic only falls short on about one group in 25 of this shape."""
    rng = np.random.default_rng(seed)
    # Topics large next to a member's quota (the greedy fill then gives a member long runs of one topic).
    T, M = int(rng.integers(2, 4)), int(rng.integers(3, 8))
    counts = [int(c) for c in rng.integers(6, 16, size=T)]
    g = Group(counts, [set(range(T))] * M)
    P = sum(counts)
    member_rack = [int(r) if rng.random() < 0.9 else 0 for r in rng.integers(1, RACKS + 1, size=M)]
    replicas = [sorted({int(x) for x in rng.choice(np.arange(1, RACKS + 1), size=int(rng.integers(1, 3)), replace=False)})
                for _ in range(P)]
    if seed % 2:  # one rebalance later: some members own what they had
        before = assign_arrays("sticky", **rack_arrays(g, member_rack, replicas)).owner.tolist()
        g = Group(counts, g.subs, [[p for p, m in enumerate(before) if m == i and rng.random() < 0.7] for i in range(M)],
                  [3] * M)
    r = assign_arrays("sticky", **rack_arrays(g, member_rack, replicas))
    owner = r.owner.tolist()
    check_valid(owner, g)
    assert r.metrics.max_load - r.metrics.min_load <= 1
    if not rack_aware_mode(g, member_rack, replicas):
        return
    sticky = previous_owners(P, g.subs, g.topic_of, g.owned, g.generation) if g.owned else [-1] * P
    sticky = [o if o >= 0 and matches(o, p, member_rack, replicas) else -1 for p, o in enumerate(sticky)]
    assert all(owner[p] == o for p, o in enumerate(sticky) if o >= 0 and
               sum(1 for q in range(P) if sticky[q] == o) <= r.metrics.min_load)  # under quota: all kept
    pool = [p for p, m in enumerate(owner) if m >= 0 and sticky[p] < 0]
    got = sum(matches(owner[p], p, member_rack, replicas) for p in pool)
    assert got == best_across_topics(pool, [owner[p] for p in pool], member_rack, replicas)
