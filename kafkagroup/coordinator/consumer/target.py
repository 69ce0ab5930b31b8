"""Target assignments of consumer groups, computed by kafkagroup's native server-side assignors.

KIP-848 moves assignment to the coordinator: when the group epoch moves past the assignment epoch, the
coordinator computes a new target assignment for every member with the group's server assignor
(``uniform`` or ``range``, Kafka's ``group.consumer.assignors``), and members reconcile towards it.

The computation is incremental, as Kafka's ``TargetAssignmentBuilder``: every member's previous target is
handed to the assignor as what it owns (``owned``), with its ``group.instance.id``, so a sticky assignor
moves only what the change requires.  The assignors are ``kafkagroup.assignors.server`` (the native
``server-uniform`` / ``server-range``, racks ignored as Kafka ignores them): the Python work per partition is
the previous target's claims and the new owner array, grouped by numpy.

The group's assignor is the one most of its members name in ``group.remote.assignor`` (Kafka's
``computePreferredServerAssignor``; a tie goes to the name first counted), ``uniform`` when none does.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Mapping
from uuid import UUID

from kafkagroup.coordinator.consumer.reconcile import Assignment

__all__ = ["SERVER_ASSIGNORS", "DEFAULT_ASSIGNOR", "preferred_assignor", "compute_target", "TargetMember"]

#: group.remote.assignor name -> kafkagroup engine strategy (Kafka's default group.consumer.assignors order)
SERVER_ASSIGNORS: Mapping[str, str] = {"uniform": "server-uniform", "range": "server-range"}
DEFAULT_ASSIGNOR = "uniform"

# (subscribed topic names sorted -- equal subscriptions best as the same tuple --, instance id, rack)
TargetMember = tuple[tuple[str, ...], str | None, str | None]


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
    it can).  Cost outside the engine: one pass over the previous target's partitions (the owned claims) and
    one over the new owner array (numpy groups it by member); equal subscriptions share one tuple, which
    the group builder codes once."""
    if not members:
        return {}
    # numpy and the native engine load with the first target, not with the coordinator: `kafkagroup serve`
    # starts without them (a classic-only node never needs them)
    from kafkagroup.assignors.server import server_assignor

    return server_assignor(assignor).assign(members, topics, previous)
