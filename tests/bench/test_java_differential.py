"""Differential check against Apache Kafka's own assignors (kafka-clients 3.9 through the bench's Java
driver, one JVM for the module): range and roundrobin must be identical member by member on random
groups (mixed subscriptions, static members whose group.instance.id order differs from their member id
order, racks: KIP-881 rack-aware range); sticky and cooperative-sticky are judged by the one checker
over several generations of churn: both valid, kafkagroup balanced, and kafkagroup moving no more
partitions than Java from the same input.

Needs the jars (make kafka-jars, or $KAFKAGROUP_KAFKA_JARS) and a JDK; missing either fails the module.
"""
from __future__ import annotations

import random

import numpy as np
import pytest

import kafkagroup
from kafkagroup.bench.checker import check
from kafkagroup.bench.java_peer import JavaAssignors
from kafkagroup.bench.peers import split_owner
from kafkagroup.model import build_group
from kafkagroup.scenarios import next_generation, random_group

RACKS = ["use1-az1", "use1-az2", "use1-az3"]


@pytest.fixture(scope="module")
def java():
    with JavaAssignors() as driver:
        yield driver


def random_named_group(rng: random.Random, racks: bool):
    """(topics, subscriptions, instance ids) of a random group in the object API's form."""
    topics: dict = {}
    for t in range(rng.randint(1, 6)):
        count = rng.choice([0, 1, 2, 3, 5, 8, 13, 30])
        name = rng.choice(["orders", "pay", "audit", "t", "x"]) + f"-{t}"
        topics[name] = ([sorted(rng.sample(RACKS, rng.randint(1, 3)), key=lambda _: rng.random())
                         for _ in range(count)] if racks else count)
    names = list(topics)
    members = {}
    for i in range(rng.randint(1, 12)):
        mid = f"consumer-{rng.randint(0, 999):03d}-{i}"
        spec: dict = {"topics": rng.sample(names, rng.randint(1, len(names)))}
        if rng.random() < 0.35:
            spec["instance"] = f"static-{rng.randint(0, 99):02d}-{i}"
        if racks and rng.random() < 0.85:
            spec["rack"] = rng.choice(RACKS)
        members[mid] = spec
    return topics, members


@pytest.mark.parametrize("strategy", ["range", "roundrobin"])
def test_range_roundrobin_identical_to_java(java, strategy):
    rng = random.Random(f"differential-{strategy}")
    compared = static_seen = racks_seen = 0
    for case in range(120):
        racks = case % 2 == 1
        topics, members = random_named_group(rng, racks)
        group = build_group(topics, members)
        instances = [members[m].get("instance") for m in group.members]
        ours = kafkagroup.assign(strategy, topics, members)
        theirs = java.assign(strategy, group, instance_ids=instances, warmup=0, rounds=1)
        for index, member in enumerate(group.members):
            got = sorted((tp.topic, tp.partition) for tp in ours.assignment[member])
            names, numbers = group.partition_names(theirs.assignment[index])
            want = sorted(zip(names, numbers))
            assert got == want, (f"case {case} {strategy}: member {member} differs from Java\n"
                                 f"topics={topics}\nmembers={members}")
        compared += 1
        static_seen += any(instances)
        racks_seen += racks
    assert compared == 120 and static_seen > 30 and racks_seen == 60


@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
def test_sticky_valid_balanced_and_moves_at_most_java(java, strategy):
    """Five generations of churn per group, each input the previous kafkagroup output fed back, both
    assignors answering the same input. kafkagroup may move more than Java only to reach a strictly more
    even assignment (lower sum of squared loads, judged on the eager sticky result of the same input,
    since a cooperative round holds moved partitions back); with uniform subscriptions, never."""
    cooperative = strategy == "cooperative-sticky"
    rng = np.random.default_rng(11)
    fewer = more_for_balance = 0
    for case in range(16):
        uniform = case % 2 == 0
        group = random_group(topics=int(rng.integers(3, 12)), partitions=int(rng.integers(1, 12)),
                             members=int(rng.integers(4, 30)), fraction=1.0 if uniform else 0.5, seed=case)
        owner = kafkagroup.assign_arrays(strategy, **group.arrays()).owner
        for generation in range(1, 6):
            remove = int(rng.integers(0, max(1, len(group.members) // 4)))
            group = next_generation(group, owner, remove=remove, add=int(rng.integers(0, 4)),
                                    generation=generation, seed=case * 10 + generation)
            ours_owner = kafkagroup.assign_arrays(strategy, **group.arrays()).owner
            ours = check(group, split_owner(ours_owner, len(group.members)), cooperative=cooperative)
            theirs = check(group, java.assign(strategy, group, warmup=0, rounds=1).assignment, cooperative=cooperative)
            where = f"case {case} generation {generation}"
            assert ours.valid, f"{where}: {ours.problem}"
            assert theirs.valid, f"{where}: Java {theirs.problem}"
            assert theirs.withheld <= ours.moves + theirs.moves  # held back only what moves
            if not cooperative:
                assert ours.balanced, where
            if ours.moves > theirs.moves:
                assert not uniform, f"{where}: kafkagroup moved {ours.moves}, Java {theirs.moves}"
                eager_ours = check(group, split_owner(kafkagroup.assign_arrays("sticky", **group.arrays()).owner,
                                                      len(group.members)))
                eager_theirs = check(group, java.assign("sticky", group, warmup=0, rounds=1).assignment)
                assert eager_ours.load_sq < eager_theirs.load_sq, (
                    f"{where}: kafkagroup moved {ours.moves} > Java {theirs.moves} without a more even result")
                more_for_balance += 1
            fewer += ours.moves < theirs.moves
            owner = ours_owner
    print(f"\n{strategy}: of 80 rebalances kafkagroup moved fewer partitions than Java in {fewer}, "
          f"more (for a more even assignment) in {more_for_balance}")
