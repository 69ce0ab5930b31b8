"""Garbage over the array API: the sticky engines either answer or raise InvalidGroupError (a
ValueError) -- never crash, hang or return an invalid owner array."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkagroup.engine import assign_arrays
from kafkagroup.errors import InvalidGroupError

small = st.integers(-3, 12)


@settings(max_examples=400, deadline=None)
@given(strategy=st.sampled_from(["sticky", "cooperative-sticky"]),
       counts=st.lists(small, max_size=4), sub_offsets=st.lists(small, min_size=0, max_size=6),
       sub_topics=st.lists(small, max_size=10), owned_offsets=st.none() | st.lists(small, max_size=6),
       owned=st.lists(small, max_size=12), generation=st.none() | st.lists(st.integers(-5, 5), max_size=6),
       racks=st.none() | st.lists(st.integers(-1, 3), max_size=6),
       replica_offsets=st.none() | st.lists(small, max_size=14), replica_racks=st.lists(st.integers(-1, 3), max_size=14))
def test_garbage_never_crashes(strategy, counts, sub_offsets, sub_topics, owned_offsets, owned, generation, racks,
                               replica_offsets, replica_racks):
    kwargs = dict(owned_offsets=owned_offsets, owned_partitions=owned if owned_offsets is not None else None,
                  generation=generation, member_rack=racks, replica_offsets=replica_offsets,
                  replica_racks=replica_racks if replica_offsets is not None else None)
    try:
        r = assign_arrays(strategy, counts, sub_offsets, sub_topics, **kwargs)
    except InvalidGroupError as e:
        assert str(e)
        return
    P = sum(counts)
    assert r.owner.shape == (P,)
    M = len(sub_offsets) - 1
    assert ((r.owner >= -1) & (r.owner < M)).all()


def test_bad_claim_names_member_and_partition():
    with pytest.raises(InvalidGroupError, match="member 1.*owned partition id 9"):
        assign_arrays("sticky", [3], [0, 1, 2], [0, 0], owned_offsets=[0, 0, 1], owned_partitions=[9])


def test_duplicate_and_unsubscribed_claims_are_dropped_not_fatal():
    # member 0 lists partition 0 twice; member 1 claims a topic it does not subscribe to
    r = assign_arrays("sticky", np.array([2, 2], np.int32), [0, 1, 2], [0, 1],
                      owned_offsets=[0, 2, 3], owned_partitions=[0, 0, 1], generation=[1, 1])
    assert r.owner.tolist()[0] == 0 and r.metrics.moved == 0
