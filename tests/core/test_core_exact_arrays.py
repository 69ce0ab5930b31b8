"""assign_arrays' fast path (arrays already in the engine's layout go straight to _core.assign_exact) gives
what the converting path gives, and every other input is converted and checked as before."""
from __future__ import annotations

import numpy as np
import pytest

import kafkagroup
from kafkagroup import _core
from kafkagroup.errors import InvalidGroupError
from kafkagroup.scenarios import next_generation, random_group, uniform_group

STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky")


def _churned(seed: int):
    g = random_group(topics=12, partitions=7, members=9, seed=seed) if seed % 2 else uniform_group(5, 9, 7)
    first = kafkagroup.assign_arrays("sticky", **g.arrays())
    return next_generation(g, first.owner, remove=2, add=1, seed=seed).arrays()


def _as_lists(arrays):
    return {k: (None if v is None else v.tolist()) for k, v in arrays.items()}


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_exact_arrays_and_converted_inputs_agree(strategy, seed):
    arrays = _churned(seed)
    fast = kafkagroup.assign_arrays(strategy, **arrays)
    for other in (_as_lists(arrays),
                  {k: (None if v is None else v.astype(np.int16)) for k, v in arrays.items()},
                  {k: (None if v is None else np.repeat(v, 2)[::2]) for k, v in arrays.items()}):  # strided views
        slow = kafkagroup.assign_arrays(strategy, **other)
        assert np.array_equal(fast.owner, slow.owner) and np.array_equal(fast.withheld, slow.withheld)
        assert fast.metrics == slow.metrics
    assert fast.owner.dtype == np.int32 and fast.withheld.dtype == np.int32
    assert set(fast.metrics.as_dict()) == {"balance_gap", "max_load", "min_load", "assigned", "unassigned",
                                           "withheld", "moved", "moved_lower_bound"}


def test_assign_exact_declines_anything_but_exact_arrays():
    a = uniform_group(2, 3, 2).arrays()
    args = [a[k] for k in ("partition_count", "sub_offsets", "sub_topics", "owned_offsets", "owned_partitions",
                           "generation", "member_rack", "replica_offsets", "replica_racks")]
    assert _core.assign_exact("range", *args) is not None
    for i, bad in ((0, a["partition_count"].tolist()), (1, a["sub_offsets"].astype(np.int32)),
                   (2, a["sub_topics"].astype(np.int64)), (2, np.repeat(a["sub_topics"], 2)[::2]),
                   (0, a["partition_count"].reshape(1, -1)), (0, None), (1, None), (2, None)):
        changed = list(args)
        changed[i] = bad
        assert _core.assign_exact("range", *changed) is None, (i, bad)


def test_lossy_and_missing_inputs_still_refused_by_name():
    with pytest.raises(InvalidGroupError, match="sub_topics: expected integers"):
        kafkagroup.assign_arrays("range", [3], [0, 1], np.array([0.5]))
    with pytest.raises(InvalidGroupError, match="sub_topics: value 2147483648 does not fit in int32"):
        kafkagroup.assign_arrays("range", [3], [0, 1], np.array([2**31], dtype=np.int64))
    with pytest.raises(InvalidGroupError, match="partition_count: expected a 1-d array"):
        kafkagroup.assign_arrays("range", None, [0, 1], [0])
    with pytest.raises(InvalidGroupError, match="strategy must be a name"):
        kafkagroup.assign_arrays(3, [3], [0, 1], [0])
    with pytest.raises(InvalidGroupError, match="unknown assignment strategy 'nope'"):
        kafkagroup.assign_arrays("nope", np.array([3], np.int32), np.array([0, 1]), np.array([0], np.int32))
