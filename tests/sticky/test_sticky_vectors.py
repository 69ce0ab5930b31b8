"""Apache Kafka's own StickyAssignor / CooperativeStickyAssignor outputs (../shared/vectors): ours must be
valid, at least as balanced (max - min) and move no more partitions than Java's did."""
from __future__ import annotations

import pytest

import kafkagroup
import kafkagroup.assignors.sticky  # noqa: F401
from assignment_checks import owned_once_by_subscribers


def _members(scenario: dict) -> dict:
    return {mid: {"topics": m["topics"], "owned": [tuple(x) for x in m["owned"]], "generation": m["generation"],
                  "rack": m["rack"]} for mid, m in scenario["members"].items()}


def _spread(assignment: dict) -> int:
    sizes = [len(v) for v in assignment.values()]
    return max(sizes) - min(sizes)


@pytest.mark.parametrize("strategy", ["sticky", "cooperative-sticky"])
def test_vectors_quality_not_worse_than_java(assignor_vectors, strategy):
    assert len(assignor_vectors) == 30
    for v in assignor_vectors:
        sc = v["scenario"]
        members = _members(sc)
        r = kafkagroup.assign(strategy, sc["topics"], members)
        java = v["quality"][strategy]
        counts = {t: (c if isinstance(c, int) else len(c)) for t, c in sc["topics"].items()}
        # validity: subscribed owner, every partition of a subscribed topic exactly once (or withheld)
        seen = owned_once_by_subscribers(r, members, v["id"]) | {tuple(tp) for tp in r.withheld}
        subscribed = {t for m in members.values() for t in m["topics"] if t in counts}
        assert {(t, p) for t in subscribed for p in range(counts[t])} == {tuple(x) for x in seen}, v["id"]
        assert r.metrics.unassigned == 0
        if strategy == "sticky":
            assert _spread(r.assignment) <= java["spread"], (v["id"], r.assignment)
            assert r.metrics.balance_gap == 0, v["id"]
        else:
            # this round withholds transfers; the spread of the target (withheld given back) is judged
            target = {mid: list(tps) for mid, tps in r.assignment.items()}
            eager = kafkagroup.assign("sticky", sc["topics"], members)
            assert {tuple(x) for x in r.withheld} == {
                (tp.topic, tp.partition) for mid, tps in eager.assignment.items() for tp in tps
                if tp not in set(target[mid])}
            assert _spread(eager.assignment) <= java["spread"], v["id"]
        assert r.metrics.moved <= java["moved"], (v["id"], r.metrics, java)
