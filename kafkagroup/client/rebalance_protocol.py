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
from kafkagroup.assignors.base import RebalanceProtocol
from kafkagroup.assignors.configured import JAVA_ASSIGNOR_CLASSES, as_assignor, assignor_name
from kafkagroup.errors import InvalidGroupError

__all__ = [
    "RebalanceProtocol",
    "JAVA_ASSIGNOR_CLASSES",
    "assignor_name",
    "assignor_protocols",
    "check_assignor_names",
    "select_rebalance_protocol",
]


def assignor_protocols(assignor: Any) -> tuple[RebalanceProtocol, ...]:
    """``supportedProtocols()`` of one configured assignor (objects without the method: EAGER, Kafka's default)."""
    return tuple(as_assignor(assignor).supported_protocols())


def check_assignor_names(assignors: Sequence[Any]) -> list[str]:
    """The protocol names of a ``partition.assignment.strategy`` list: at least one, none twice (no assignor
    is built)."""
    if not assignors:
        raise InvalidGroupError("partition.assignment.strategy is empty: configure at least one assignor")
    names = [assignor_name(a) for a in assignors]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise InvalidGroupError(f"partition.assignment.strategy lists assignor(s) {sorted(dup)} more than once")
    return names


def select_rebalance_protocol(assignors: Sequence[Any]) -> RebalanceProtocol:
    """The highest rebalance protocol every assignor supports; ValueError when there is none.  An entry that is
    a class is instantiated to ask it: pass assignor objects where they exist already."""
    names = check_assignor_names(assignors)
    supported = [(name, assignor_protocols(a)) for name, a in zip(names, assignors)]
    common = set.intersection(*(set(protocols) for _, protocols in supported))
    if not common:
        listing = ", ".join(f"{name} {[p.name for p in protocols]}" for name, protocols in supported)
        raise InvalidGroupError(f"the configured assignors share no rebalance protocol: {listing}")
    return max(common)
