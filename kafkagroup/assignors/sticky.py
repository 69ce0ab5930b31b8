"""Kafka's StickyAssignor ("sticky", eager) and CooperativeStickyAssignor ("cooperative-sticky", KIP-429),
native (csrc/kafkagroup/sticky/).

Both reach the optimal balance (no chain of moves can take a partition to a member with two fewer) and
keep as many previously owned partitions as that balance allows. C0 owns ``t0-0 t0-1 t0-2``, C1 joins:
``C0: t0-0 t0-1``, ``C1: t0-2`` with sticky; cooperative-sticky first withholds ``t0-2`` (C0 must
revoke it), and the follow-up rebalance hands it to C1.

Previous ownership: the eager assignor reads it from its StickyAssignor user data (v1 carries the
generation, v0 does not), the cooperative one from the Subscription's owned partitions and generation
(KIP-792) -- each class's ``member_data_rule``. What a member sends next round (its last assignment and
generation) is kept here, in the assignor object, as Java keeps it; the member client and the compat
adapters only call ``on_assignment`` and ``metadata``. Among claims on one partition the highest generation wins; two members claiming it in the
same generation lose it both; claims on topics a member no longer subscribes to are dropped.
"""
from __future__ import annotations

from collections.abc import Iterable

from kafkagroup.assignors.base import RebalanceProtocol, register
from kafkagroup.assignors.native import NativeAssignor
from kafkagroup.protocol import Assignment, MemberDataRule
from kafkagroup.protocol.user_data import NO_GENERATION, cooperative_sticky_user_data, sticky_user_data
from kafkagroup.structs import TopicPartition


@register
class StickyPartitionAssignor(NativeAssignor):
    """Eager sticky assignor; sends its last assignment and generation as user data (v1), like Java."""

    name = "sticky"
    member_data_rule = MemberDataRule.STICKY_USER_DATA

    def __init__(self) -> None:
        self._owned: list[TopicPartition] | None = None
        self._generation: int = NO_GENERATION

    def subscription_user_data(self, topics: Iterable[str]) -> bytes | None:
        return sticky_user_data(self._owned, self._generation)

    def on_assignment(self, assignment: Assignment, generation: int = NO_GENERATION) -> None:
        self._owned = list(assignment.partitions)
        self._generation = generation


@register
class CooperativeStickyAssignor(NativeAssignor):
    """Cooperative sticky assignor: partitions that change owner are withheld for one round.

    ``supported_protocols()`` is Java's ``[COOPERATIVE, EAGER]``: cooperative first, so a group whose
    members all support it rebalances incrementally, and eager stays possible during an upgrade.
    """

    name = "cooperative-sticky"
    member_data_rule = MemberDataRule.COOPERATIVE_STICKY
    checks_own_cooperative_moves = True

    def __init__(self) -> None:
        self._generation: int = NO_GENERATION

    def supported_protocols(self) -> list[RebalanceProtocol]:
        return [RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER]

    def subscription_user_data(self, topics: Iterable[str]) -> bytes | None:
        return cooperative_sticky_user_data(self._generation)

    def on_assignment(self, assignment: Assignment, generation: int = NO_GENERATION) -> None:
        self._generation = generation
