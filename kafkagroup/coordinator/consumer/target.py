"""Target assignments of consumer groups, computed by kafkagroup's native server-side assignors.

KIP-848 moves assignment to the coordinator: when the group epoch moves past the assignment epoch, the
coordinator computes a new target assignment for every member with the group's server assignor
(``uniform`` or ``range``, Kafka's ``group.consumer.assignors``), and members reconcile towards it.

The computation is incremental, as Kafka's ``TargetAssignmentBuilder``: every member's previous target is
handed to the assignor as what it owns (``owned``), with its ``group.instance.id`` and rack, so a sticky
assignor moves only what the change requires.  The engine is ``kafkagroup.assign("server-uniform" |
"server-range", ...)``; the only Python work per partition is turning names back into topic ids.

The group's assignor is the one most of its members name in ``group.remote.assignor`` (Kafka's
``computePreferredServerAssignor``; a tie goes to the name first counted), ``uniform`` when none does.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Mapping
from uuid import UUID

from kafkagroup.api import assign
from kafkagroup.coordinator.consumer.reconcile import Assignment

__all__ = ["SERVER_ASSIGNORS", "DEFAULT_ASSIGNOR", "preferred_assignor", "compute_target", "TargetMember"]

#: group.remote.assignor name -> kafkagroup engine strategy (Kafka's default group.consumer.assignors order)
SERVER_ASSIGNORS: Mapping[str, str] = {"uniform": "server-uniform", "range": "server-range"}
DEFAULT_ASSIGNOR = "uniform"

TargetMember = tuple[Iterable[str], str | None, str | None]   # (subscribed topic names, instance id, rack)


def preferred_assignor(names: Iterable[str | None]) -> str:
    counts = Counter(n for n in names if n is not None)
    if not counts:
        return DEFAULT_ASSIGNOR
    return counts.most_common(1)[0][0]


def compute_target(assignor: str, topics: Mapping[str, tuple[UUID, int]], members: Mapping[str, TargetMember],
                   previous: Mapping[str, Assignment]) -> dict[str, Assignment]:
    """member id -> its target partitions (by topic id) for the subscribed ``topics`` (name -> (id, count)).

    ``members[m] = (topic names, instance id, rack)``; topics that do not exist are left out of a member's
    subscription; ``previous[m]`` is the member's target before this change (what the assignor keeps where
    it can)."""
    if not members:
        return {}
    names_by_id = {tid: name for name, (tid, _) in topics.items()}
    subscriptions = {}
    for member_id, (names, instance_id, rack) in members.items():
        owned = [(names_by_id[tid], p) for tid, parts in previous.get(member_id, {}).items()
                 if tid in names_by_id for p in parts]
        subscriptions[member_id] = {"topics": [t for t in names if t in topics], "owned": owned,
                                    "instance": instance_id, "rack": rack}
    result = assign(SERVER_ASSIGNORS[assignor], {name: count for name, (_, count) in topics.items()},
                    subscriptions)
    target: dict[str, Assignment] = {}
    for member_id in members:
        by_topic: dict[UUID, list[int]] = {}
        for tp in result.assignment[member_id]:
            by_topic.setdefault(topics[tp.topic][0], []).append(tp.partition)
        target[member_id] = {tid: frozenset(parts) for tid, parts in by_topic.items()}
    return target
