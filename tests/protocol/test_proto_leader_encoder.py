"""The Cython assignment encoder against its pure-Python twin on shapes the hypothesis test in
test_proto_leader_codec.py does not reach: topic names of every header-copy length class, members
holding several topics and several partitions per topic, members holding nothing, unowned partitions."""
from __future__ import annotations

import numpy as np
import pytest

from kafkagroup.errors import InvariantError
from kafkagroup.model import build_group
from kafkagroup.protocol import decode_assignment
from kafkagroup.protocol.leader import encode_assignments, native_available
from kafkagroup.structs import TopicPartition

# The Cython codec is part of every build: its absence is a failure, not a reason to skip.
assert native_available(), "kafkagroup._codec is not built (run make build)"


def test_topic_names_of_every_length_class():
    names = ["x" * n + f"{n:02d}" for n in range(0, 71)]      # header = 2 + 2..72 bytes
    metadata = {name: 1 + len(name) % 3 for name in names}
    members = {f"C{k}": list(metadata) for k in range(3)}
    group = build_group(metadata, members)
    total = int(group.topic_base[-1])
    rng = np.random.default_rng(3)
    owner = rng.integers(-1, 3, size=total).astype(np.int32)
    native = encode_assignments(group, owner, user_data=b"ud", codec="native")
    assert native == encode_assignments(group, owner, user_data=b"ud", codec="python")
    for index, member in enumerate(group.members):
        topics, partitions = group.partition_names(np.flatnonzero(owner == index))
        assert list(decode_assignment(native[member]).partitions) == [
            TopicPartition(t, p) for t, p in zip(topics, partitions)]


def test_several_partitions_per_topic_and_idle_members():
    group = build_group({"alpha": 6, "beta-topic-with-a-long-name": 5}, {f"C{k}": ["alpha", "beta-topic-with-a-long-name"]
                                                                         for k in range(4)})
    owner = np.array([0, 0, 1, 0, -1, 1, 1, 1, 0, 0, 1], dtype=np.int32)   # C2 and C3 get nothing
    native = encode_assignments(group, owner, version=1, codec="native")
    assert native == encode_assignments(group, owner, version=1, codec="python")
    assert decode_assignment(native["C0"]).partitions == (
        TopicPartition("alpha", 0), TopicPartition("alpha", 1), TopicPartition("alpha", 3),
        TopicPartition("beta-topic-with-a-long-name", 2), TopicPartition("beta-topic-with-a-long-name", 3))
    assert decode_assignment(native["C3"]).partitions == ()


@pytest.mark.parametrize("seed", range(6))
def test_runs_across_topics_empty_topics_and_far_apart_topics(seed):
    # Shapes the hypothesis test rarely draws: runs of one owner that cross into the next topic, topics with
    # no partitions between held ones, members holding one partition of many topics or a few of topics far
    # apart, and unassigned partitions.
    rng = np.random.default_rng(seed)
    counts = [int(c) for c in rng.choice([0, 0, 1, 3, 40], size=60)]
    metadata = {f"topic-{t:03d}": c for t, c in enumerate(counts)}
    group = build_group(metadata, {f"C{k}": list(metadata) for k in range(5)})
    total = int(group.topic_base[-1])
    owner = np.full(total, -1, dtype=np.int32)
    at = 0
    while at < total:   # runs of random lengths (1..120) and owners, some unassigned
        n = int(rng.integers(1, 120))
        owner[at:at + n] = int(rng.integers(-1, 4))
        at += n
    owner[rng.choice(total, size=min(total, 7), replace=False)] = 4   # C4: a few partitions far apart
    native = encode_assignments(group, owner, codec="native")
    assert native == encode_assignments(group, owner, codec="python")
    for index, member in enumerate(group.members):
        topics, partitions = group.partition_names(np.flatnonzero(owner == index))
        assert list(decode_assignment(native[member]).partitions) == [
            TopicPartition(t, p) for t, p in zip(topics, partitions)]


def _check_against_reference(group, owner, **kw):
    native = encode_assignments(group, owner, codec="native", **kw)
    assert native == encode_assignments(group, owner, codec="python", **kw)
    for index, member in enumerate(group.members):
        topics, partitions = group.partition_names(np.flatnonzero(owner == index))
        assert list(decode_assignment(native[member]).partitions) == [
            TopicPartition(t, p) for t, p in zip(topics, partitions)]
    return native


@pytest.mark.parametrize("seed", range(8))
def test_single_group_topics_next_to_run_topics(seed):
    # The encoder picks a loop per topic: topics where every assigned partition opens a group of its own
    # (range / round-robin with more members than partitions per topic: member k gets at most one partition
    # of each) and topics with runs or repeats of one owner (sticky's stretches, round-robin's p, p+M, ...);
    # and its sizing pass switches between a per-partition and a per-run loop after such topics. Every
    # order of the shapes, with unassigned partitions, names of every header length class, a member holding
    # several single-group topics then a run (its earlier one-partition groups keep count 1, its run's group
    # gets its count when it closes), and a member whose last group is a run (closed at the end).
    rng = np.random.default_rng(100 + seed)
    members = int(rng.integers(3, 9))
    names = [("n" * int(rng.choice([0, 1, 5, 9, 20, 26, 27, 40]))) + f"{t:03d}" for t in range(40)]
    counts = [int(rng.integers(0, 3 * members)) for _ in names]
    metadata = dict(zip(names, counts))
    group = build_group(metadata, {f"C{k}": list(metadata) for k in range(members)})
    owner = np.full(int(group.topic_base[-1]), -1, dtype=np.int32)
    for t, name in enumerate(group.topics):
        lo, hi = int(group.topic_base[t]), int(group.topic_base[t + 1])
        shape = rng.integers(0, 4)
        if shape == 0 and hi - lo <= members:   # one partition per member at most, some unassigned
            owner[lo:hi] = rng.permutation(members)[:hi - lo]
            owner[lo:hi][rng.random(hi - lo) < 0.2] = -1
        elif shape == 1:                         # runs of one owner
            cuts = np.sort(rng.integers(lo, hi + 1, size=3))
            for a, b in zip([lo, *cuts], [*cuts, hi]):
                owner[a:b] = rng.integers(-1, members)
        elif shape == 2:                         # round-robin over fewer members than partitions
            owner[lo:hi] = (np.arange(hi - lo) + t) % members
        else:                                    # anything
            owner[lo:hi] = rng.integers(-1, members, size=hi - lo)
    _check_against_reference(group, owner, version=int(rng.integers(0, 4)),
                             user_data=None if seed % 2 else b"x" * seed)


def test_range_shape_one_partition_of_every_topic_per_member():
    # The reference shape in small: every member gets partition k of every topic (all single-group topics),
    # then one topic handed out in runs, then single-group topics again.
    members, topics = 7, 12
    metadata = {f"topic-{t:02d}": members for t in range(topics)}
    group = build_group(metadata, {f"C{k}": list(metadata) for k in range(members)})
    owner = np.tile(np.arange(members, dtype=np.int32), topics)
    owner[5 * members:6 * members] = [0, 0, 0, 1, 1, 2, 2]
    native = _check_against_reference(group, owner)
    assert decode_assignment(native["C3"]).partitions == tuple(
        TopicPartition(f"topic-{t:02d}", 3) for t in range(topics) if t != 5)


@pytest.mark.parametrize("shape", ["single", "runs"])
def test_the_first_owner_outside_members_is_named_in_either_sizing_loop(shape):
    # The sizing pass checks owner[] in both of its loops (one partition at a time, or a run at a time after
    # a topic with runs) and names the first bad index, also inside a run of bad values.
    group = build_group({"a": 4, "b": 6}, {"C0": ["a", "b"], "C1": ["a", "b"]})
    first = [0, 1, -1, 1] if shape == "single" else [0, 0, 1, 1]
    for bad, at in ((2, 7), (-2, 5), (7, 9)):
        owner = np.array(first + [1, 1, 0, 0, 0, 0], dtype=np.int32)
        owner[at:at + 2 if at < 9 else 10] = bad
        for codec in ("python", "native"):
            with pytest.raises(InvariantError, match=rf"owner\[{at}\] = {bad} is not a member index in \[-1, 2\)"):
                encode_assignments(group, owner, codec=codec)
