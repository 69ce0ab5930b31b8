"""Cases named by the foundation issue and the peers' known defects."""
from __future__ import annotations

import kafkagroup
from kafkagroup.structs import TopicPartition as TP


def parts(result, member):
    return [(tp.topic, tp.partition) for tp in result.assignment[member]]


def test_static_members_sort_before_dynamic_by_instance_id():
    # kafka-python 3.0.12 gives b nothing here; Java orders [a (inst-1), c (inst-2), b (dynamic)].
    members = {"a": {"topics": ["t"], "instance": "inst-1"}, "b": {"topics": ["t"]},
               "c": {"topics": ["t"], "instance": "inst-2"}}
    for strategy in ("range", "roundrobin"):
        r = kafkagroup.assign(strategy, {"t": 3}, members)
        assert parts(r, "a") == [("t", 0)] and parts(r, "c") == [("t", 1)] and parts(r, "b") == [("t", 2)]


def test_instance_id_order_wins_over_member_id_order():
    members = {"z": {"topics": ["t"], "instance": "a"}, "a": {"topics": ["t"], "instance": "b"}}
    r = kafkagroup.assign("range", {"t": 4}, members)
    assert parts(r, "z") == [("t", 0), ("t", 1)]


def test_roundrobin_with_different_subscriptions():
    # kafka-python 3.0.12 raises KeyError here.
    members = {"C0": {"topics": ["t0"]}, "C1": {"topics": ["t0", "t1"]}, "C2": {"topics": ["t0", "t1", "t2"]}}
    r = kafkagroup.assign("roundrobin", {"t0": 1, "t1": 2, "t2": 3}, members)
    assert parts(r, "C0") == [("t0", 0)]
    assert parts(r, "C1") == [("t1", 0)]
    assert parts(r, "C2") == [("t1", 1), ("t2", 0), ("t2", 1), ("t2", 2)]


def test_member_without_subscription_gets_nothing_and_is_listed():
    r = kafkagroup.assign("range", {"t": 2}, {"C0": {"topics": []}, "C1": {"topics": ["t"]}})
    assert r.assignment == {"C0": [], "C1": [TP("t", 0), TP("t", 1)]}


def test_topic_with_zero_partitions_and_unknown_topic():
    r = kafkagroup.assign("roundrobin", {"empty": 0, "t": 2}, {"C0": {"topics": ["empty", "t", "nope"]}})
    assert r.assignment == {"C0": [TP("t", 0), TP("t", 1)]}
    assert r.unknown_topics == ["nope"]


def test_java_string_order_for_non_bmp_names():
    # Java compares UTF-16 code units: U+1D11E (surrogates D834 DD1E) sorts BEFORE U+FF5E; Python's
    # code-point order puts it after. Range gives the first member in Java order the extra partition.
    members = {"\U0001d11e": {"topics": ["t"]}, "\uff5e": {"topics": ["t"]}}
    r = kafkagroup.assign("range", {"t": 3}, members)
    assert len(r.assignment["\U0001d11e"]) == 2
    # Topic order too: roundrobin deals topics in Java name order.
    r = kafkagroup.assign("roundrobin", {"\uff5e": 1, "\U0001d11e": 1}, {"A": {"topics": ["\uff5e", "\U0001d11e"]},
                                                                         "B": {"topics": ["\uff5e", "\U0001d11e"]}})
    assert parts(r, "A") == [("\U0001d11e", 0)]


def test_rack_aware_range_prefers_matching_replicas():
    topics = {"t": [["r0"], ["r1"], ["r0"], ["r1"]]}
    members = {"C0": {"topics": ["t"], "rack": "r1"}, "C1": {"topics": ["t"], "rack": "r0"}}
    r = kafkagroup.assign("range", topics, members)
    assert parts(r, "C0") == [("t", 1), ("t", 3)] and parts(r, "C1") == [("t", 0), ("t", 2)]


def test_metrics_moved_and_lower_bound():
    # C0 owned everything; C1 joins. Balanced needs 2 moves; range moves t-2,t-3 (the minimum).
    members = {"C0": {"topics": ["t"], "owned": [("t", p) for p in range(4)], "generation": 5},
               "C1": {"topics": ["t"]}}
    r = kafkagroup.assign("range", {"t": 4}, members)
    assert (r.metrics.moved, r.metrics.moved_lower_bound, r.metrics.balance_gap) == (2, 2, 0)


def test_stale_and_conflicting_claims_do_not_count_as_previous_ownership():
    # C1's claim on t-0 has the highest generation; C0 and C2 claim t-1 in the same generation (void).
    members = {"C0": {"topics": ["t"], "owned": [("t", 0), ("t", 1)], "generation": 1},
               "C1": {"topics": ["t"], "owned": [("t", 0)], "generation": 2},
               "C2": {"topics": ["t"], "owned": [("t", 1)], "generation": 1}}
    r = kafkagroup.assign("roundrobin", {"t": 3}, members)
    # roundrobin: C0 t-0, C1 t-1, C2 t-2 -> t-0 left its valid owner C1; t-1 had no valid owner.
    assert r.metrics.moved == 1
