"""From what ``partition.assignment.strategy`` lists to assignor objects: :func:`as_assignor`.

An entry may be a protocol name ("range"), a Java class name
("org.apache.kafka.clients.consumer.RangeAssignor"), a :class:`PartitionAssignor` subclass (instantiated,
as Java instantiates configured classes) or instance (used as is: it keeps its own state), or any other
object with kafka-python's plug-in shape -- ``name``, ``assign(cluster, members, *, group_instance_ids)``,
and optionally ``supported_protocols()``, ``subscription_user_data(topics)`` and
``on_assignment(assignment, generation)`` -- which :class:`PluginAssignor` wraps so that the member and
its leader call every assignor the same way.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from kafkagroup.assignors.base import PartitionAssignor, RebalanceProtocol, assignor_names, get_assignor
from kafkagroup.errors import InvalidGroupError
from kafkagroup.protocol import NO_GENERATION, Assignment

__all__ = ["JAVA_ASSIGNOR_CLASSES", "PluginAssignor", "as_assignor", "assignor_name", "to_rebalance_protocol"]

#: partition.assignment.strategy accepts Java class names; these are the built-in ones.
JAVA_ASSIGNOR_CLASSES: dict[str, str] = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.StickyAssignor": "sticky",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
}


def assignor_name(assignor: Any) -> str:
    """The JoinGroup protocol name of an assignor given as a name, a Java class name or an object with ``name``."""
    if isinstance(assignor, str):
        name = JAVA_ASSIGNOR_CLASSES.get(assignor, assignor)
    else:
        name = getattr(assignor, "name", None)
        if callable(name):  # Java-style name() method
            name = name()
    if not isinstance(name, str) or not name:
        raise InvalidGroupError(f"partition.assignment.strategy: {assignor!r} has no assignor name")
    return name


def to_rebalance_protocol(value: Any, where: str) -> RebalanceProtocol:
    """A rebalance protocol given as our enum, its name, its id, or another library's enum member."""
    if isinstance(value, RebalanceProtocol):
        return value
    if isinstance(value, str):
        try:
            return RebalanceProtocol[value.upper()]
        except KeyError:
            raise InvalidGroupError(f"{where}: unknown rebalance protocol {value!r}") from None
    if isinstance(value, int):
        try:
            return RebalanceProtocol(value)
        except ValueError:
            raise InvalidGroupError(f"{where}: unknown rebalance protocol id {value}") from None
    name = getattr(value, "name", None)   # kafka-python / other enums: use their name
    if isinstance(name, str):
        return to_rebalance_protocol(name, where)
    raise InvalidGroupError(f"{where}: cannot interpret rebalance protocol {value!r}")


def as_assignor(entry: Any) -> PartitionAssignor:
    """One ``partition.assignment.strategy`` entry as an assignor object (module docstring)."""
    if isinstance(entry, PartitionAssignor):
        return entry
    if isinstance(entry, str):
        name = assignor_name(entry)
        try:
            return get_assignor(name)
        except InvalidGroupError:
            raise InvalidGroupError(f"partition.assignment.strategy: unknown assignor {entry!r} "
                                    f"(known: {', '.join(assignor_names())})") from None
    if isinstance(entry, type) and issubclass(entry, PartitionAssignor):
        return entry()
    return PluginAssignor(entry)


class PluginAssignor(PartitionAssignor):
    """A plug-in object of kafka-python's shape, called through :class:`PartitionAssignor`'s interface.

    Its missing hooks take Kafka's defaults: ``supported_protocols`` [EAGER], no user data, no
    ``on_assignment``. Its owned partitions are read from the Subscription's own fields.
    """

    def __init__(self, plugin: Any) -> None:
        self.plugin = plugin
        self.name = assignor_name(plugin)   # type: ignore[misc]  (an instance's name, not the class's)
        if not callable(getattr(plugin, "assign", None)):
            raise InvalidGroupError(f"assignor {self.name!r} is not built in and has no assign(cluster, members)")

    def supported_protocols(self) -> list[RebalanceProtocol]:
        supported = getattr(self.plugin, "supported_protocols", None)
        if supported is None:
            return [RebalanceProtocol.EAGER]
        values = supported() if callable(supported) else supported
        protocols = [to_rebalance_protocol(v, f"assignor {self.name!r}") for v in values]
        if not protocols:
            raise InvalidGroupError(f"assignor {self.name!r} supports no rebalance protocol")
        return protocols

    def subscription_user_data(self, topics: Iterable[str]) -> bytes | None:
        hook = getattr(self.plugin, "subscription_user_data", None)
        return None if hook is None else hook(sorted(topics))

    def on_assignment(self, assignment: Assignment, generation: int = NO_GENERATION) -> None:
        hook = getattr(self.plugin, "on_assignment", None)
        if hook is not None:
            hook(assignment, generation)

    def assign(self, cluster: Any, members: Mapping[str, Any], *,
               group_instance_ids: Mapping[str, str] | None = None) -> dict[str, Assignment]:
        return self.plugin.assign(cluster, members, group_instance_ids=group_instance_ids or {})

    def __repr__(self) -> str:
        return f"PluginAssignor({self.plugin!r})"
