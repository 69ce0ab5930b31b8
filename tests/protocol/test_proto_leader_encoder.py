"""The Cython assignment encoder against its pure-Python twin on shapes the hypothesis test in
test_proto_leader_codec.py does not reach: topic names of every header-copy length class, members
holding several topics and several partitions per topic, members holding nothing, unowned partitions."""
from __future__ import annotations

import numpy as np
import pytest

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
