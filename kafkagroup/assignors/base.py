"""The assignor plug-in interface, shaped like kafka-python's ``AbstractPartitionAssignor``; the one home of
an assignor's state.

An assignor has a protocol ``name`` (what JoinGroup carries), ``supported_protocols()`` (KIP-429
rebalance protocols), ``metadata(topics, ...)`` (the Subscription a Java consumer of the same assignor
sends: its user data comes from ``subscription_user_data``), ``member_data_rule`` (where the leader reads
each member's owned partitions and generation, Java's ``memberData``), ``assign(cluster, members)`` (the
leader's job) and ``on_assignment(assignment, generation)`` (what a member remembers for the next round:
Java keeps it in the assignor object, and so does kafkagroup -- the member client and the compat adapters
keep none of their own).

A custom assignor subclasses :class:`PartitionAssignor` and writes ``assign``; the member's leader calls it
through :meth:`PartitionAssignor.assign_group`, the same call that runs the native built-ins
(:mod:`kafkagroup.assignors.native`), and nothing requires one owner per partition:

>>> from kafkagroup.protocol import Assignment, Subscription
>>> class Everyone(PartitionAssignor):      # every member gets every partition of its topics
...     name = "everyone"
...     def assign(self, cluster, members, *, group_instance_ids=None):
...         return {m: Assignment([(t, p) for t in s.topics for p in range(cluster.get(t, 0))])
...                 for m, s in members.items()}
>>> Everyone().assign({"t0": 2}, {"C0": Subscription(["t0"]), "C1": Subscription(["t0"])})["C1"].partitions
(t0-0, t0-1)
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from enum import IntEnum
from typing import Any, ClassVar

from kafkagroup.assignors.group_assignment import GroupAssignment
from kafkagroup.errors import InvalidGroupError
from kafkagroup.model import Member, TopicSpec, normalize_member, topic_specs
from kafkagroup.protocol import NO_GENERATION, Assignment, MemberDataRule, Subscription, decode_subscription
from kafkagroup.protocol.leader import JoinedMember, decode_group
from kafkagroup.protocol.user_data import member_owned_and_generation
from kafkagroup.structs import TopicPartition


class RebalanceProtocol(IntEnum):
    """KIP-429 rebalance protocols (Java's ConsumerPartitionAssignor.RebalanceProtocol ids)."""

    EAGER = 0
    COOPERATIVE = 1


_REGISTRY: dict[str, type[PartitionAssignor]] = {}


def register(cls: type[PartitionAssignor]) -> type[PartitionAssignor]:
    """Class decorator: make an assignor available by its protocol name."""
    _REGISTRY[cls.name] = cls
    return cls


def get_assignor(name: str) -> PartitionAssignor:
    """A new assignor instance for a protocol name ("range", "roundrobin", ...)."""
    try:
        return _REGISTRY[name]()
    except KeyError:
        raise InvalidGroupError(f"unknown assignor {name!r}; known: {sorted(_REGISTRY)}") from None


def assignor_names() -> list[str]:
    return list(_REGISTRY)


def cluster_topics(cluster: Any, topics: Iterable[str]) -> dict[str, TopicSpec]:
    """Partition counts (or replica racks) of `topics` from a mapping or a kafka-python-like ClusterMetadata.

    Topics the cluster does not know are left out, as Kafka's AbstractPartitionAssignor does.
    """
    out: dict[str, TopicSpec] = {}
    if isinstance(cluster, Mapping):
        for t in topics:
            if t in cluster:
                out[t] = cluster[t]
        return out
    partitions_for_topic = getattr(cluster, "partitions_for_topic", None)
    if partitions_for_topic is None:
        raise InvalidGroupError("cluster must be a mapping topic -> partitions or have partitions_for_topic()")
    for t in topics:
        parts = partitions_for_topic(t)
        if parts:
            out[t] = len(parts)
    return out


def partition_counts(cluster: Any, topics: Iterable[str]) -> dict[str, int]:
    """Partition count of each of ``topics`` that ``cluster`` knows (a count, or one replica list per partition)."""
    return {t: spec[0] for t, spec in topic_specs(cluster_topics(cluster, topics), None).items()}


def sorted_partitions(partitions: Iterable[Any]) -> list[TopicPartition]:
    """Partitions sorted by topic then partition (the order a Subscription's owned partitions are sent in)."""
    if not isinstance(partitions, (list, tuple, set, frozenset)):
        partitions = list(partitions)
    if set(map(type, partitions)) <= {TopicPartition}:   # a member's own set: TopicPartition tuples sort by
        return sorted(partitions)                         # (topic, partition) in C, no key function
    return sorted((TopicPartition(t, p) for t, p in partitions), key=lambda tp: (tp.topic, tp.partition))


class PartitionAssignor(ABC):
    """Base of every assignor kafkagroup runs: built-in (native) or written in Python (module docstring).

    Subclasses set ``name`` and write :meth:`assign`; stateful ones (the sticky assignors) also override
    :meth:`subscription_user_data` and :meth:`on_assignment`.
    """

    name: ClassVar[str]
    version: ClassVar[int] = 0
    #: where the leader reads a member's owned partitions and generation (Java's ``memberData``)
    member_data_rule: ClassVar[MemberDataRule] = MemberDataRule.SUBSCRIPTION
    #: Java's leader skips ``validateCooperativeAssignment`` for its CooperativeStickyAssignor (by name), which
    #: withholds every partition changing owner itself, weighing claims by generation; only it sets this
    checks_own_cooperative_moves: ClassVar[bool] = False

    def supported_protocols(self) -> list[RebalanceProtocol]:
        return [RebalanceProtocol.EAGER]

    def subscription_user_data(self, topics: Iterable[str]) -> bytes | None:
        """User data a Java consumer of this assignor puts in its Subscription (none by default)."""
        return None

    def metadata(self, topics: Iterable[str], owned_partitions: Iterable[Any] = (),
                 generation: int = NO_GENERATION, rack: str | None = None) -> Subscription:
        """The Subscription this member sends in JoinGroup (ConsumerProtocol v3 fields, as a Java consumer
        fills them): sorted topics, this assignor's user data, the partitions the member owns at JoinGroup time
        (none under EAGER, which revokes everything first), its generation and its rack."""
        topics = sorted(topics)
        return Subscription(topics, self.subscription_user_data(topics), sorted_partitions(owned_partitions),
                            generation, rack or None)

    def on_assignment(self, assignment: Assignment, generation: int = NO_GENERATION) -> None:
        """Remember what the next Subscription needs (nothing for stateless assignors)."""

    def member_data(self, subscription: Subscription) -> tuple[tuple[TopicPartition, ...], int]:
        """Owned partitions and generation of one member as this assignor reads them (``member_data_rule``)."""
        return member_owned_and_generation(subscription, self.member_data_rule)

    def member(self, member_id: str, subscription: Any, instance_id: str | None = None) -> Member:
        """How this assignor reads a member: topics, and owned partitions + generation by its own rule."""
        if isinstance(subscription, Subscription):
            owned, generation = self.member_data(subscription)
            # a TopicPartition is a (topic, partition) pair already: no per-partition rebuild
            return Member(member_id, tuple(subscription.topics), tuple(owned),
                          generation, subscription.rack_id or None, instance_id)
        m = normalize_member(member_id, subscription)
        return m if instance_id is None else Member(m.member_id, m.topics, m.owned, m.generation, m.rack, instance_id)

    @abstractmethod
    def assign(self, cluster: Any, members: Mapping[str, Any], *,
               group_instance_ids: Mapping[str, str] | None = None) -> dict[str, Assignment]:
        """The leader's assignment: member id -> Assignment (a member left out gets nothing).

        `cluster` maps topic -> partition count (or replica racks), or is a ClusterMetadata-like object;
        `members` maps member id -> Subscription (or the dict form of :func:`kafkagroup.assign`).
        """

    def assign_group(self, members: Sequence[JoinedMember], partitions_per_topic: Mapping[str, TopicSpec], *,
                     partition_racks: Mapping[str, Any] | None = None) -> GroupAssignment:
        """The group leader's call: JoinGroup members ``(member_id, group_instance_id, metadata bytes)`` ->
        :class:`GroupAssignment` (``onLeaderElected``).

        Members are checked and decoded once into the compact group (MemberInfo order, owned claims read by
        ``member_data_rule``, claims that no longer fit the metadata dropped, as a Java leader drops them);
        then :meth:`assign` gets ``{topic: partition count}`` of the subscribed topics the metadata knows and
        ``{member id: Subscription}`` with every field the member sent, its user data included.
        """
        group = decode_group(members, partitions_per_topic, assignor=self, partition_racks=partition_racks)
        subscriptions = {member_id: decode_subscription(metadata, f"JoinGroup metadata of member {member_id!r}")
                         for member_id, _, metadata in members}
        instances = {member_id: instance for member_id, instance, _ in members if instance}
        cluster = dict(zip(group.topics, group.partition_count.tolist()))
        result = self.assign(cluster, subscriptions, group_instance_ids=instances)
        answer = GroupAssignment.from_assignments(group, result, self.name)
        answer.subscriptions = subscriptions
        return answer
