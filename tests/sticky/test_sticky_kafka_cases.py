"""Apache Kafka's AbstractStickyAssignorTest / StickyAssignorTest / CooperativeStickyAssignorTest cases
(and librdkafka's ut_ names), restated through kafkagroup.assign. Each case checks Kafka's
verifyValidityAndBalance plus the case's own expectation."""
from __future__ import annotations

import random

import numpy as np
import pytest

import kafkagroup
import kafkagroup.assignors.sticky  # noqa: F401
from kafkagroup.structs import TopicPartition as TP
from assignment_checks import owned_once_by_subscribers

STRATEGIES = ["sticky", "cooperative-sticky"]


def verify(r, topics, members):
    """verifyValidityAndBalance: subscribed owners, each partition once, balanced (no single move to a
    member with >= 2 fewer that subscribes to the topic)."""
    owned_once_by_subscribers(r, members)
    if not r.withheld:
        load = {mid: len(tps) for mid, tps in r.assignment.items()}
        for mid, tps in r.assignment.items():
            for tp in tps:
                for other, spec in members.items():
                    if tp.topic in spec["topics"]:
                        assert load[other] >= load[mid] - 1, (tp, mid, other)
        assert r.metrics.balance_gap == 0


def follow_up(strategy, topics, members, r, generation):
    """Next round: every member owns what it was given (cooperative: withheld ones revoked)."""
    nxt = {mid: dict(spec, owned=[(tp.topic, tp.partition) for tp in r.assignment.get(mid, [])],
                     generation=generation) for mid, spec in members.items()}
    return nxt, kafkagroup.assign(strategy, topics, nxt)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_one_consumer_no_topic_and_nonexistent_topic(strategy):
    r = kafkagroup.assign(strategy, {}, {"c": {"topics": []}})
    assert r.assignment == {"c": []}
    r = kafkagroup.assign(strategy, {}, {"c": {"topics": ["gone"]}}, strict=False)
    assert r.assignment == {"c": []}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_only_assigns_partitions_from_subscribed_topics(strategy):
    topics = {"topic": 3, "other": 3}
    members = {"c": {"topics": ["topic"]}}
    r = kafkagroup.assign(strategy, topics, members)
    assert r.assignment["c"] == [TP("topic", 0), TP("topic", 1), TP("topic", 2)]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_two_consumers_one_topic_one_partition_and_mixed(strategy):
    r = kafkagroup.assign(strategy, {"t": 1}, {"c1": {"topics": ["t"]}, "c2": {"topics": ["t"]}})
    assert sorted(len(v) for v in r.assignment.values()) == [0, 1]
    topics = {"t1": 3, "t2": 2}
    members = {"c1": {"topics": ["t1"]}, "c2": {"topics": ["t1", "t2"]}, "c3": {"topics": ["t1"]}}
    r = kafkagroup.assign(strategy, topics, members)
    verify(r, topics, members)
    assert sorted(len(v) for v in r.assignment.values()) == [1, 2, 2]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_add_remove_consumer_one_topic(strategy):
    topics = {"t": 3}
    members = {"c1": {"topics": ["t"]}}
    r = kafkagroup.assign(strategy, topics, members)
    members = {"c1": {"topics": ["t"], "owned": [(tp.topic, tp.partition) for tp in r.assignment["c1"]], "generation": 1},
               "c2": {"topics": ["t"], "generation": -1}}
    r2 = kafkagroup.assign(strategy, topics, members)
    if strategy == "sticky":
        verify(r2, topics, members)
        assert r2.metrics.moved == 1 and len(r2.assignment["c2"]) == 1
    else:
        assert len(r2.withheld) == 1 and r2.assignment["c2"] == []
        nxt, r3 = follow_up(strategy, topics, members, r2, 2)
        verify(r3, topics, nxt)
        assert r3.withheld == [] and len(r3.assignment["c2"]) == 1
    # c1 leaves: c2 takes everything
    r4 = kafkagroup.assign(strategy, topics, {"c2": {"topics": ["t"], "owned": [], "generation": 2}})
    assert len(r4.assignment["c2"]) == 3


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_poor_round_robin_assignment_scenario(strategy):
    topics = {f"topic{i}": i for i in range(1, 6)}
    members = {"consumer1": {"topics": ["topic1", "topic2", "topic3", "topic4", "topic5"]},
               "consumer2": {"topics": ["topic1", "topic3", "topic5"]},
               "consumer3": {"topics": ["topic1", "topic3", "topic5"]},
               "consumer4": {"topics": ["topic1", "topic2", "topic3", "topic4", "topic5"]}}
    r = kafkagroup.assign(strategy, topics, members)
    verify(r, topics, members)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_reassignment_after_one_consumer_leaves(strategy):
    topics = {f"topic{i:02d}": i for i in range(1, 20)}
    members = {f"consumer{i:02d}": {"topics": [f"topic{j:02d}" for j in range(1, i + 1)]} for i in range(1, 20)}
    r = kafkagroup.assign(strategy, topics, members)
    verify(r, topics, members)
    nxt = {mid: dict(spec, owned=[(tp.topic, tp.partition) for tp in r.assignment[mid]], generation=1)
           for mid, spec in members.items() if mid != "consumer10"}
    r2 = kafkagroup.assign(strategy, topics, nxt)
    verify(r2, topics, nxt)
    # stickiness: nobody loses a partition it could keep without hurting balance (moved == 0 here is
    # what Kafka's isSticky demands: no partition moves between two remaining members back and forth)
    assert r2.metrics.moved <= r2.metrics.moved_lower_bound + 0 if r2.metrics.moved_lower_bound >= 0 else True


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_new_subscription(strategy):
    topics = {f"topic{i}": 1 for i in range(5)}
    members = {f"consumer{i}": {"topics": [f"topic{j}" for j in range(5 - i, 5)]} for i in range(3)}
    members["consumer0"]["topics"] = ["topic0"]
    r = kafkagroup.assign(strategy, topics, members)
    verify(r, topics, members)
    members["consumer0"]["topics"] = ["topic0", "topic1"]
    nxt = {mid: dict(spec, owned=[(tp.topic, tp.partition) for tp in r.assignment[mid]], generation=1)
           for mid, spec in members.items()}
    r2 = kafkagroup.assign(strategy, topics, nxt)
    if not r2.withheld:
        verify(r2, topics, nxt)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_stickiness(strategy):
    topics = {"topic01": 3}
    members = {f"consumer0{i}": {"topics": ["topic01"]} for i in range(1, 5)}
    r = kafkagroup.assign(strategy, topics, members)
    verify(r, topics, members)
    holders = {tp: mid for mid, tps in r.assignment.items() for tp in tps}
    nxt = {mid: dict(spec, owned=[(tp.topic, tp.partition) for tp in r.assignment[mid]], generation=1)
           for mid, spec in members.items() if mid != "consumer01"}
    r2 = kafkagroup.assign(strategy, topics, nxt)
    verify(r2, topics, nxt)
    for mid, tps in r2.assignment.items():
        for tp in tps:
            if holders[tp] != "consumer01":
                assert holders[tp] == mid  # partitions of remaining members stay put


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_conflicting_previous_assignments(strategy):
    # both claim t-0 and t-1 in the same generation: both claims are void; balance still holds
    topics = {"t": 2}
    members = {"c1": {"topics": ["t"], "owned": [("t", 0), ("t", 1)], "generation": 1},
               "c2": {"topics": ["t"], "owned": [("t", 0), ("t", 1)], "generation": 1}}
    r = kafkagroup.assign(strategy, topics, members)
    assert r.metrics.moved == 0  # no valid previous owner, nothing counts as moved
    if strategy == "sticky":
        assert sorted(len(v) for v in r.assignment.values()) == [1, 1]
    else:
        # every partition is claimed by the member that does not get it: all withheld this round
        assert len(r.withheld) == 2


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_owned_partitions_are_invalidated_for_consumer_with_stale_generation(strategy):
    topics = {"topic": 3, "topic2": 3}
    g = 10
    members = {"c1": {"topics": ["topic", "topic2"], "owned": [("topic", 0), ("topic", 2), ("topic2", 1)], "generation": g},
               "c2": {"topics": ["topic", "topic2"], "owned": [("topic", 0), ("topic", 2), ("topic2", 1)], "generation": g - 1}}
    r = kafkagroup.assign(strategy, topics, members)
    assert set(r.assignment["c1"]) == {TP("topic", 0), TP("topic", 2), TP("topic2", 1)}
    assert set(r.assignment["c2"]) == {TP("topic", 1), TP("topic2", 0), TP("topic2", 2)}
    assert r.withheld == []


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_owned_partitions_are_invalidated_for_consumer_with_no_generation(strategy):
    topics = {"topic": 3, "topic2": 3}
    members = {"c1": {"topics": ["topic", "topic2"], "owned": [("topic", 0), ("topic", 2), ("topic2", 1)], "generation": 10},
               "c2": {"topics": ["topic", "topic2"], "owned": [("topic", 0), ("topic", 2), ("topic2", 1)], "generation": -1}}
    r = kafkagroup.assign(strategy, topics, members)
    assert set(r.assignment["c1"]) == {TP("topic", 0), TP("topic", 2), TP("topic2", 1)}
    assert set(r.assignment["c2"]) == {TP("topic", 1), TP("topic2", 0), TP("topic2", 2)}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_ensure_partitions_assigned_to_highest_generation(strategy):
    topics = {"topic": 3, "topic2": 3, "topic3": 3}
    all_t = ["topic", "topic2", "topic3"]
    g = 10
    members = {
        "c1": {"topics": all_t, "owned": [("topic", 0), ("topic2", 0), ("topic3", 0)], "generation": g},
        "c2": {"topics": all_t, "owned": [("topic", 1), ("topic2", 1), ("topic3", 1)], "generation": g - 1},
        "c3": {"topics": all_t, "owned": [("topic2", 1), ("topic3", 0), ("topic3", 2)], "generation": g - 2},
    }
    r = kafkagroup.assign(strategy, topics, members)
    assert set(r.assignment["c1"]) == {TP("topic", 0), TP("topic2", 0), TP("topic3", 0)}
    assert set(r.assignment["c2"]) == {TP("topic", 1), TP("topic2", 1), TP("topic3", 1)}
    assert set(r.assignment["c3"]) == {TP("topic", 2), TP("topic2", 2), TP("topic3", 2)}
    assert r.withheld == []


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_all_consumers_reach_expected_quota_and_are_considered_filled(strategy):
    topics = {"topic": 4}
    members = {"c1": {"topics": ["topic"], "owned": [("topic", 0), ("topic", 1)], "generation": 1},
               "c2": {"topics": ["topic"], "owned": [("topic", 2)], "generation": 1},
               "c3": {"topics": ["topic"], "owned": [], "generation": 1}}
    r = kafkagroup.assign(strategy, topics, members)
    assert r.assignment["c1"] == [TP("topic", 0), TP("topic", 1)]
    assert r.assignment["c2"] == [TP("topic", 2)]
    assert r.assignment["c3"] == [TP("topic", 3)]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_assignment_updated_for_deleted_topic(strategy):
    topics = {"topic01": 1, "topic03": 100}
    members = {"consumer": {"topics": ["topic01", "topic02", "topic03"]}}
    r = kafkagroup.assign(strategy, topics, members, strict=False)
    assert len(r.assignment["consumer"]) == 101


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_large_assignment_with_multiple_consumers_leaving_and_random_subscription(strategy):
    rnd = random.Random(42)
    topics = {f"t{i}": rnd.randint(1, 10) for i in range(40)}
    names = sorted(topics)
    members = {f"c{i}": {"topics": rnd.sample(names, rnd.randint(1, 20))} for i in range(200)}
    r = kafkagroup.assign(strategy, topics, members)
    verify(r, topics, members)
    nxt = {mid: dict(spec, owned=[(tp.topic, tp.partition) for tp in r.assignment[mid]], generation=1)
           for mid, spec in members.items() if rnd.random() > 0.25}
    r2 = kafkagroup.assign(strategy, topics, nxt)
    verify(r2, topics, nxt)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_reassignment_with_random_subscriptions_and_changes(strategy):
    rnd = random.Random(7)
    for _ in range(10):
        topics = {f"t{i}": rnd.randint(1, 20) for i in range(rnd.randint(5, 20))}
        names = sorted(topics)
        members = {f"c{i}": {"topics": rnd.sample(names, rnd.randint(1, len(names)))}
                   for i in range(rnd.randint(2, 20))}
        r = kafkagroup.assign("sticky", topics, members)
        verify(r, topics, members)
        changed = {mid: dict(topics=rnd.sample(names, rnd.randint(1, len(names))),
                             owned=[(tp.topic, tp.partition) for tp in r.assignment[mid]], generation=1)
                   for mid in members}
        r2 = kafkagroup.assign(strategy, topics, changed)
        verify(r2, topics, changed)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_no_reassignment_on_current_members(strategy):
    topics = {f"topic{i}": n for i, n in enumerate([3, 2, 3, 4, 5])}
    all_t = sorted(topics)
    members = {"c0": {"topics": all_t, "owned": [], "generation": -1},
               "c1": {"topics": all_t, "owned": [("topic0", 0), ("topic2", 0), ("topic4", 0)], "generation": 5},
               "c2": {"topics": all_t, "owned": [("topic0", 1), ("topic2", 1), ("topic4", 1)], "generation": 5},
               "c3": {"topics": all_t, "owned": [("topic0", 2), ("topic2", 2), ("topic4", 2)], "generation": 5}}
    r = kafkagroup.assign(strategy, topics, members)
    for mid in ("c1", "c2", "c3"):
        assert set(members[mid]["owned"]) <= {(tp.topic, tp.partition) for tp in r.assignment[mid]}
    assert r.metrics.moved == 0


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_rack_aware_owned_partitions_move_to_matching_racks(strategy):
    # RackAware*: partitions with replicas only in r0 / r1; a member in r1 owning r0-only partitions.
    topics = {"t": [["r0"], ["r0"], ["r1"], ["r1"]]}
    members = {"c0": {"topics": ["t"], "rack": "r0", "owned": [("t", 2), ("t", 3)], "generation": 1},
               "c1": {"topics": ["t"], "rack": "r1", "owned": [("t", 0), ("t", 1)], "generation": 1}}
    r = kafkagroup.assign("sticky", topics, members)
    assert r.assignment["c0"] == [TP("t", 0), TP("t", 1)]
    assert r.assignment["c1"] == [TP("t", 2), TP("t", 3)]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_rack_aware_balance_wins_over_racks(strategy):
    topics = {"t": [["r0"], ["r0"], ["r0"], ["r0"]], "u": [["r1"]]}
    members = {"c0": {"topics": ["t", "u"], "rack": "r0"}, "c1": {"topics": ["t", "u"], "rack": "r1"}}
    r = kafkagroup.assign(strategy, topics, members)
    verify(r, topics, members)
    assert TP("u", 0) in r.assignment["c1"]
    assert sorted(len(v) for v in r.assignment.values()) == [2, 3]


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_rack_aware_general_prefers_matching_member(strategy):
    topics = {"t": [["r0"], ["r1"], ["r0"], ["r1"]], "u": [["r0"], ["r1"]]}
    members = {"c0": {"topics": ["t", "u"], "rack": "r0"}, "c1": {"topics": ["t"], "rack": "r1"},
               "c2": {"topics": ["t", "u"], "rack": "r1"}}
    r = kafkagroup.assign(strategy, topics, members)
    verify(r, topics, members)
    # every balanced assignment here puts at least one partition off its rack; ours puts exactly one
    rack = {"c0": "r0", "c1": "r1", "c2": "r1"}
    off_rack = sum(1 for mid, tps in r.assignment.items() for tp in tps
                   if rack[mid] not in topics[tp.topic][tp.partition])
    assert off_rack == 1


@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
def test_generation_int32_min_is_a_generation_like_any_other(strategy):
    """Every int32 is a generation a member may send; equal generations keep their claims whatever the value
    (INT32_MIN once doubled as the 'no claim yet' marker and made a lone claim look contested)."""
    results = []
    for gen in (-5, 0, 2**31 - 1, -2**31):
        r = kafkagroup.assign_arrays(strategy, np.array([4], np.int32), np.array([0, 1, 2]), np.array([0, 0], np.int32),
                                     owned_offsets=np.array([0, 2, 4]), owned_partitions=np.array([1, 3, 0, 2], np.int32),
                                     generation=np.array([gen, gen], np.int32))
        results.append((r.owner.tolist(), r.withheld.tolist()))
    assert results == [([1, 0, 1, 0], [])] * 4
    # a higher generation still wins over INT32_MIN for the same partition
    r = kafkagroup.assign_arrays(strategy, np.array([2], np.int32), np.array([0, 1, 2]), np.array([0, 0], np.int32),
                                 owned_offsets=np.array([0, 2, 3]), owned_partitions=np.array([0, 1, 0], np.int32),
                                 generation=np.array([-2**31, -2**31 + 1], np.int32))
    assert r.owner[0] == 1 or 0 in r.withheld.tolist()
