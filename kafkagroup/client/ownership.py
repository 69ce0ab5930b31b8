"""Assignment bookkeeping of a member: what was added, what must be revoked (spec §6.4, §6.5, §6.7).

All operations are set algebra over :class:`TopicPartition` (hash sets, C-speed); a member owns at most a few
thousand partitions, so nothing here is on a per-partition hot path of the group as a whole.

    owned {t-0, t-1}, assigned {t-1, t-2}:  added {t-2}, revoked {t-0}
"""
from __future__ import annotations

from operator import attrgetter
from typing import TYPE_CHECKING, AbstractSet, Iterable, Mapping, NamedTuple

from kafkagroup.client.errors import CooperativeAssignmentViolation   # re-exported: its old home
from kafkagroup.structs import TopicPartition

if TYPE_CHECKING:
    import numpy as np

_TOPIC = attrgetter("topic")
_TOPIC_THEN_PARTITION = attrgetter("topic", "partition")

__all__ = [
    "AssignmentDelta",
    "assignment_delta",
    "partitions_of_unsubscribed_topics",
    "topics_outside_subscription",
    "CooperativeAssignmentViolation",
    "validate_cooperative_assignment",
    "sorted_partitions",
    "cooperative_violations",
]


class AssignmentDelta(NamedTuple):
    """Change from the owned set to a newly received assignment."""

    added: frozenset[TopicPartition]
    revoked: frozenset[TopicPartition]
    kept: frozenset[TopicPartition]


def assignment_delta(owned: AbstractSet[TopicPartition], assigned: AbstractSet[TopicPartition]) -> AssignmentDelta:
    """``added = assigned - owned``, ``revoked = owned - assigned``, ``kept = owned & assigned``."""
    owned_f, assigned_f = frozenset(owned), frozenset(assigned)
    return AssignmentDelta(assigned_f - owned_f, owned_f - assigned_f, owned_f & assigned_f)


def partitions_of_unsubscribed_topics(
    owned: Iterable[TopicPartition], topics: AbstractSet[str]
) -> frozenset[TopicPartition]:
    """Owned partitions whose topic is no longer subscribed: what a COOPERATIVE onJoinPrepare revokes (§6.4)."""
    if frozenset(map(_TOPIC, owned)) <= topics:   # the usual case, checked in C: nothing to revoke
        return frozenset()
    return frozenset(tp for tp in owned if tp.topic not in topics)


def topics_outside_subscription(assigned: Iterable[TopicPartition], topics: AbstractSet[str]) -> frozenset[str]:
    """Topics of an assignment that the member does not subscribe to (§6.7 step 2: the assignment is outdated)."""
    return frozenset(map(_TOPIC, assigned)) - frozenset(topics)


def validate_cooperative_assignment(
    owned: Mapping[str, Iterable[TopicPartition]],
    assigned: Mapping[str, Iterable[TopicPartition]],
) -> None:
    """Raise if a partition is given to one member in the same round it is revoked from another (§6.5).

    Under COOPERATIVE a partition must first be revoked by its owner (one rebalance) and only then be assigned
    (a follow-up rebalance); an assignment that does both at once would let two members own it.
    """
    total_added: set[TopicPartition] = set()
    total_revoked: set[TopicPartition] = set()
    for member, new in assigned.items():
        new_set = set(new)
        old_set = set(owned.get(member, ()))
        total_added |= new_set - old_set
        total_revoked |= old_set - new_set
    for member, old in owned.items():
        if member not in assigned:
            total_revoked |= set(old)
    both = total_added & total_revoked
    if both:
        sample = ", ".join(repr(tp) for tp in sorted_partitions(both)[:10])
        raise CooperativeAssignmentViolation(
            "Assignor supporting the COOPERATIVE protocol violates its requirements: "
            f"{len(both)} partition(s) assigned while being revoked from another member in the same rebalance "
            f"({sample})"
        )


def sorted_partitions(partitions: Iterable[TopicPartition]) -> list[TopicPartition]:
    """Partitions sorted by topic then partition (stable order for callbacks and reports)."""
    return sorted(partitions, key=_TOPIC_THEN_PARTITION)


def cooperative_violations(owned_offsets: "np.ndarray | None", owned_partitions: "np.ndarray | None",
                           owner: "np.ndarray") -> "np.ndarray":
    """Array form of :func:`validate_cooperative_assignment` over the engine's compact problem.

    ``owned_offsets``/``owned_partitions`` are the owned-partition CSR (global partition ids per member
    index), ``owner[P]`` the new owner per partition (-1 none).  Returns the global ids (ascending, unique)
    of partitions revoked from one member while added to another member in the same round.  Vectorized:
    O(claims log claims), no Python loop over partitions.
    """
    import numpy as np

    if owned_offsets is None or owned_partitions is None or len(owned_partitions) == 0:
        return np.zeros(0, dtype=np.int64)
    owner = np.asarray(owner, dtype=np.int64)
    claims = np.asarray(owned_partitions, dtype=np.int64)
    claimer = np.repeat(np.arange(len(owned_offsets) - 1, dtype=np.int64), np.diff(owned_offsets))
    new_owner = owner[claims]
    revoked = claims[new_owner != claimer]
    if revoked.size == 0:
        return np.zeros(0, dtype=np.int64)
    # added to owner[p] unless owner[p] itself claimed p
    total = owner.shape[0]
    claim_keys = claimer * total + claims
    target = owner[revoked]
    assigned = target >= 0
    revoked, target = revoked[assigned], target[assigned]
    self_claimed = np.isin(target * total + revoked, claim_keys)
    return np.unique(revoked[~self_claimed])
