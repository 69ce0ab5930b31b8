"""Seeded scenario generators along Kafka's own benchmark axes, built straight as compact arrays.

Used by ``kafkagroup demo``, the benches and the tests: member count, partitions, topic count, uniform
or random subscriptions, fresh or after churn (members removed or added, ownership carried over).
Arrays are built with numpy, never per partition in Python, so a 1M-partition group takes milliseconds.

>>> g = uniform_group(topics=2, partitions=3, members=2)
>>> g.members, g.partition_count.tolist(), g.sub_topics.tolist()
(['m0000000', 'm0000001'], [3, 3], [0, 1, 0, 1])
"""
from __future__ import annotations

from typing import Any

import numpy as np

from kafkagroup.model import CompactGroup

# Names sort in Java order exactly as their ids do (fixed width, ASCII), so these groups are what
# build_group would produce from the same names.
_TOPIC = "topic{:06d}"
_MEMBER = "m{:07d}"


def _group(topics: int, partitions: int | np.ndarray, sub_offsets: np.ndarray, sub_topics: np.ndarray,
           member_ids: list[str]) -> CompactGroup:
    count = np.full(topics, partitions, dtype=np.int32) if np.isscalar(partitions) else \
        np.asarray(partitions, dtype=np.int32)
    base = np.zeros(topics + 1, dtype=np.int64)
    np.cumsum(count, out=base[1:])
    return CompactGroup(topics=[_TOPIC.format(t) for t in range(topics)], members=member_ids, racks=[None],
                        partition_count=count, topic_base=base, sub_offsets=sub_offsets.astype(np.int64),
                        sub_topics=sub_topics.astype(np.int32))


def uniform_group(topics: int, partitions: int, members: int) -> CompactGroup:
    """Every member subscribes to every topic; `partitions` per topic."""
    sub_offsets = np.arange(members + 1, dtype=np.int64) * topics
    sub_topics = np.tile(np.arange(topics, dtype=np.int32), members)
    return _group(topics, partitions, sub_offsets, sub_topics, [_MEMBER.format(i) for i in range(members)])


def random_group(topics: int, partitions: int, members: int, fraction: float = 0.5, seed: int = 0) -> CompactGroup:
    """Each member subscribes to a random `fraction` of the topics (at least one)."""
    rng = np.random.default_rng(seed)
    chosen = rng.random((members, topics)) < fraction
    empty = ~chosen.any(axis=1)
    chosen[np.flatnonzero(empty), rng.integers(0, topics, size=int(empty.sum()))] = True
    lengths = chosen.sum(axis=1)
    sub_offsets = np.zeros(members + 1, dtype=np.int64)
    np.cumsum(lengths, out=sub_offsets[1:])
    sub_topics = np.nonzero(chosen)[1].astype(np.int32)
    return _group(topics, partitions, sub_offsets, sub_topics, [_MEMBER.format(i) for i in range(members)])


def last_member_on_one_topic(topics: int, partitions: int, members: int) -> CompactGroup:
    """Kafka's large test: all members on all topics but the last, which subscribes to topic 0 only."""
    g = uniform_group(topics, partitions, members)
    sub_offsets = g.sub_offsets.copy()
    sub_offsets[-1] = sub_offsets[-2] + 1
    return _group(topics, partitions, sub_offsets, g.sub_topics[: sub_offsets[-1]], g.members)


def next_generation(group: CompactGroup, owner: np.ndarray, *, remove: int = 0, add: int = 0,
                    generation: int = 1, seed: int = 0) -> CompactGroup:
    """The group one rebalance later: members own what `owner` gave them (at `generation`), `remove`
    random members leave and `add` new members (subscribed like member 0) join with nothing owned."""
    rng = np.random.default_rng(seed)
    m = len(group.members)
    keep = np.sort(rng.choice(m, size=m - remove, replace=False)) if remove else np.arange(m)
    # Owned CSR of the kept members, partitions ascending per member.
    assigned = np.flatnonzero(owner >= 0)
    by_member = assigned[np.argsort(owner[assigned], kind="stable")]
    counts = np.bincount(owner[assigned], minlength=m)
    starts = np.zeros(m + 1, dtype=np.int64)
    np.cumsum(counts, out=starts[1:])
    owned_chunks = [by_member[starts[i]:starts[i + 1]] for i in keep]
    sub_chunks = [group.sub_topics[group.sub_offsets[i]:group.sub_offsets[i + 1]] for i in keep]
    sub_chunks += [group.sub_topics[group.sub_offsets[0]:group.sub_offsets[1]]] * add
    owned_chunks += [np.zeros(0, dtype=np.int64)] * add

    def csr(chunks: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        offsets = np.zeros(len(chunks) + 1, dtype=np.int64)
        np.cumsum([len(c) for c in chunks], out=offsets[1:])
        flat = np.concatenate(chunks) if chunks else np.zeros(0)
        return offsets, flat.astype(np.int32)

    sub_offsets, sub_topics = csr(sub_chunks)
    owned_offsets, owned_partitions = csr(owned_chunks)
    # New ids continue after the highest generated id ever used, so they never repeat a member that is
    # still in the group after several generations of removals and additions.
    numbered = [int(name[1:]) for name in group.members if name[:1] == "m" and name[1:].isdigit()]
    first_new = max(max(numbered, default=-1) + 1, m)
    members = [group.members[i] for i in keep] + [_MEMBER.format(first_new + i) for i in range(add)]
    out = _group(len(group.topics), group.partition_count, sub_offsets, sub_topics, members)
    out.owned_offsets, out.owned_partitions = owned_offsets, owned_partitions
    gen = np.full(len(members), generation, dtype=np.int32)
    gen[len(keep):] = -1
    out.generation = gen
    return out


def to_names(group: CompactGroup) -> tuple[dict[str, int], dict[str, dict[str, Any]]]:
    """The scenario (object API) form of a compact group: (topics, members)."""
    topics = dict(zip(group.topics, group.partition_count.tolist()))
    members: dict[str, dict[str, Any]] = {}
    for i, mid in enumerate(group.members):
        spec: dict[str, Any] = {"topics": [group.topics[t] for t in
                                           group.sub_topics[group.sub_offsets[i]:group.sub_offsets[i + 1]].tolist()]}
        if group.owned_offsets is not None:
            ids = group.owned_partitions[group.owned_offsets[i]:group.owned_offsets[i + 1]]
            names, parts = group.partition_names(ids)
            spec["owned"] = list(zip(names, parts))
        if group.generation is not None:
            spec["generation"] = int(group.generation[i])
        members[mid] = spec
    return topics, members


def sample_group() -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """A small group after churn, for the demo: C2 left, C5 joined, C3 is static, two racks."""
    topics: dict[str, Any] = {
        "orders": [["r0", "r1"], ["r1"], ["r0"], ["r1", "r0"], ["r0"], ["r1"]],
        "payments": [["r0", "r1"], ["r1", "r0"], ["r0"], ["r1"]],
        "audit": [["r1", "r0"], ["r0", "r1"], ["r1", "r0"]],
    }
    members = {
        "C0": {"topics": ["orders", "payments", "audit"], "owned": [["orders", 0], ["orders", 1], ["payments", 0],
                                                                     ["audit", 0]], "generation": 3, "rack": "r0"},
        "C1": {"topics": ["orders", "payments", "audit"], "owned": [["orders", 2], ["payments", 1], ["audit", 1]],
               "generation": 3, "rack": "r1"},
        "C3": {"topics": ["orders", "payments"], "owned": [["orders", 4], ["orders", 5], ["payments", 3]],
               "generation": 3, "rack": "r1", "instance": "consumer-3"},
        "C4": {"topics": ["orders", "payments", "audit"], "owned": [["audit", 2]], "generation": 3, "rack": "r0"},
        "C5": {"topics": ["orders", "payments", "audit"]},
    }
    return topics, members
