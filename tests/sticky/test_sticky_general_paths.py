"""The general (differing subscriptions) builder on groups whose balancing has to move partitions away
from their sticky owners: several chain searches in a row with displaced partitions, so the searches run
on non-zero potentials -- where general_builder.cpp's potential invariant (a target is always settled
through a zero reduced cost, never from the heap) is checked on every heap pop, and where the
move clean-up (step 4) searches. Results are checked against the exhaustive optimum (load vector, then
fewest moves) and the pure-Python reference."""
from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sticky_support import Group, check_balanced, check_valid, run
from sticky_reference import exhaustive_optimum, loads_of, moved_of, previous_owners, reference_assign


def _check_optimal(g: Group) -> None:
    r = run("sticky", g)
    owner = r.owner.tolist()
    check_valid(owner, g)
    check_balanced(owner, g)
    sticky = previous_owners(sum(g.counts), g.subs, g.topic_of, g.owned, g.generation)
    vector, min_moved = exhaustive_optimum(g.num_members, g.subs, g.topic_of, sticky)
    assert tuple(sorted(loads_of(owner, g.num_members), reverse=True)) == vector
    assert moved_of(owner, sticky) == min_moved == r.metrics.moved
    ref = reference_assign(g.num_members, g.subs, g.topic_of, sticky)
    assert moved_of(ref, sticky) == min_moved
    assert np.array_equal(run("sticky", g).owner, r.owner)


@st.composite
def skewed_groups(draw) -> Group:
    """Overlapping subscriptions (ring-shaped or random) and claims concentrated on a few members, so the
    fill leaves them far above the others and balancing moves owned partitions through chains."""
    T = draw(st.integers(2, 4))
    M = draw(st.integers(3, 6))
    if draw(st.booleans()):
        width = draw(st.integers(1, 2))
        subs = [{(m + k) % T for k in range(width)} for m in range(M)]
    else:
        subs = [set(draw(st.lists(st.integers(0, T - 1), min_size=1, max_size=T))) for _ in range(M)]
    counts = [draw(st.integers(0, 5)) for _ in range(T)]
    while sum(counts) > 11:
        counts[counts.index(max(counts))] -= 1
    topic_of = [t for t, c in enumerate(counts) for _ in range(c)]
    heavy = draw(st.lists(st.integers(0, M - 1), min_size=1, max_size=2, unique=True))
    owned: list[list[int]] = [[] for _ in range(M)]
    for p, t in enumerate(topic_of):
        eligible = [m for m in range(M) if t in subs[m]]
        if not eligible or draw(st.integers(0, 9)) == 0:
            continue  # a free partition
        preferred = [m for m in heavy if m in eligible]
        pool = preferred if preferred and draw(st.integers(0, 3)) > 0 else eligible
        owned[draw(st.sampled_from(pool))].append(p)
    return Group(counts, subs, owned, [1] * M)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(skewed_groups())
def test_chain_heavy_groups_are_optimal(g):
    _check_optimal(g)


def test_ring_with_one_previous_owner():
    # Member 0 owned every partition of a ring of topics (member m subscribes to topics m and m + 1):
    # the other members can only be fed through chains around the ring, each one displacing a
    # partition of member 0, so later searches start from non-zero potentials.
    T, M = 4, 4
    subs = [{m % T, (m + 1) % T} for m in range(M)]
    counts = [3, 3, 2, 2]
    topic_of = [t for t, c in enumerate(counts) for _ in range(c)]
    owned = [[p for p, t in enumerate(topic_of) if t in subs[0]]] + [[] for _ in range(M - 1)]
    g = Group(counts, subs, owned, [1] * M)
    r = run("sticky", g)
    assert r.metrics.moved > 0  # balancing had to displace owned partitions
    _check_optimal(g)


def test_two_heavy_owners_on_a_path():
    # A path of topics (member m subscribes to topics m - 1 and m): the two end members own everything
    # they can; the middle members start empty and are filled by chains from both ends.
    counts = [4, 2, 2, 3]
    subs = [{0}, {0, 1}, {1, 2}, {2, 3}, {3}]
    topic_of = [t for t, c in enumerate(counts) for _ in range(c)]
    owned = [[p for p, t in enumerate(topic_of) if t == 0], [], [], [],
             [p for p, t in enumerate(topic_of) if t == 3]]
    g = Group(counts, subs, owned, [1] * len(subs))
    r = run("sticky", g)
    assert r.metrics.moved > 0
    _check_optimal(g)
