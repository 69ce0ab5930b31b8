"""Sticky and cooperative-sticky read straight from clean claims (csrc/kafkagroup/sticky/clean_claims.cpp) give
what the general path gives, and errors come out as before although prepare() leaves the claims' check to them.

Each member's claims reversed are runs of one, not ascending: too many runs for claim_runs (sticky/claim_runs.hpp),
and the windows refuse claims out of order, so the same group then goes through the general path
(previous_owners, the uniform builder), whose outcome does not depend on the order of a member's claims. So the
two orders compare the two paths through the public API. A member's runs listed in another order (blocks of
consecutive claims swapped) stay long runs: claim_runs sorts them, and the outcome is again the same."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafkagroup
from kafkagroup.errors import InvalidGroupError
from kafkagroup.scenarios import next_generation, uniform_group


def _reversed_claims(a: dict) -> dict:
    offsets, claims = a["owned_offsets"], a["owned_partitions"].copy()
    for m in range(len(offsets) - 1):
        claims[offsets[m]:offsets[m + 1]] = claims[offsets[m]:offsets[m + 1]][::-1].copy()
    return dict(a, owned_partitions=claims)


def _shared(a: dict) -> dict:
    row = a["sub_topics"][a["sub_offsets"][0]:a["sub_offsets"][1]]
    return dict(a, sub_offsets=None, sub_topics=row, num_members=len(a["sub_offsets"]) - 1)


def _same(r, s):
    assert np.array_equal(r.owner, s.owner)
    assert np.array_equal(r.withheld, s.withheld)
    assert r.metrics == s.metrics


@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
@pytest.mark.parametrize("rounds", [1, 3])
def test_clean_claims_path_equals_the_general_path(strategy, rounds):
    # 60,000 partitions: four 16,384-partition windows. After one churn each member's claims are one run; after
    # three, members hold runs spread over the range, interleaved with everyone else's.
    g = uniform_group(topics=60, partitions=1000, members=300)
    owner = kafkagroup.assign_arrays("sticky", **g.arrays()).owner
    moved = withheld = 0
    for step in range(rounds):
        g = next_generation(g, owner, remove=10, add=25, generation=step + 1, seed=step)
        a = g.arrays()
        for form in (a, _shared(a)):
            clean = kafkagroup.assign_arrays(strategy, **form)
            _same(clean, kafkagroup.assign_arrays(strategy, **_reversed_claims(form)))
            moved += clean.metrics.moved
            withheld += clean.metrics.withheld
        owner = kafkagroup.assign_arrays("sticky", **a).owner
    assert moved > 0
    assert withheld > 0 or strategy == "sticky"


def _blocks_swapped(a: dict) -> dict:
    """Each member's claims in two halves, the second half first: still long runs, no longer ascending."""
    offsets, claims = a["owned_offsets"], a["owned_partitions"].copy()
    for m in range(len(offsets) - 1):
        own = claims[offsets[m]:offsets[m + 1]].copy()
        half = len(own) // 2
        claims[offsets[m]:offsets[m + 1]] = np.concatenate([own[half:], own[:half]])
    return dict(a, owned_partitions=claims)


@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
def test_runs_of_claims_in_any_order_give_the_same_assignment(strategy):
    g = uniform_group(topics=60, partitions=1000, members=300)
    owner = kafkagroup.assign_arrays("sticky", **g.arrays()).owner
    for step in range(3):
        g = next_generation(g, owner, remove=10, add=25, generation=step + 1, seed=step)
        a = g.arrays()
        for form in (a, _shared(a)):
            swapped = kafkagroup.assign_arrays(strategy, **_blocks_swapped(form))
            _same(swapped, kafkagroup.assign_arrays(strategy, **form))
            _same(swapped, kafkagroup.assign_arrays(strategy, **_reversed_claims(form)))
        owner = kafkagroup.assign_arrays("sticky", **a).owner


@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
def test_claims_named_twice_are_settled_by_the_general_path(strategy):
    g = uniform_group(topics=40, partitions=1000, members=200)
    owner = kafkagroup.assign_arrays("sticky", **g.arrays()).owner
    a = next_generation(g, owner, remove=20, seed=1).arrays()
    claims, offsets = a["owned_partitions"].copy(), a["owned_offsets"]
    claims[offsets[5]] = claims[offsets[6]]           # member 5 names member 6's first partition (still ascending)
    claims[offsets[9] + 1] = claims[offsets[9]]       # member 9 names its first partition twice
    doubled = dict(a, owned_partitions=claims)
    _same(kafkagroup.assign_arrays(strategy, **doubled), kafkagroup.assign_arrays(strategy, **_reversed_claims(doubled)))


int_arrays = st.lists(st.integers(-3, 12) | st.integers(-2**31, 2**31 - 1), max_size=10)


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(int_arrays, int_arrays, int_arrays, st.one_of(st.none(), int_arrays), st.one_of(st.none(), int_arrays),
       st.one_of(st.none(), int_arrays), st.one_of(st.none(), int_arrays), st.one_of(st.none(), int_arrays),
       st.one_of(st.none(), int_arrays))
def test_errors_are_those_of_a_strategy_that_checks_the_claims_first(count, sub_off, sub_top, own_off, own, gen,
                                                                      mrack, rep_off, rep):
    """Range checks the claims inside prepare(); the sticky strategies leave them to the clean-claims path and
    check them only when it gives way, or first when a later check fails. Same input, same error."""
    count = [abs(c) % 40 for c in count]
    args = dict(partition_count=count, sub_offsets=sub_off, sub_topics=sub_top, owned_offsets=own_off,
                owned_partitions=own, generation=gen, member_rack=mrack, replica_offsets=rep_off, replica_racks=rep)

    def outcome(strategy):
        try:
            kafkagroup.assign_arrays(strategy, **args)
        except InvalidGroupError as e:
            return str(e)
        return None

    expected = outcome("range")
    for strategy in ("sticky", "cooperative-sticky"):
        assert outcome(strategy) == expected
