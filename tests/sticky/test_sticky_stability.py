"""Stability of sticky and cooperative-sticky over rebalance rounds, with and without racks (KIP-881).

- An unchanged group gets its assignment back: the result fed back as every member's owned partitions
  (generation bumped) comes back identical, moved = 0, for sticky and cooperative-sticky.
- Cooperative-sticky settles in at most two assignments after any change: the first withholds the
  partitions changing owner, the second hands them over (and withholds nothing), the third changes nothing.
- Every result is valid and balanced (Kafka's isBalanced, no improving chain of moves).

Groups come from stability_groups.py: uniform and mixed subscriptions, racks on members and replicas (or
none), owned partitions from an earlier group or inconsistent claims (two claimants, mixed generations,
unsubscribed topics). KAFKAGROUP_STABILITY_GROUPS sets how many seeds each property runs (default 300,
a few seconds); e.g. KAFKAGROUP_STABILITY_GROUPS=10000 for the long run.
"""
from __future__ import annotations

import os

import pytest

import kafkagroup
from sticky_reference import chain_improvable
from sticky_support import Group, check_balanced, check_valid
from stability_groups import StabilityGroup, churned_group, run

GROUPS = int(os.environ.get("KAFKAGROUP_STABILITY_GROUPS", "300"))
CHUNKS = 10  # seeds are split in chunks so a failure names a small range


def as_group(g: StabilityGroup) -> Group:
    return Group(g.counts, [set(s) for s in g.subs], g.owned, g.generation)


def check_result(r, g: StabilityGroup) -> list[int]:
    owner = r.owner.tolist()
    check_valid(owner, as_group(g), r.withheld)
    if len(r.withheld) == 0:
        check_balanced(owner, as_group(g))
        assert not chain_improvable(owner, len(g.subs), [set(s) for s in g.subs], g.topic_of)
        assert r.metrics.balance_gap == 0
    return owner


def next_generation(g: StabilityGroup) -> int:
    return max(g.generation, default=0) + 1


def check_sticky_fixed_point(g: StabilityGroup) -> None:
    first = check_result(run("sticky", g), g)
    fed = g.with_owned(first, next_generation(g))
    again = run("sticky", fed)
    assert again.owner.tolist() == first and again.metrics.moved == 0, "an unchanged group moved partitions"


def check_cooperative_settles(g: StabilityGroup) -> None:
    a = run("cooperative-sticky", g)
    owner_a = check_result(a, g)
    # Members revoke what was withheld and own what they were given.
    g_b = g.with_owned(owner_a, next_generation(g))
    b = run("cooperative-sticky", g_b)
    owner_b = check_result(b, g_b)
    assert len(b.withheld) == 0, f"second assignment withholds {b.withheld.tolist()}"
    assert all(owner_b[p] == m for p, m in enumerate(owner_a) if m >= 0)  # nothing owned moved
    g_c = g_b.with_owned(owner_b, next_generation(g_b))
    c = run("cooperative-sticky", g_c)
    assert c.owner.tolist() == owner_b and len(c.withheld) == 0 and c.metrics.moved == 0, \
        "cooperative-sticky needs a third assignment"


@pytest.mark.parametrize("chunk", range(CHUNKS))
@pytest.mark.parametrize("racks", [True, False, None], ids=["racks", "no-racks", "mixed"])
@pytest.mark.parametrize("check", [check_sticky_fixed_point, check_cooperative_settles],
                         ids=["unchanged_group_keeps_its_assignment", "cooperative_settles_in_two_assignments"])
def test_stability(check, chunk, racks):
    for seed in range(chunk, GROUPS, CHUNKS):
        g = churned_group(seed, racks=racks)
        try:
            check(g)
        except AssertionError as e:
            raise AssertionError(f"seed {seed}: {g}") from e


# ---- the reported case: two members on rack r2 traded t1-4 and t1-5 on every rebalance ------------

SWAP_TOPICS = {
    "t0": [["r1", "r2", "r3"], ["r3"], ["r1"], ["r2"]],
    "t1": [["r2"], ["r1", "r2", "r3"], ["r1", "r2", "r3"], ["r2"], ["r1"], ["r3"], ["r1", "r2", "r3"]],
    "t2": [],
    "t3": [],
    "t4": [["r1"], ["r2"], ["r1", "r3"]],
}
SWAP_MEMBERS = {"m0": {"topics": ["t0", "t1", "t2", "t3", "t4"], "rack": "r2"},
                "m1": {"topics": ["t3", "t1", "t0"], "rack": "r2"}}


def owned_of(result, members) -> dict[str, list[tuple[str, int]]]:
    return {m: sorted((tp.topic, tp.partition) for tp in result.assignment.get(m, [])) for m in members}


@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
def test_two_members_on_one_rack_do_not_trade_mismatched_partitions(strategy):
    """t1-4 (replica r1) and t1-5 (replica r3) match neither member (both on r2) and must go one to each
    (balance). Before the fix each rebalance dropped both from their owners (racks mismatched) and handed
    them out again the other way round: moved = 2 on an unchanged group, forever."""
    first = owned_of(kafkagroup.assign(strategy, SWAP_TOPICS, SWAP_MEMBERS), SWAP_MEMBERS)
    holders = {p: m for m, parts in first.items() for p in parts}
    assert {holders[("t1", 4)], holders[("t1", 5)]} == {"m0", "m1"}
    owned = first
    for generation in (1, 2, 3):
        r = kafkagroup.assign(strategy, SWAP_TOPICS, {m: {**info, "owned": owned[m], "generation": generation}
                                                     for m, info in SWAP_MEMBERS.items()})
        assert r.metrics.moved == 0 and not r.withheld
        assert owned_of(r, SWAP_MEMBERS) == first
        owned = owned_of(r, SWAP_MEMBERS)
