"""Member configuration with Kafka's consumer keys (``ConsumerConfig``, ``GroupRebalanceConfig``).

Keys are accepted as Kafka spells them (``"session.timeout.ms"``) or as Python keywords
(``session_timeout_ms``)::

    MemberConfig.from_kafka({"group.id": "g", "partition.assignment.strategy": "cooperative-sticky",
                             "group.instance.id": "host-1"}, client_rack="rack-a")

Defaults are Kafka's (spec §3.1): session 45 s, heartbeat 3 s, max.poll.interval 5 min (= the JoinGroup
rebalance timeout), strategy [range, cooperative-sticky] (which runs the EAGER protocol, §6.1).

Validation at construction, as Kafka's ``ConsumerConfig`` (``ConfigDef.parseType`` + validators) throws
``ConfigException`` from the constructor; here :class:`~kafkagroup.errors.InvalidGroupError` names the key:

* Type.INT keys (session.timeout.ms, heartbeat.interval.ms, max.poll.interval.ms, default.api.timeout.ms) must
  be 32-bit ints, Type.LONG keys (retry.backoff.ms, metadata.max.age.ms) 64-bit ints; all non-negative, and
  max.poll.interval.ms at least 1 (``atLeast(1)``); session.timeout.ms positive and heartbeat below it.
* String keys that go on the wire (group.id, client.id, client.rack) must be Kafka STRINGs: UTF-8-encodable
  and at most 32,767 bytes encoded.  Deliberately earlier than Java, which accepts any ``String`` and then
  sends ``?`` for a lone surrogate (``getBytes(UTF_8)``) or fails each request's serialization ("field is too
  long to be serialized"); a member holding such a value could never join (the coordinator answers
  INVALID_REQUEST to every JoinGroup), so it is refused where the value is given.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, fields, replace
from typing import Any, Mapping

from kafkagroup.client.rebalance_protocol import (
    RebalanceProtocol,
    assignor_name,
    check_assignor_names,
    select_rebalance_protocol,
)
from kafkagroup.errors import InvalidGroupError
from kafkagroup.protocol.consumer_protocol import string_problem

__all__ = ["MemberConfig", "DEFAULT_ASSIGNORS"]

#: Kafka's default partition.assignment.strategy (ConsumerConfig, since 3.0).
DEFAULT_ASSIGNORS: tuple[str, ...] = ("range", "cooperative-sticky")

# JoinGroupRequest.validateGroupInstanceId: same rule as topic names (Topic.validate).
_LEGAL_ID = re.compile(r"^[a-zA-Z0-9._-]+$")
_MAX_ID_LENGTH = 249

# ConsumerConfig's type of each numeric key: Type.INT (32-bit) or Type.LONG (64-bit), and its minimum here
_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
_NUMERIC_KEYS: dict[str, tuple[int, int]] = {
    "session_timeout_ms": (0, _INT32_MAX),        # INT (no validator in Java; positive checked below)
    "heartbeat_interval_ms": (0, _INT32_MAX),     # INT
    "max_poll_interval_ms": (1, _INT32_MAX),      # INT, atLeast(1)
    "default_api_timeout_ms": (0, _INT32_MAX),    # INT, atLeast(0)
    "retry_backoff_ms": (0, _INT64_MAX),          # LONG, atLeast(0)
    "metadata_max_age_ms": (0, _INT64_MAX),       # LONG, atLeast(0)
}
# keys whose value a JoinGroup carries as a Kafka STRING (client.id in the request header)
_WIRE_STRING_KEYS = ("group_id", "client_id", "client_rack")


def _key(name: str) -> str:
    return name.replace("_", ".")


@dataclass(frozen=True)
class MemberConfig:
    """What a group member is configured with; build it with :meth:`from_kafka` to accept Kafka keys."""

    group_id: str
    partition_assignment_strategy: tuple[Any, ...] = DEFAULT_ASSIGNORS
    group_instance_id: str | None = None
    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 3_000
    max_poll_interval_ms: int = 300_000
    client_rack: str | None = None
    client_id: str = "consumer"
    retry_backoff_ms: int = 100
    metadata_max_age_ms: int = 300_000
    #: how long commit_offsets keeps retrying retriable errors (Kafka's commitSync() bound)
    default_api_timeout_ms: int = 60_000

    def __post_init__(self) -> None:
        strategy = self.partition_assignment_strategy
        if isinstance(strategy, str):
            strategy = tuple(s.strip() for s in strategy.split(",") if s.strip())
        elif not isinstance(strategy, tuple):
            strategy = tuple(strategy)
        object.__setattr__(self, "partition_assignment_strategy", strategy)
        if not isinstance(self.group_id, str) or not self.group_id:
            raise InvalidGroupError("group.id must be a non-empty string (group management needs it)")
        if not isinstance(self.client_id, str):
            raise InvalidGroupError(f"client.id must be a string, got {self.client_id!r}")
        if self.client_rack is not None and not isinstance(self.client_rack, str):
            raise InvalidGroupError(f"client.rack must be a string or None, got {self.client_rack!r}")
        for key in _WIRE_STRING_KEYS:
            value = getattr(self, key)
            problem = None if value is None else string_problem(value)
            if problem is not None:
                shown = repr(value) if len(value) <= 60 else f"{value[:40]!r}...({len(value)} chars)"
                raise InvalidGroupError(f"{_key(key)} {shown} {problem}: Kafka's wire format cannot carry it")
        for key, (lowest, highest) in _NUMERIC_KEYS.items():
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int):
                raise InvalidGroupError(f"{_key(key)} must be an int, got {value!r}")
            if value > highest:
                bits = 32 if highest == _INT32_MAX else 64
                raise InvalidGroupError(
                    f"{_key(key)} = {value} is not a {bits}-bit integer (Kafka's ConsumerConfig type "
                    f"{'INT' if bits == 32 else 'LONG'}: at most {highest})"
                )
            if value < lowest:
                raise InvalidGroupError(f"{_key(key)} must be at least {lowest}, got {value}")
        if self.session_timeout_ms <= 0:
            raise InvalidGroupError("session.timeout.ms must be positive")
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            # Heartbeat's constructor: "Heartbeat must be set lower than the session timeout"
            raise InvalidGroupError(
                f"heartbeat.interval.ms ({self.heartbeat_interval_ms}) must be lower than "
                f"session.timeout.ms ({self.session_timeout_ms})"
            )
        if self.group_instance_id is not None:
            gi = self.group_instance_id
            if not isinstance(gi, str) or not gi or len(gi) > _MAX_ID_LENGTH or not _LEGAL_ID.match(gi):
                raise InvalidGroupError(
                    f"group.instance.id {gi!r} is illegal: 1..{_MAX_ID_LENGTH} characters of [a-zA-Z0-9._-]"
                )
        # The strategy list is checked here without building an assignor a class entry names: a GroupMember
        # builds each of its assignors once and selects its rebalance protocol from those objects (as Java's
        # consumer does in its constructor), so a class entry's protocols are checked there.
        check_assignor_names(strategy)
        if not any(isinstance(a, type) for a in strategy):
            select_rebalance_protocol(strategy)

    # -- construction from Kafka keys ----------------------------------------------------------------
    @classmethod
    def from_kafka(cls, config: Mapping[str, Any] | None = None, **kwargs: Any) -> "MemberConfig":
        """Build from Kafka-spelled keys and/or underscore keywords (a key given both ways must agree)."""
        allowed = {f.name for f in fields(cls) if f.init}
        merged: dict[str, Any] = {}
        for source in (config or {}), kwargs:
            for key, value in source.items():
                name = key.replace(".", "_").replace("-", "_")
                if name not in allowed:
                    raise InvalidGroupError(
                        f"unknown member config key {key!r} (known: "
                        f"{', '.join(sorted(n.replace('_', '.') for n in allowed))})"
                    )
                if name in merged and merged[name] != value:
                    raise InvalidGroupError(f"config key {key!r} given twice with different values")
                merged[name] = value
        if "group_id" not in merged:
            raise InvalidGroupError("group.id is required")
        return cls(**merged)

    def with_changes(self, **kwargs: Any) -> "MemberConfig":
        """A copy with some keys changed (underscore names), re-validated."""
        return replace(self, **kwargs)

    # -- derived values -------------------------------------------------------------------------------
    @property
    def assignor_names(self) -> tuple[str, ...]:
        """JoinGroup protocol names, in configured (preference) order."""
        return tuple(assignor_name(a) for a in self.partition_assignment_strategy)

    @property
    def rebalance_protocol(self) -> RebalanceProtocol:
        """EAGER or COOPERATIVE: what these assignors run (§6.1).  Asks them anew (a class entry is instantiated
        for the question); a GroupMember asks its own assignor objects instead."""
        return select_rebalance_protocol(self.partition_assignment_strategy)

    @property
    def rebalance_timeout_ms(self) -> int:
        """The JoinGroup rebalance timeout a consumer sends: max.poll.interval.ms."""
        return self.max_poll_interval_ms

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None
