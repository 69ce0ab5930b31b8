"""Reconciliation of one consumer-group member (KIP-848): current assignment + target -> next assignment.

A pure function over immutable values (Kafka's ``CurrentAssignmentBuilder``): no group, no clock, no I/O.
The group calls :func:`reconcile` on every heartbeat of a member that is not yet at the target and
applies the result (partition epochs, timers) itself.

The rules, per topic of the member's current assignment and of its target:

* kept      = current ∩ target (a topic the member no longer subscribes to has an empty target);
* revoking  = current − kept;
* adding    = target − kept, less the partitions another member still holds (their *partition epoch*
  is not -1): those are *unreleased* and wait.

Then, in this order:

1. something to revoke that the member still reports owning -> UNREVOKED_PARTITIONS at its *current*
   epoch; its assignment shrinks to ``kept`` and nothing is added until it acknowledges the revocation
   (a heartbeat whose owned partitions no longer name them) -- revoke before assign;
2. otherwise the member moves to the target epoch with ``kept + adding``: UNRELEASED_PARTITIONS while some
   target partition is still held elsewhere (it gets it on a later heartbeat), STABLE otherwise.

A member in UNREVOKED_PARTITIONS that still reports a revoked partition stays as it is.  ``owned`` is the
partition list of the heartbeat (None when the member did not send it: then it is assumed to still own
everything, as Kafka does).

Example (topic ids shortened to strings)::

    >>> m = MemberAssignment.joining()
    >>> nxt = reconcile(m, 3, {"a": frozenset({0, 1})}, {"a"}, lambda t, p: -1, owned=[])
    >>> nxt.state.name, nxt.member_epoch, dict(nxt.assigned)
    ('STABLE', 3, {'a': frozenset({0, 1})})
    >>> nxt = reconcile(nxt, 4, {"a": frozenset({0})}, {"a"}, lambda t, p: -1, owned=[("a", [0, 1])])
    >>> nxt.state.name, nxt.member_epoch, dict(nxt.pending_revocation)
    ('UNREVOKED_PARTITIONS', 3, {'a': frozenset({1})})
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Callable, Collection, Hashable, Iterable, Mapping, Sequence

__all__ = ["MemberState", "MemberAssignment", "reconcile", "owns_any", "is_subset", "Assignment"]

TopicKey = Hashable                      # a topic id (uuid.UUID in the coordinator; anything hashable here)
Assignment = Mapping[TopicKey, frozenset[int]]
Owned = Sequence[tuple[TopicKey, Iterable[int]]] | None
_EMPTY: frozenset[int] = frozenset()


class MemberState(Enum):
    """A member's reconciliation state; ``value`` is Kafka's display name (ConsumerGroupDescribe)."""

    STABLE = "stable"
    UNREVOKED_PARTITIONS = "unrevoked_partitions"
    UNRELEASED_PARTITIONS = "unreleased_partitions"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class MemberAssignment:
    """What the coordinator knows of one member's assignment: state, epochs, assigned and revoking partitions.

    ``member_epoch`` is the epoch the member is at; ``previous_member_epoch`` the one before its last change
    (a heartbeat with that epoch and owned partitions within ``assigned`` is a retry after a lost response).
    """

    state: MemberState = MemberState.STABLE
    member_epoch: int = 0
    previous_member_epoch: int = 0
    assigned: Assignment = field(default_factory=dict)
    pending_revocation: Assignment = field(default_factory=dict)

    @classmethod
    def joining(cls) -> "MemberAssignment":
        return cls()

    def with_epoch(self, state: MemberState, epoch: int, assigned: Assignment,
                   pending_revocation: Assignment) -> "MemberAssignment":
        """Kafka's ``updateMemberEpoch``: the previous epoch becomes the current one, then the epoch moves."""
        return MemberAssignment(state, epoch, self.member_epoch, assigned, pending_revocation)


def owns_any(owned: Owned, partitions: Assignment) -> bool:
    """Whether the heartbeat's owned list still names one of ``partitions`` (None: assumed yes)."""
    if owned is None:
        return True
    for topic, indexes in owned:
        held = partitions.get(topic)
        if held and any(p in held for p in indexes):
            return True
    return False


def is_subset(owned: Owned, assigned: Assignment) -> bool:
    """Whether every owned partition is in ``assigned`` (None: no, as Kafka's ``isSubset``)."""
    if owned is None:
        return False
    for topic, indexes in owned:
        held = assigned.get(topic)
        if held is None or any(p not in held for p in indexes):
            return False
    return True


def reconcile(member: MemberAssignment, target_epoch: int, target: Assignment, subscribed: Collection[TopicKey],
              partition_epoch: Callable[[TopicKey, int], int], owned: Owned) -> MemberAssignment:
    """The member's next assignment state (see the module docstring); ``member`` itself when it cannot move.

    ``target``: the member's partitions in the group's target assignment at ``target_epoch``; ``subscribed``:
    the topic ids it subscribes to now; ``partition_epoch(topic, p)``: the epoch of the member that holds the
    partition now, -1 when free.
    """
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
    elif state is MemberState.UNREVOKED_PARTITIONS:
        if owns_any(owned, member.pending_revocation):
            return member
    return _next_assignment(member, target_epoch, target, subscribed, partition_epoch, owned)


def _next_assignment(member: MemberAssignment, target_epoch: int, target: Assignment,
                     subscribed: Collection[TopicKey], partition_epoch: Callable[[TopicKey, int], int],
                     owned: Owned) -> MemberAssignment:
    current = member.assigned
    revoking_now = member.pending_revocation
    kept: dict[TopicKey, frozenset[int]] = {}
    revoking: dict[TopicKey, frozenset[int]] = {}
    adding: dict[TopicKey, frozenset[int]] = {}
    unreleased = False
    for topic in {*target, *current}:
        wanted = target.get(topic, _EMPTY) if topic in subscribed else _EMPTY
        have = current.get(topic, _EMPTY)
        keep = have & wanted
        if keep:
            kept[topic] = keep
        if len(keep) != len(have):
            revoking[topic] = have - keep
        if len(keep) != len(wanted):
            mine = revoking_now.get(topic, _EMPTY)
            free = []
            for p in wanted - keep:
                # held by another member: unreleased (a partition this member is revoking itself is not)
                if p not in mine and partition_epoch(topic, p) != -1:
                    unreleased = True
                else:
                    free.append(p)
            if free:
                adding[topic] = frozenset(free)
    if revoking and owns_any(owned, revoking):
        return member.with_epoch(MemberState.UNREVOKED_PARTITIONS, member.member_epoch, kept, revoking)
    for topic, partitions in adding.items():
        kept[topic] = kept.get(topic, _EMPTY) | partitions
    state = MemberState.UNRELEASED_PARTITIONS if unreleased else MemberState.STABLE
    return member.with_epoch(state, target_epoch, kept, {})
