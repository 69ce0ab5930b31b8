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
