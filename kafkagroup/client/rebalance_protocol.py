"""Rebalance-protocol selection from the configured assignors (spec §6.1, KIP-429).

Kafka's consumer lists one JoinGroup protocol per configured assignor; the *rebalance protocol* (EAGER or
COOPERATIVE) is a client-side decision the broker never sees.  The consumer intersects the
``supported_protocols()`` of every configured assignor and takes the highest id; an empty intersection is a
configuration error raised at construction (``ConsumerCoordinatorTest.testSelectRebalanceProtocol``)::

    [range]                         -> EAGER
    [cooperative-sticky]            -> COOPERATIVE
    [range, cooperative-sticky]     -> EAGER        (Kafka's default list)
    [X {EAGER}, Y {COOPERATIVE}]    -> ValueError   (no common protocol)
"""
from __future__ import annotations

from typing import Any, Sequence

# one enum for the whole package: the assignor plug-ins' (ids order them, higher = more advanced)
from kafkagroup.assignors.base import RebalanceProtocol, assignor_names, get_assignor
from kafkagroup.errors import InvalidGroupError

__all__ = [
    "RebalanceProtocol",
    "BUILTIN_ASSIGNOR_PROTOCOLS",
    "JAVA_ASSIGNOR_CLASSES",
    "assignor_name",
    "assignor_protocols",
    "select_rebalance_protocol",
]


_E = RebalanceProtocol.EAGER

#: supportedProtocols() of the built-in assignors, as their classes report it (Kafka's default interface
#: method answers [EAGER]; CooperativeStickyAssignor overrides it with [COOPERATIVE, EAGER]).
BUILTIN_ASSIGNOR_PROTOCOLS: dict[str, tuple[RebalanceProtocol, ...]] = {
    name: tuple(get_assignor(name).supported_protocols()) for name in assignor_names()
}

#: partition.assignment.strategy accepts Java class names; these are the built-in ones.
JAVA_ASSIGNOR_CLASSES: dict[str, str] = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.StickyAssignor": "sticky",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
}


def _to_protocol(value: Any, where: str) -> RebalanceProtocol:
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
    # kafka-python / other enums: use their name
    name = getattr(value, "name", None)
    if isinstance(name, str):
        return _to_protocol(name, where)
    raise InvalidGroupError(f"{where}: cannot interpret rebalance protocol {value!r}")


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


def assignor_protocols(assignor: Any) -> tuple[RebalanceProtocol, ...]:
    """``supportedProtocols()`` of one assignor; objects without the method support EAGER only (Kafka's default)."""
    name = assignor_name(assignor)
    supported = getattr(assignor, "supported_protocols", None)
    if supported is None:
        if isinstance(assignor, str):
            if name not in BUILTIN_ASSIGNOR_PROTOCOLS:
                raise InvalidGroupError(
                    f"partition.assignment.strategy: unknown assignor {assignor!r} "
                    f"(built-in: {', '.join(BUILTIN_ASSIGNOR_PROTOCOLS)})"
                )
            return BUILTIN_ASSIGNOR_PROTOCOLS[name]
        return BUILTIN_ASSIGNOR_PROTOCOLS.get(name, (_E,))
    values = supported() if callable(supported) else supported
    protocols = tuple(_to_protocol(v, f"assignor {name!r}") for v in values)
    if not protocols:
        raise InvalidGroupError(f"assignor {name!r} supports no rebalance protocol")
    return protocols


def select_rebalance_protocol(assignors: Sequence[Any]) -> RebalanceProtocol:
    """The highest rebalance protocol every assignor supports; ValueError when there is none."""
    if not assignors:
        raise InvalidGroupError("partition.assignment.strategy is empty: configure at least one assignor")
    names = [assignor_name(a) for a in assignors]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise InvalidGroupError(f"partition.assignment.strategy lists assignor(s) {sorted(dup)} more than once")
    common: set[RebalanceProtocol] | None = None
    for a in assignors:
        protos = set(assignor_protocols(a))
        common = protos if common is None else common & protos
    if not common:
        listing = ", ".join(f"{assignor_name(a)} {[p.name for p in assignor_protocols(a)]}" for a in assignors)
        raise InvalidGroupError(f"the configured assignors share no rebalance protocol: {listing}")
    return max(common)

