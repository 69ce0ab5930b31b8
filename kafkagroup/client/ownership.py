"""Assignment bookkeeping of a member: what was added, what must be revoked (spec §6.4, §6.5, §6.7).

A member's own bookkeeping is set algebra over :class:`TopicPartition` (hash sets, C-speed; a member owns at
most a few thousand partitions); the leader's cooperative check compares sets of them too, as Java's does.

    owned {t-0, t-1}, assigned {t-1, t-2}:  added {t-2}, revoked {t-0}
"""
from __future__ import annotations

from operator import attrgetter
from typing import TYPE_CHECKING, AbstractSet, Iterable, Mapping, NamedTuple

from kafkagroup.assignors.base import sorted_partitions
from kafkagroup.client.errors import CooperativeAssignmentViolation   # re-exported: its old home
from kafkagroup.structs import TopicPartition

if TYPE_CHECKING:
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


def validate_cooperative_assignment(owned: Mapping[str, Iterable[TopicPartition]], result: GroupAssignment) -> None:
    """Raise if a partition is given to one member in the same round it is revoked from another (§6.5).

    ``owned`` is every member's owned partitions *exactly as its Subscription sent them* (Java's leader passes
    ``subscription.ownedPartitions()``): partitions of topics the member no longer subscribes to, of topics
    missing from the metadata or out of range included -- not the claims the group decoding kept.  Under
    COOPERATIVE a partition must first be revoked by its owner (one rebalance) and only then be assigned (a
    follow-up rebalance); an assignment that does both at once would let two members own it.  Kafka checks
    nothing else: a partition given to several members (a broadcast assignor) passes as long as no member
    loses it in the same round.

        owned  {A: [t-0]} (A now subscribes to u only), assigned {A: [u-0], B: [t-0, t-1]}: refused (t-0)
    """
    bad = cooperative_violations(owned, result)
    if bad:
        sample = ", ".join(f"{tp.topic}-{tp.partition}" for tp in bad[:10])
        raise CooperativeAssignmentViolation(
            "Assignor supporting the COOPERATIVE protocol violates its requirements: "
            f"{len(bad)} partition(s) assigned while being revoked from another member in the same rebalance "
            f"({sample})"
        )


def cooperative_violations(owned: Mapping[str, Iterable[TopicPartition]],
                           result: GroupAssignment) -> list[TopicPartition]:
    """Java's ``validateCooperativeAssignment``: the partitions (sorted by topic, then partition) that some
    member's new assignment adds while another member's revokes them, with added = assigned and not in the
    member's ``owned`` as sent, revoked = in ``owned`` as sent and not assigned to it.

    Set algebra over TopicPartitions (hash sets, C speed), as Java's: the claims as sent have no ids in the
    compact group when their topic left every subscription or the metadata.  The leader runs it only for an
    assignor supporting COOPERATIVE that is not cooperative-sticky, i.e. a Python assignor, whose answer is
    TopicPartitions already (an ``owner[]`` answer is turned into them here).
    """
    added: set[TopicPartition] = set()
    revoked: set[TopicPartition] = set()
    for member, new in result.member_partitions().items():
        old = frozenset(owned.get(member, ()))
        if old == new:
            continue
        added |= new - old
        revoked |= old - new
    return sorted_partitions(added & revoked)
