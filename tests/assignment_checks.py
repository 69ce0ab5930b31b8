"""Checks on an assignment result that tests in several folders share (importable from any test module:
tests/ is on sys.path because tests/conftest.py lives there)."""
from __future__ import annotations

from typing import Any, Mapping

from kafkagroup.structs import TopicPartition


def owned_once_by_subscribers(result: Any, members: Mapping[str, Mapping[str, Any]],
                              context: object = "") -> set[TopicPartition]:
    """The validity half of Kafka's verifyValidityAndBalance on ``result.assignment``: no partition has two
    owners, and each owner subscribes to the partition's topic. Returns the partitions assigned.
    ``context`` (e.g. a vector id) is added to a failure's message."""
    seen: set[TopicPartition] = set()
    for member_id, tps in result.assignment.items():
        for tp in tps:
            assert tp.topic in members[member_id]["topics"], (context, member_id, tp)
            assert tp not in seen, (context, "two owners", tp)
            seen.add(tp)
    return seen
