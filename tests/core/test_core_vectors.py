"""Range and roundrobin equal Apache Kafka's output on every vector (as sets per member)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import kafkagroup
from kafkagroup._reference import REFERENCE
from kafkagroup.assignors import get_assignor
from kafkagroup.protocol import Subscription

VECTORS = json.loads((Path(__file__).resolve().parents[2] / ".." / "shared" / "vectors" /
                      "assignor_vectors.json").read_text())["vectors"]
DETERMINISTIC = ("range", "roundrobin")


def as_sets(assignment) -> dict[str, list[list]]:
    return {m: sorted([t, p] for t, p in tps) for m, tps in assignment.items()}


@pytest.mark.parametrize("strategy", DETERMINISTIC)
@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: f"v{v['id']}")
def test_native_equals_kafka(vector, strategy):
    s = vector["scenario"]
    result = kafkagroup.assign(strategy, s["topics"], s["members"])
    assert as_sets(result.assignment) == as_sets(vector["expected"][strategy])
    # The vectors count every partition in the metadata; ours leaves out topics nobody subscribes to.
    # (Their "moved" counts raw claims, ours only valid previous owners, so it is not compared.)
    quality = vector["quality"][strategy]
    subscribed = {t for m in s["members"].values() for t in m["topics"]}
    unsubscribed = sum(c if isinstance(c, int) else len(c) for t, c in s["topics"].items() if t not in subscribed)
    assert result.metrics.max_load == quality["max"]
    assert result.metrics.min_load == quality["min"]
    assert result.metrics.assigned == quality["assigned"]
    assert result.metrics.unassigned == quality["unassigned"] - unsubscribed == 0


@pytest.mark.parametrize("strategy", DETERMINISTIC)
@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: f"v{v['id']}")
def test_reference_equals_kafka(vector, strategy):
    s = vector["scenario"]
    assert as_sets(REFERENCE[strategy](s["topics"], s["members"])) == as_sets(vector["expected"][strategy])


@pytest.mark.parametrize("strategy", DETERMINISTIC)
@pytest.mark.parametrize("vector", VECTORS[:10], ids=lambda v: f"v{v['id']}")
def test_assignor_class_equals_kafka(vector, strategy):
    """The plug-in interface: Subscriptions in, Assignments out (instance ids passed alongside)."""
    s = vector["scenario"]
    subs = {m: Subscription(spec["topics"], owned_partitions=[tuple(x) for x in spec["owned"]],
                            generation_id=spec["generation"], rack_id=spec["rack"])
            for m, spec in s["members"].items()}
    instances = {m: spec["instance"] for m, spec in s["members"].items() if spec.get("instance")}
    out = get_assignor(strategy).assign(s["topics"], subs, group_instance_ids=instances)
    assert as_sets({m: a.partitions for m, a in out.items()}) == as_sets(vector["expected"][strategy])
