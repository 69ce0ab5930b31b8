"""Assignment bookkeeping of a member: what was added, what must be revoked (spec §6.4, §6.5, §6.7).

A member's own bookkeeping is set algebra over :class:`TopicPartition` (hash sets, C-speed; a member owns at
most a few thousand partitions); the leader's cooperative check runs on the group's arrays.

    owned {t-0, t-1}, assigned {t-1, t-2}:  added {t-2}, revoked {t-0}
"""
from __future__ import annotations

from operator import attrgetter
from typing import TYPE_CHECKING, AbstractSet, Iterable, NamedTuple

from kafkagroup.assignors.base import sorted_partitions
from kafkagroup.client.errors import CooperativeAssignmentViolation   # re-exported: its old home
from kafkagroup.structs import TopicPartition

if TYPE_CHECKING:
    import numpy as np

    from kafkagroup.assignors.group_assignment import GroupAssignment
    from kafkagroup.protocol.consumer_protocol import Assignment

_TOPIC = attrgetter("topic")

__all__ = [
    "AssignedPartitions",
    "AssignmentDelta",
    "assignment_delta",
    "partitions_of_unsubscribed_topics",
    "topics_outside_subscription",
    "CooperativeAssignmentViolation",
    "validate_cooperative_assignment",
    "sorted_partitions",
    "cooperative_violations",
]


class AssignedPartitions(frozenset):
    """A member's decoded assignment: a frozenset of :class:`TopicPartition` (what the callbacks receive), which
    also keeps the partitions per topic as the SyncGroup bytes carried them (``by_topic``: ``((topic, partition
    numbers), ...)``, see :attr:`Assignment.by_topic`), so that a consumer of whole assignments (the simulator's
    ownership ledger) can take them a topic at a time instead of hashing every TopicPartition.  Set operations
    on it return plain frozensets."""

    by_topic: tuple[tuple[str, tuple[int, ...]], ...]

    @classmethod
    def of(cls, assignment: "Assignment") -> "AssignedPartitions":
        assigned = cls(assignment.partitions)
        assigned.by_topic = assignment.by_topic
        return assigned


class AssignmentDelta(NamedTuple):
    """Change from the owned set to a newly received assignment."""

    added: frozenset[TopicPartition]
    revoked: frozenset[TopicPartition]
    kept: frozenset[TopicPartition]


def assignment_delta(owned: AbstractSet[TopicPartition], assigned: AbstractSet[TopicPartition]) -> AssignmentDelta:
    """``added = assigned - owned``, ``revoked = owned - assigned``, ``kept = owned & assigned``."""
    owned_f = owned if isinstance(owned, frozenset) else frozenset(owned)
    assigned_f = assigned if isinstance(assigned, frozenset) else frozenset(assigned)
    if not owned_f:   # owning nothing (eager, every rebalance): everything is added, the assignment itself
        return AssignmentDelta(assigned_f, frozenset(), frozenset())
    if owned_f == assigned_f:   # nothing changes (cooperative: most members, most rebalances): one pass
        return AssignmentDelta(frozenset(), frozenset(), owned_f)
    return AssignmentDelta(assigned_f - owned_f, owned_f - assigned_f, owned_f & assigned_f)


def partitions_of_unsubscribed_topics(
    owned: Iterable[TopicPartition], topics: AbstractSet[str]
) -> frozenset[TopicPartition]:
    """Owned partitions whose topic is no longer subscribed: what a COOPERATIVE onJoinPrepare revokes (§6.4)."""
    by_topic = getattr(owned, "by_topic", None)   # a decoded assignment (AssignedPartitions): per topic
    owned_topics = frozenset(t for t, _ in by_topic) if by_topic is not None else frozenset(map(_TOPIC, owned))
    if owned_topics <= topics:   # the usual case: nothing to revoke
        return frozenset()
    return frozenset(tp for tp in owned if tp.topic not in topics)


def topics_outside_subscription(assigned: Iterable[TopicPartition], topics: AbstractSet[str]) -> frozenset[str]:
    """Topics of an assignment that the member does not subscribe to (§6.7 step 2: the assignment is outdated)."""
    return frozenset(map(_TOPIC, assigned)) - frozenset(topics)


def validate_cooperative_assignment(result: GroupAssignment) -> None:
    """Raise if a partition is given to one member in the same round it is revoked from another (§6.5).

    Under COOPERATIVE a partition must first be revoked by its owner (one rebalance) and only then be assigned
    (a follow-up rebalance); an assignment that does both at once would let two members own it.  Kafka checks
    nothing else: a partition given to several members (a broadcast assignor) passes as long as no member
    loses it in the same round.
    """
    bad = cooperative_violations(result)
    if bad.size:
        topics, partitions = result.group.partition_names(bad[:10])
        sample = ", ".join(f"{t}-{p}" for t, p in zip(topics, partitions))
        raise CooperativeAssignmentViolation(
            "Assignor supporting the COOPERATIVE protocol violates its requirements: "
            f"{bad.size} partition(s) assigned while being revoked from another member in the same rebalance "
            f"({sample})"
        )


def cooperative_violations(result: GroupAssignment) -> "np.ndarray":
    """Java's ``validateCooperativeAssignment`` over the compact group: the global ids (ascending, unique) of
    partitions that some member's new assignment adds while another member's revokes them.

    Revoked = claimed by a member (its Subscription's owned partitions, as the leader decoded them) and not
    assigned to it; added = assigned to a member that did not claim it.  Works on either shape of
    :class:`GroupAssignment` (one owner per partition, or many); vectorized, no Python loop over partitions.
    """
    import numpy as np

    group = result.group
    if group.owned_offsets is None or group.owned_partitions is None or len(group.owned_partitions) == 0:
        return np.zeros(0, dtype=np.int64)
    claims = np.asarray(group.owned_partitions, dtype=np.int64)
    claimer = np.repeat(np.arange(len(group.owned_offsets) - 1, dtype=np.int64), np.diff(group.owned_offsets))
    revoked = np.unique(claims[~result.holds(claimer, claims)])
    if revoked.size == 0:
        return np.zeros(0, dtype=np.int64)
    members, partitions = result.pairs_of(revoked)
    total = int(group.topic_base[-1])
    added = ~np.isin(members * total + partitions, claimer * total + claims)
    return np.unique(partitions[added])
