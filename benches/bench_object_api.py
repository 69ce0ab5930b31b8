"""The object API (``kafkagroup.assign``: dicts of names in, a member -> partitions mapping out) at the
reference shape, 500 topics x 2,000 partitions (1M) x 2,000 members, fresh and after churn (10% of the
members replaced, every survivor claiming what it owned), for every strategy.

Each row is measured next to the engine call alone on the same group (``assign_arrays`` on the interned
arrays: the floor the object API adds interning to) and, for range and roundrobin fresh, kafka-python
3.0.12's assignor (capped, KAFKAGROUP_PEER_CAP_S). Per-member lists are built when read, so a row times
what every call pays; ``test_object_api_all_lists`` times reading every member's list as well.
"""
from __future__ import annotations

import os
import time

import numpy as np
import pytest
from bench_range_roundrobin import kafka_python_inputs
from conftest import time_peer
from kafka.coordinator.assignors.range import RangePartitionAssignor as KpRange
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor as KpRoundRobin

import kafkagroup
from kafkagroup.scenarios import next_generation, to_names, uniform_group

CAP_S = float(os.environ.get("KAFKAGROUP_PEER_CAP_S", "60"))
STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky")
PEERS = {"range": KpRange, "roundrobin": KpRoundRobin}


def reference_group(strategy: str, kind: str):
    group = uniform_group(topics=500, partitions=2000, members=2000)
    if kind == "churn":
        first = kafkagroup.assign_arrays(strategy, **group.arrays())
        group = next_generation(group, first.owner, remove=200, add=200, seed=1)
    return group


def engine_ms(strategy: str, group, rounds: int = 3) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        kafkagroup.assign_arrays(strategy, **group.arrays())
        times.append((time.perf_counter() - start) * 1000)
    return float(np.median(times))


@pytest.mark.parametrize("kind", ["fresh", "churn"])
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_object_api_reference_shape(benchmark, report, strategy, kind):
    group = reference_group(strategy, kind)
    topics, members = to_names(group)
    result = benchmark.pedantic(lambda: kafkagroup.assign(strategy, topics, members), rounds=5, warmup_rounds=1)
    assert result.metrics.unassigned == 0
    report.add(f"{strategy} 1M x 2000 {kind}, object API", benchmark, "engine call alone",
               engine_ms(strategy, group), 0, "ratio < 1: the object API's share over the engine")
    if kind == "fresh" and strategy in PEERS:
        cluster, kp_members = kafka_python_inputs(group)
        peer = PEERS[strategy]()
        report.add(f"{strategy} 1M x 2000 {kind}, object API", benchmark, "kafka-python 3.0.12",
                   time_peer(lambda: peer.assign(cluster, kp_members), rounds=1, cap_s=CAP_S), CAP_S)


def test_object_api_all_lists(benchmark, report):
    """Reading every member's TopicPartition list too (1M objects), range fresh."""
    group = reference_group("range", "fresh")
    topics, members = to_names(group)
    benchmark.pedantic(lambda: dict(kafkagroup.assign("range", topics, members).assignment.items()),
                       rounds=3, warmup_rounds=1)
    report.add("range 1M x 2000 fresh, object API + every list", benchmark, "engine call alone",
               engine_ms("range", group), 0)
