"""The per-call fixed cost work (issue 26 item 1) changes no answer:

- `_core.assign_exact` returns the ArrayResult itself (made natively) and declines a non-str strategy;
- previous owners of a group whose equal subscriptions cover every topic skip the topic lookup: the same
  claims with one more topic nobody subscribes to (the lookup path) give the same owners and metrics;
- the metrics pass counts runs: checked against numpy on owners with runs, single partitions, unassigned
  partitions of subscribed and unsubscribed topics and withheld partitions.
"""
from __future__ import annotations

import numpy as np
import pytest

import kafkagroup
from kafkagroup import _core
from kafkagroup.engine import ArrayResult, Metrics
from kafkagroup.errors import InvalidGroupError
from kafkagroup.scenarios import next_generation, random_group, uniform_group

STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky")
ARGS = ("partition_count", "sub_offsets", "sub_topics", "owned_offsets", "owned_partitions", "generation",
        "member_rack", "replica_offsets", "replica_racks")


def test_assign_exact_returns_the_result_object():
    a = uniform_group(3, 4, 2).arrays()
    r = _core.assign_exact("sticky", *(a[k] for k in ARGS))
    assert type(r) is ArrayResult and type(r.metrics) is Metrics
    assert r.owner.tolist() == [0] * 6 + [1] * 6 and r.withheld.tolist() == [] and r.engine_us >= 0
    assert r.metrics == Metrics(balance_gap=0, max_load=6, min_load=6, assigned=12, unassigned=0, withheld=0,
                                moved=0, moved_lower_bound=0)
    assert r == kafkagroup.assign_arrays("sticky", **a).__class__(r.owner, r.withheld, r.metrics, r.engine_us)
    assert _core.assign_exact(3, *(a[k] for k in ARGS)) is None   # assign_arrays then names the fault
    with pytest.raises(InvalidGroupError, match="strategy must be a name"):
        kafkagroup.assign_arrays(b"sticky", **a)


def _claims(seed: int, topics: int = 6, partitions: int = 7, members: int = 9):
    """A uniform group after churn, with duplicated, stale and contested claims and random generations."""
    rng = np.random.default_rng(seed)
    g = uniform_group(topics, partitions, members)
    settled = kafkagroup.assign_arrays("sticky", **g.arrays())
    g = next_generation(g, settled.owner, remove=2, add=1, seed=seed)
    a = g.arrays()
    P = int(a["partition_count"].sum())
    claims = [list(a["owned_partitions"][a["owned_offsets"][m]:a["owned_offsets"][m + 1]])
              for m in range(len(g.members))]
    for c in claims:
        c.extend(rng.integers(0, P, size=int(rng.integers(0, 4))).tolist())   # contested or repeated claims
        if c and rng.random() < 0.3:
            c.append(c[0])                                                    # one partition listed twice
    if len(claims) > 2 and claims[0]:
        claims[2][:0] = range(claims[0][0], min(claims[0][0] + 40, P))        # a run someone already claimed
    offsets = np.zeros(len(claims) + 1, dtype=np.int64)
    np.cumsum([len(c) for c in claims], out=offsets[1:])
    a["owned_offsets"] = offsets
    a["owned_partitions"] = np.array([p for c in claims for p in c], dtype=np.int32)
    a["generation"] = rng.integers(-1, 3, size=len(claims)).astype(np.int32)
    return a


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_claims_without_topic_lookup_agree_with_the_lookup_path(strategy, seed):
    # Small groups, and groups whose members claim runs long enough to be taken a block at a time.
    a = _claims(seed) if seed % 2 else _claims(seed, topics=12, partitions=40, members=7)
    P = int(a["partition_count"].sum())
    fast = kafkagroup.assign_arrays(strategy, **a)
    # One more topic, subscribed by nobody: partition ids and subscriptions unchanged, the claims now go
    # through the per-claim topic test.
    b = dict(a, partition_count=np.append(a["partition_count"], np.int32(5)))
    slow = kafkagroup.assign_arrays(strategy, **b)
    assert fast.owner.tolist() == slow.owner[:P].tolist() and (slow.owner[P:] == -1).all()
    assert fast.withheld.tolist() == slow.withheld.tolist()
    assert fast.metrics == slow.metrics


def _numpy_metrics(a, r):
    """assigned / unassigned / withheld / moved / loads recomputed with numpy from the arrays alone."""
    count = a["partition_count"]
    base = np.concatenate([[0], np.cumsum(count)])
    M = len(a["sub_offsets"]) - 1
    subscribed = np.zeros(len(count), dtype=bool)
    subscribed[a["sub_topics"]] = True
    topic = np.repeat(np.arange(len(count)), count)
    owner = r.owner
    load = np.bincount(owner[owner >= 0], minlength=M)
    free = (owner < 0) & subscribed[topic]
    free[r.withheld] = False
    return {"assigned": int(load.sum()), "unassigned": int(free.sum()), "withheld": len(r.withheld),
            "max_load": int(load.max()), "min_load": int(load.min()), "base": base}


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_metrics_pass_agrees_with_numpy(strategy, seed):
    # Random subscriptions leave topics unsubscribed (unassigned there does not count); churned groups give
    # long kept runs, single moved partitions and, for cooperative-sticky, withheld ones.
    g = random_group(topics=9, partitions=int(3 + seed * 5), members=6 + seed, fraction=0.4, seed=seed)
    if seed % 2:
        first = kafkagroup.assign_arrays("sticky", **g.arrays())
        g = next_generation(g, first.owner, remove=2, add=2, seed=seed)
    a = g.arrays()
    r = kafkagroup.assign_arrays(strategy, **a)
    want = _numpy_metrics(a, r)
    got = r.metrics
    assert (got.assigned, got.unassigned, got.withheld, got.max_load, got.min_load) == \
        (want["assigned"], want["unassigned"], want["withheld"], want["max_load"], want["min_load"])


@pytest.mark.parametrize("bad", [-1, 12, 13, 2**31 - 1, -2**31, 2**28])
def test_a_claim_out_of_range_is_named_whatever_its_value(bad):
    a = uniform_group(3, 4, 3).arrays()     # 12 partitions
    claims = [0, 1, 2, 3, 11, 5, 6, 7, 8]
    claims[7] = bad                          # member 2's second claim
    a.update(owned_offsets=np.array([0, 4, 6, 9], dtype=np.int64), owned_partitions=np.array(claims, dtype=np.int32))
    with pytest.raises(InvalidGroupError, match=f"member 2: owned partition id {bad} is not in 0..11"):
        kafkagroup.assign_arrays("sticky", **a)
    claims[7] = 11 - 4                       # every claim in range: accepted
    a["owned_partitions"] = np.array(claims, dtype=np.int32)
    assert kafkagroup.assign_arrays("sticky", **a).metrics.unassigned == 0
    empty = dict(uniform_group(3, 0, 3).arrays(), owned_offsets=np.array([0, 0, 0, 1], dtype=np.int64),
                 owned_partitions=np.array([0], dtype=np.int32))   # no partitions: no claim is valid
    with pytest.raises(InvalidGroupError, match="member 2: owned partition id 0 is not in 0..-1"):
        kafkagroup.assign_arrays("range", **empty)


ALL_STRATEGIES = STRATEGIES + ("server-uniform", "server-range")


def _with_racks(a: dict, seed: int) -> dict:
    """`a` with member racks and replica racks (two of three racks per partition), so that KIP-881 applies."""
    rng = np.random.default_rng(seed)
    M, P = len(a["sub_offsets"]) - 1, int(a["partition_count"].sum())
    replicas = np.array([rng.choice(3, size=2, replace=False) + 1 for _ in range(P)], dtype=np.int32).ravel()
    return dict(a, member_rack=rng.integers(1, 4, size=M).astype(np.int32),
                replica_offsets=np.arange(0, 2 * P + 1, 2, dtype=np.int64), replica_racks=replicas)


@pytest.mark.parametrize("racks", [False, True])
@pytest.mark.parametrize("strategy", ALL_STRATEGIES)
@pytest.mark.parametrize("make", [lambda: uniform_group(7, 13, 5), lambda: random_group(9, 11, 8, fraction=0.5, seed=4)],
                         ids=["uniform", "random"])
def test_a_group_without_claims_is_fresh_whatever_its_form(strategy, racks, make):
    # No claim at all: previous_owners() records no owner (no P entries of -1), whether owned_offsets is
    # absent or given with every member's list empty (as decoded JoinGroup metadata gives it), with or
    # without generations: same owners, withheld partitions and metrics as the form without claims.
    a = make().arrays()
    if racks:
        a = _with_racks(a, seed=len(strategy))
    M = len(a["sub_offsets"]) - 1
    fresh = kafkagroup.assign_arrays(strategy, **a)
    for extra in ({"owned_offsets": np.zeros(M + 1, dtype=np.int64)},
                  {"owned_offsets": np.zeros(M + 1, dtype=np.int64), "owned_partitions": np.zeros(0, dtype=np.int32),
                   "generation": np.arange(M, dtype=np.int32)}):
        empty = kafkagroup.assign_arrays(strategy, **dict(a, **extra))
        assert empty.owner.tolist() == fresh.owner.tolist()
        assert empty.withheld.tolist() == fresh.withheld.tolist() == []
        assert empty.metrics == fresh.metrics and fresh.metrics.moved == 0


def _reference_moves(a: dict, r, eager_owner: np.ndarray) -> tuple[int, int, list[int]]:
    """moved, moved_lower_bound (uniform subscriptions) and the withheld partitions, from Kafka's ownership
    rules (tests/sticky/sticky_reference.py) and the raw claims, without the engine's counts."""
    from sticky.sticky_reference import previous_owners

    count = a["partition_count"]
    M = len(a["sub_offsets"]) - 1
    topic_of = np.repeat(np.arange(len(count)), count).tolist()
    subs = [set(a["sub_topics"][a["sub_offsets"][m]:a["sub_offsets"][m + 1]].tolist()) for m in range(M)]
    owned = [a["owned_partitions"][a["owned_offsets"][m]:a["owned_offsets"][m + 1]].tolist() for m in range(M)]
    prev = np.array(previous_owners(len(topic_of), subs, topic_of, owned, a["generation"].tolist()))
    now = eager_owner
    moved = int(((prev >= 0) & (prev != r.owner)).sum())   # a withheld partition has no owner: it moved
    held = np.bincount(prev[prev >= 0], minlength=M)
    subscribed = sorted(set().union(*subs))
    N = int(sum(count[t] for t in subscribed))
    q, rem = divmod(N, M)
    bound = int(held.sum() - (np.minimum(held, q).sum() + min(rem, int((held > q).sum()))))
    claimants = {}
    for m, claims in enumerate(owned):
        for p in claims:
            claimants.setdefault(p, set()).add(m)
    withheld = [p for p in range(len(topic_of))
                if now[p] >= 0 and now[p] != prev[p] and claimants.get(p, set()) - {int(now[p])}]
    return moved, bound, withheld


@pytest.mark.parametrize("seed", range(12))
def test_moved_bound_and_withheld_agree_with_the_ownership_rules(seed):
    # previous_owners() counts each member's valid partitions as it records them (the sticky builder's
    # quotas, the metrics' lower bound and the cooperative pass read those counts): on claims that are
    # contested, stale, listed twice or already claimed in a run, the counts must be owner[] counted.
    a = _claims(seed) if seed % 2 else _claims(seed, topics=12, partitions=40, members=7)
    eager = kafkagroup.assign_arrays("sticky", **a)
    coop = kafkagroup.assign_arrays("cooperative-sticky", **a)
    moved, bound, withheld = _reference_moves(a, eager, eager.owner)
    assert (eager.metrics.moved, eager.metrics.moved_lower_bound) == (moved, bound)
    assert eager.metrics.moved == bound   # the uniform builder keeps the most it can
    coop_moved, coop_bound, coop_withheld = _reference_moves(a, coop, eager.owner)
    assert coop.withheld.tolist() == coop_withheld
    assert (coop.metrics.moved, coop.metrics.moved_lower_bound) == (coop_moved, coop_bound)


@pytest.mark.parametrize("racks", [False, True])
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
def test_sticky_reads_the_homogeneous_form_as_its_csr(strategy, seed, racks):
    # The sticky assignors read the homogeneous form without expanding it to the CSR (engine.cpp): the same
    # result as the CSR on churned groups with contested, stale and repeated claims, generations and racks.
    a = _claims(seed) if seed % 2 else _claims(seed, topics=12, partitions=40, members=7)
    if racks:
        a = _with_racks(a, seed)
    row = a["sub_topics"][a["sub_offsets"][0]:a["sub_offsets"][1]]
    M = len(a["sub_offsets"]) - 1
    assert (a["sub_topics"] == np.tile(row, M)).all()
    csr = kafkagroup.assign_arrays(strategy, **a)
    shared = kafkagroup.assign_arrays(strategy, **dict(a, sub_offsets=None, sub_topics=row, num_members=M))
    assert shared.owner.tolist() == csr.owner.tolist()
    assert shared.withheld.tolist() == csr.withheld.tolist()
    assert shared.metrics == csr.metrics


def test_the_homogeneous_form_needs_no_offsets_array():
    # assign_exact takes sub_offsets=None in the homogeneous form (the row's offsets are {0, len(row)}), and
    # only there: the CSR form without offsets is left to assign_arrays, which names the fault.
    row = np.array([0, 1], dtype=np.int32)
    counts = np.array([3, 2], dtype=np.int32)
    shared = _core.assign_exact("sticky", counts, None, row, None, None, None, None, None, None, 2, False)
    csr = kafkagroup.assign_arrays("sticky", counts, np.array([0, 2, 4]), np.tile(row, 2))
    assert shared.owner.tolist() == csr.owner.tolist() == [0, 0, 0, 1, 1] and shared.metrics == csr.metrics
    assert _core.assign_exact("sticky", counts, None, row, None, None, None, None, None, None) is None
    with pytest.raises(InvalidGroupError, match="sub_offsets: expected a 1-d array"):
        kafkagroup.assign_arrays("sticky", counts, None, row)
    assert kafkagroup.assign_arrays("sticky", counts, None, [0, 1], num_members=2).owner.tolist() == [0, 0, 0, 1, 1]


@pytest.mark.parametrize("seed", range(3))
def test_metrics_counted_while_the_builder_writes_agree_with_numpy(seed):
    # The uniform sticky builder counts each stretch of 32,768 partitions as it writes it (PartitionTally),
    # the engine the rest: on groups large enough for several stretches, with uneven topics, unsubscribed
    # topics and churn, the metrics equal numpy's count over the whole result.
    rng = np.random.default_rng(seed)
    counts = rng.integers(1, 6000, size=40).astype(np.int32)
    g = uniform_group(40, counts, 37 + seed)
    a = g.arrays()
    keep = np.sort(rng.choice(40, size=34, replace=False)).astype(np.int32)   # six topics nobody subscribes to
    M = len(g.members)
    a.update(sub_offsets=np.arange(M + 1, dtype=np.int64) * len(keep), sub_topics=np.tile(keep, M))
    first = kafkagroup.assign_arrays("sticky", **a)
    for step in range(2):
        r = kafkagroup.assign_arrays("sticky", **a)
        want = _numpy_metrics(a, r)
        got = r.metrics
        assert (got.assigned, got.unassigned, got.max_load, got.min_load) == \
            (want["assigned"], want["unassigned"], want["max_load"], want["min_load"])
        if a["owned_offsets"] is not None:
            prev = np.full(len(r.owner), -1)
            for m in range(M):
                prev[a["owned_partitions"][a["owned_offsets"][m]:a["owned_offsets"][m + 1]]] = m
            assert got.moved == int(((prev >= 0) & (prev != r.owner)).sum()) > 0
        # churn: each even member claims its own share of the first result and the next member's, odd members
        # claim nothing (so about half the partitions move)
        owned = [np.flatnonzero((first.owner == m) | (first.owner == m + 1)).astype(np.int32) if m % 2 == 0
                 else np.zeros(0, dtype=np.int32) for m in range(M)]
        a.update(owned_offsets=np.concatenate([[0], np.cumsum([len(o) for o in owned])]).astype(np.int64),
                 owned_partitions=np.concatenate(owned), generation=np.ones(M, dtype=np.int32))


@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("strategy", ["range", "roundrobin", "sticky"])
def test_members_on_every_topic_and_on_some_share_the_ownership_rules(strategy, seed):
    # Different subscriptions where some members subscribe to every topic (previous_owners takes their claims
    # without a topic lookup) and the others to a part (the lookup path), claims contested across the two kinds,
    # stale (a topic the claimant left), repeated and in runs: moved agrees with Kafka's ownership rules.
    rng = np.random.default_rng(seed)
    T, M = 5, 8
    count = rng.integers(1, 30, size=T).astype(np.int32)
    P = int(count.sum())
    base = np.concatenate([[0], np.cumsum(count)])
    subs = [list(range(T)) if m % 2 == 0 else sorted(rng.choice(T, size=int(rng.integers(1, T)), replace=False).tolist())
            for m in range(M)]
    claims = []
    for m in range(M):
        c = []
        for t in rng.choice(T, size=int(rng.integers(0, T + 1)), replace=False).tolist():   # stale topics too
            lo = int(rng.integers(0, count[t]))
            c.extend(range(int(base[t]) + lo, int(base[t]) + min(int(count[t]), lo + int(rng.integers(1, 6)))))
        c.extend(rng.integers(0, P, size=int(rng.integers(0, 4))).tolist())
        if c and rng.random() < 0.3:
            c.append(c[0])
        claims.append(sorted(c) if rng.random() < 0.5 else c)
    a = {"partition_count": count,
         "sub_offsets": np.cumsum([0] + [len(s) for s in subs]).astype(np.int64),
         "sub_topics": np.array([t for s in subs for t in s], dtype=np.int32),
         "owned_offsets": np.cumsum([0] + [len(c) for c in claims]).astype(np.int64),
         "owned_partitions": np.array([p for c in claims for p in c], dtype=np.int32),
         "generation": rng.integers(-1, 3, size=M).astype(np.int32)}
    r = kafkagroup.assign_arrays(strategy, **a)
    assert r.metrics.moved == _reference_moves(a, r, r.owner)[0]


# ---- third round (issue 26 item 1, 2026-11-28): each fast path against an independent count

def _csr(lists, dtype=np.int32):
    offsets = np.zeros(len(lists) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in lists], out=offsets[1:])
    flat = np.array([v for x in lists for v in x], dtype=dtype)
    return offsets, flat


@pytest.mark.parametrize("seed", range(16))
def test_claim_runs_broken_at_every_offset_follow_the_ownership_rules(seed):
    # previous_owners() takes a member's consecutive claims (id, id + 1, ...) eight per step (ownership.cpp,
    # consecutive_end): runs of every length up to 40, broken at every offset within and across the eight-id
    # steps by a gap, a repeated id or a step back, on topics subscribed by every member (take_all_topics) and
    # by some (take_unclaimed, whose runs stop at the topic's end), claimed in runs that others claimed too.
    rng = np.random.default_rng(seed)
    T, M = 4, 6
    count = rng.integers(20, 90, size=T).astype(np.int32)
    P = int(count.sum())
    every = seed % 2 == 0
    subs = [list(range(T)) if every or m % 3 == 0 else sorted(rng.choice(T, size=2, replace=False).tolist())
            for m in range(M)]
    claims = []
    for m in range(M):
        c = []
        for _ in range(int(rng.integers(1, 4))):
            start, length = int(rng.integers(0, P)), int(rng.integers(1, 41))
            run = list(range(start, min(P, start + length)))
            if len(run) > 1:
                at = int(rng.integers(1, len(run)))
                kind = int(rng.integers(0, 3))
                run[at] = run[at] + 2 if kind == 0 else (run[at - 1] if kind == 1 else max(0, run[at] - 5))
                run = [min(p, P - 1) for p in run]
            c.extend(run)
        claims.append(c)
    sub_offsets, sub_topics = _csr(subs)
    owned_offsets, owned_partitions = _csr(claims)
    a = {"partition_count": count, "sub_offsets": sub_offsets, "sub_topics": sub_topics,
         "owned_offsets": owned_offsets, "owned_partitions": owned_partitions,
         "generation": rng.integers(0, 2, size=M).astype(np.int32)}
    for strategy in ("sticky", "range"):
        r = kafkagroup.assign_arrays(strategy, **a)
        moved, bound, withheld = _reference_moves(a, r, r.owner)
        assert r.metrics.moved == moved, strategy
        if every:
            assert r.metrics.moved_lower_bound == bound
    if every:
        eager = kafkagroup.assign_arrays("sticky", **a)
        coop = kafkagroup.assign_arrays("cooperative-sticky", **a)
        assert coop.withheld.tolist() == _reference_moves(a, coop, eager.owner)[2]


def _valid_previous_owners(a: dict) -> np.ndarray:
    """Previous owners of clean claims (each partition claimed once, by a subscriber): the claims themselves."""
    P = int(a["partition_count"].sum())
    prev = np.full(P, -1)
    if a.get("owned_offsets") is not None:
        for m in range(len(a["owned_offsets"]) - 1):
            prev[a["owned_partitions"][a["owned_offsets"][m]:a["owned_offsets"][m + 1]]] = m
    return prev


def _check_metrics_with_numpy(a: dict, r) -> None:
    want = _numpy_metrics(a, r)
    got = r.metrics
    assert (got.assigned, got.unassigned, got.withheld, got.max_load, got.min_load) == \
        (want["assigned"], want["unassigned"], want["withheld"], want["max_load"], want["min_load"])
    prev = _valid_previous_owners(a)
    assert got.moved == int(((prev >= 0) & (prev != r.owner)).sum())


@pytest.mark.parametrize("shape", [(1, 1, 1), (3, 2, 9), (5, 7, 3), (12, 70, 11), (2, 300, 64)])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_metrics_known_while_building_or_counted_in_blocks_agree_with_numpy(strategy, shape):
    # The uniform sticky builder hands the metrics its loads and moved count instead of a pass over owner[]
    # (fresh, and after churn without cooperative transfers: PartitionTally::count_known); range and round-robin
    # results (runs of 1 and 2) are counted in blocks (metrics.cpp, count_block). Fresh and after two kinds of
    # churn, with topics nobody subscribes to and more members than partitions: equal to numpy's count.
    topics, partitions, members = shape
    g = uniform_group(topics, partitions, members)
    a = g.arrays()
    keep = np.arange(0, topics, 2 if topics > 2 else 1, dtype=np.int32)   # every other topic subscribed
    M = len(g.members)
    a.update(sub_offsets=np.arange(M + 1, dtype=np.int64) * len(keep), sub_topics=np.tile(keep, M))
    fresh = kafkagroup.assign_arrays(strategy, **a)
    _check_metrics_with_numpy(a, fresh)
    for remove, add in ((max(1, members // 4) if members > 1 else 0, 0), (0, 3)):
        g2 = next_generation(uniform_group(topics, partitions, members), kafkagroup.assign_arrays("range", **a).owner,
                             remove=remove, add=add, seed=members)
        b = g2.arrays()
        M2 = len(g2.members)
        b.update(sub_offsets=np.arange(M2 + 1, dtype=np.int64) * len(keep), sub_topics=np.tile(keep, M2))
        _check_metrics_with_numpy(b, kafkagroup.assign_arrays(strategy, **b))


@pytest.mark.parametrize("partitions", [32767, 32768, 32769])
def test_cooperative_stretches_at_the_buffer_size_withhold_what_the_eager_target_moves(partitions):
    # The sticky builder writes owner[] through a buffer of min(P, 32,768) partitions (sticky/stretch_writer.hpp):
    # at, below and above one stretch, cooperative-sticky withholds exactly the partitions the eager target gives
    # a member other than their (clean, valid) previous owner, and keeps the rest of the eager target.
    g = uniform_group(1, partitions, 7)
    first = kafkagroup.assign_arrays("sticky", **g.arrays())
    a = next_generation(g, first.owner, remove=1, add=3, seed=partitions).arrays()   # owners above quota give up some
    eager = kafkagroup.assign_arrays("sticky", **a)
    coop = kafkagroup.assign_arrays("cooperative-sticky", **a)
    prev = _valid_previous_owners(a)
    transfers = np.flatnonzero((prev >= 0) & (prev != eager.owner))
    assert len(transfers) > 0 and coop.withheld.tolist() == transfers.tolist()
    expected = eager.owner.copy()
    expected[transfers] = -1
    assert np.array_equal(coop.owner, expected)
    _check_metrics_with_numpy(a, eager)
    _check_metrics_with_numpy(a, coop)


def test_result_objects_made_natively_behave_as_the_dataclasses():
    # assign_exact fills ArrayResult and Metrics through object.__setattr__ (no per-instance dict built) and
    # makes the arrays with numpy's C API over the engine's buffers: they behave as ones made by __init__.
    import copy
    import dataclasses
    import pickle

    a = next_generation(uniform_group(3, 5, 4), kafkagroup.assign_arrays("sticky", **uniform_group(3, 5, 4).arrays()).owner,
                        remove=1, seed=1).arrays()
    r = kafkagroup.assign_arrays("cooperative-sticky", **a)
    made = ArrayResult(r.owner, r.withheld, Metrics(**r.metrics.as_dict()), r.engine_us)
    assert r.metrics == made.metrics and hash(r.metrics) == hash(made.metrics)
    assert vars(r.metrics) == vars(made.metrics) and list(vars(r)) == ["owner", "withheld", "metrics", "engine_us"]
    assert dataclasses.asdict(r.metrics) == r.metrics.as_dict() and dataclasses.replace(r.metrics) == r.metrics
    assert pickle.loads(pickle.dumps(r.metrics)) == r.metrics and copy.deepcopy(r).metrics == r.metrics
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.metrics.moved = 3
    for array in (r.owner, r.withheld):
        assert array.dtype == np.int32 and array.ndim == 1 and array.flags.c_contiguous and array.flags.writeable
    r.owner[0] = 5                           # writable, the engine's buffer kept alive by the array alone
    assert r.owner[0] == 5
    owner = kafkagroup.assign_arrays("sticky", **uniform_group(2, 3, 1).arrays()).owner
    assert owner.tolist() == [0] * 6 and kafkagroup.assign_arrays("sticky", **uniform_group(2, 3, 1).arrays()).withheld.shape == (0,)


def test_assign_exact_takes_its_arguments_by_position_and_maps_errors():
    a = uniform_group(3, 4, 2).arrays()
    args = [a[k] for k in ARGS]
    with pytest.raises(TypeError, match="10 to 13 positional arguments"):
        _core.assign_exact("sticky", *args[:5])
    with pytest.raises(TypeError):
        _core.assign_exact("sticky", *args, shared_members=-1)
    with pytest.raises(TypeError):
        _core.assign_exact("sticky", *args, "many")
    bad = list(args)
    bad[0] = np.array([3, -1, 4], dtype=np.int32)
    with pytest.raises(InvalidGroupError, match="topic 1: negative partition count -1"):
        _core.assign_exact("sticky", *bad)
    with pytest.raises(InvalidGroupError, match="unknown assignment strategy 'nope'"):
        _core.assign_exact("nope", *args)
    assert _core.assign_exact("sticky", *args, -1, False).owner.tolist() == [0] * 6 + [1] * 6
