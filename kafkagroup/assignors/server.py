"""Kafka 4's server-side assignors (KIP-848) as classes: :class:`UniformAssignor` ("uniform", Kafka's default)
and :class:`RangeAssignor` ("range"), run by the native engine as ``server-uniform`` / ``server-range``.

They are not member-side assignors (the classic ``PartitionAssignor`` of :mod:`.base`): no JoinGroup protocol
carries them and no member runs them. A consumer group's coordinator does, with what it keeps of the group
(Kafka's ``ConsumerGroup``): each member's subscribed topic names, ``group.instance.id`` and rack, the
metadata's topics (name -> id and partition count), and each member's current *target* assignment (topic id
-> partitions), which the assignor keeps where it can. These classes take exactly that and answer the new
target, so a broker, a simulator or a planning script calls the same code as kafkagroup's coordinator:

>>> a = UniformAssignor()
>>> topics = {"orders": ("id-o", 3), "audit": ("id-a", 1)}
>>> members = {"C0": ServerMember(("orders", "audit")), "C1": ServerMember(("orders", "audit"))}
>>> target = a.assign(members, topics)
>>> target
{'C0': {'id-o': frozenset({0, 1})}, 'C1': {'id-a': frozenset({0}), 'id-o': frozenset({2})}}
>>> a.assign({**members, "C2": ServerMember(("orders",))}, topics, previous=target)   # C1 gives one up
{'C0': {'id-o': frozenset({0, 1})}, 'C1': {'id-a': frozenset({0})}, 'C2': {'id-o': frozenset({2})}}

Kafka's rules: a subscribed topic the metadata lacks is skipped; a previous target on a topic that is gone,
or past its partition count, is dropped (``dropped`` of :meth:`ServerAssignor.assign_result` names it); a
partition in two members' previous targets is an error (Kafka's coordinator never builds one). Racks are
ignored, as Kafka 4.4.0 ignores them, unless the assignor is built with ``rack_aware=True`` (an option
beyond Kafka; see kafkagroup.api.assign).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Hashable, NamedTuple

import numpy as np

from kafkagroup.api import AssignmentResult, _no_cyclic_gc
from kafkagroup.api import assign as assign_names
from kafkagroup.engine import IGNORES_PREVIOUS
from kafkagroup.errors import InvalidGroupError

__all__ = ["ServerMember", "ServerAssignor", "UniformAssignor", "RangeAssignor", "server_assignor"]

TopicId = Hashable


class ServerMember(NamedTuple):
    """What a consumer group keeps of a member for its assignor (Kafka's ``ConsumerGroupMember`` fields)."""

    subscribed_topic_names: tuple[str, ...]
    instance_id: str | None = None
    rack_id: str | None = None


class ServerAssignor:
    """Kafka's ``ConsumerGroupPartitionAssignor`` on the native engine (module docstring)."""

    name: ClassVar[str]        # group.remote.assignor / group.consumer.assignors name
    strategy: ClassVar[str]    # the engine's strategy name

    def __init__(self, *, rack_aware: bool = False) -> None:
        self.rack_aware = rack_aware

    def assign_result(self, members: Mapping[str, Any], topics: Mapping[str, Any],
                      previous: Mapping[str, Mapping[TopicId, Iterable[int]]] | None = None,
                      partition_racks: Mapping[str, Any] | None = None) -> AssignmentResult:
        """The engine's whole answer (owner array, metrics, dropped claims) for the group.

        ``members``: member id -> :class:`ServerMember` (or a ``(topic names, instance id, rack)`` tuple);
        ``topics``: topic name -> ``(topic id, partition count)``, or a partition count (the name is the id);
        ``previous``: member id -> its current target, topic id -> partitions; ``partition_racks``: topic name
        -> one replica-rack list per partition (read only when ``rack_aware``)."""
        # (the cyclic collector is paused while the specs are built and read: ~3 containers per member, alive
        # through the call, woke full collections that traversed every object of the caller's group -- more
        # than half the time of a 10k-member call; these hold no cycles)
        with _no_cyclic_gc():
            return self._assign_result(members, topics, previous, partition_racks, metrics=True)

    def _assign_result(self, members: Mapping[str, Any], topics: Mapping[str, Any],
                       previous: Mapping[str, Mapping[TopicId, Iterable[int]]] | None,
                       partition_racks: Mapping[str, Any] | None, *, metrics: bool) -> AssignmentResult:
        counts, name_of = _topic_table(topics)
        specs: dict[str, dict[str, Any]] = {}
        shared: dict[Any, tuple[str, ...]] = {}
        # (without metrics, an assignor whose answer never depends on the previous target -- range -- is not
        # handed it: no owned spec is built, and the engine would not read one)
        previous = (previous or {}) if metrics or self.strategy not in IGNORES_PREVIOUS else {}
        for member_id, member in members.items():
            names, instance, rack = _member_fields(member_id, member)
            subscribed = shared.get(names)
            if subscribed is None:   # equal subscriptions share one tuple: the builder codes it once
                subscribed = shared[names] = tuple(names)
            spec: dict[str, Any] = {"topics": subscribed, "instance": instance}
            if self.rack_aware:
                spec["rack"] = rack
            before = previous.get(member_id)
            if before:
                # the compact form, topic -> partitions, read natively (no Python object per partition); a topic
                # id the metadata lacks (deleted) becomes its string: dropped as an unknown topic
                owned = {name_of.get(tid) or str(tid): parts for tid, parts in before.items()}
                if len(owned) < len(before):   # two ids named by one string: keep both as pairs
                    owned = [(name_of.get(tid) or str(tid), p) for tid, parts in before.items() for p in parts]
                spec["owned"] = owned
            specs[member_id] = spec
        return assign_names(self.strategy, counts, specs, strict=False,
                            partition_racks=partition_racks if self.rack_aware else None,
                            rack_aware=self.rack_aware, metrics=metrics)

    def assign(self, members: Mapping[str, Any], topics: Mapping[str, Any],
               previous: Mapping[str, Mapping[TopicId, Iterable[int]]] | None = None,
               partition_racks: Mapping[str, Any] | None = None) -> dict[str, dict[TopicId, frozenset[int]]]:
        """Every member's new target: member id -> {topic id: partitions} (Kafka's ``GroupAssignment``);
        a member given nothing maps to ``{}``. Arguments as :meth:`assign_result`.

        The target only, as Kafka's interface returns it: the engine is called without metrics
        (``kafkagroup.assign(..., metrics=False)``), so :class:`RangeAssignor` neither reads nor checks
        ``previous`` (Kafka's RangeAssignor ignores it); :class:`UniformAssignor` keeps it where it can."""
        with _no_cyclic_gc():   # (as in assign_result; the target is one frozenset per member and topic)
            return self._target(self._assign_result(members, topics, previous, partition_racks, metrics=False),
                                topics)

    @staticmethod
    def _target(result: AssignmentResult, topics: Mapping[str, Any]) -> dict[str, dict[TopicId, frozenset[int]]]:
        group = result.assignment._group
        owner = result.owner
        ids = _topic_ids(topics)
        row_ids = [ids[name] for name in group.topics]
        # partitions by member, then by global id (topic row, partition); one frozenset per run of one member's
        # partitions of one topic, built by C-level map/zip (no Python statement per partition)
        assigned = np.flatnonzero(owner >= 0)
        order = assigned[np.argsort(owner[assigned], kind="stable")]
        holder = owner[order]
        row = np.searchsorted(group.topic_base, order, side="right") - 1
        cut = np.flatnonzero((holder[1:] != holder[:-1]) | (row[1:] != row[:-1])) + 1
        starts = np.concatenate(([0], cut)) if order.size else cut
        ends = np.concatenate((cut, [order.size])) if order.size else cut
        partitions = (order - group.topic_base[row]).tolist()
        sets = list(map(frozenset, map(partitions.__getitem__, map(slice, starts.tolist(), ends.tolist()))))
        run_ids = [row_ids[r] for r in row[starts].tolist()]
        bounds = np.searchsorted(holder[starts], np.arange(len(group.members) + 1)).tolist()
        return {member_id: dict(zip(run_ids[bounds[i]:bounds[i + 1]], sets[bounds[i]:bounds[i + 1]]))
                for i, member_id in enumerate(group.members)}


class UniformAssignor(ServerAssignor):
    """Kafka's ``UniformAssignor`` ("uniform", the default server assignor): balanced to within one partition
    per member for equal subscriptions, sticky to each member's previous target."""

    name = "uniform"
    strategy = "server-uniform"


class RangeAssignor(ServerAssignor):
    """Kafka's server ``RangeAssignor`` ("range"): each topic's partitions in contiguous ranges over its
    subscribers in MemberInfo order (static members by instance id first); the previous target is ignored."""

    name = "range"
    strategy = "server-range"


_BY_NAME: dict[str, type[ServerAssignor]] = {cls.name: cls for cls in (UniformAssignor, RangeAssignor)}


def server_assignor(name: str, *, rack_aware: bool = False) -> ServerAssignor:
    """The server assignor for a ``group.remote.assignor`` name ("uniform" or "range")."""
    try:
        return _BY_NAME[name](rack_aware=rack_aware)
    except KeyError:
        raise InvalidGroupError(f"unknown server assignor {name!r}; known: {sorted(_BY_NAME)}") from None


def _member_fields(member_id: str, member: Any) -> tuple[Any, str | None, str | None]:
    if isinstance(member, tuple) and len(member) == 3:
        names, instance, rack = member
    elif isinstance(member, tuple):
        raise InvalidGroupError(f"member {member_id!r}: expected (topic names, instance id, rack), got {member!r}")
    else:
        names = getattr(member, "subscribed_topic_names", None)
        instance, rack = getattr(member, "instance_id", None), getattr(member, "rack_id", None)
        if names is None:
            raise InvalidGroupError(f"member {member_id!r}: no subscribed_topic_names in {member!r}")
    if isinstance(names, str):
        raise InvalidGroupError(f"member {member_id!r}: subscribed topic names must be a collection, got a string")
    if not isinstance(names, (tuple, list)):
        names = tuple(sorted(names))   # a set: one order for equal sets, so they share one row
    return names, instance, rack


def _topic_table(topics: Mapping[str, Any]) -> tuple[dict[str, int], dict[TopicId, str]]:
    """(name -> partition count, topic id -> name) of the metadata."""
    counts: dict[str, int] = {}
    name_of: dict[TopicId, str] = {}
    for name, spec in topics.items():
        if isinstance(spec, tuple):
            tid, count = spec
        else:
            tid, count = name, spec
        counts[name] = count
        name_of[tid] = name
    return counts, name_of


def _topic_ids(topics: Mapping[str, Any]) -> dict[str, TopicId]:
    return {name: spec[0] if isinstance(spec, tuple) else name for name, spec in topics.items()}
