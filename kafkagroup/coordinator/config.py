"""Coordinator configuration with Kafka's broker keys (spec §3.1, ``GroupCoordinatorConfig.java``).

Keys are accepted as Kafka spells them (``"group.initial.rebalance.delay.ms"``) or with underscores
(``group_initial_rebalance_delay_ms``)::

    CoordinatorConfig.from_mapping({"group.max.size": 4}, offsets_topic_num_partitions=2)
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping

__all__ = ["CoordinatorConfig", "NEW_MEMBER_JOIN_TIMEOUT_MS", "INT_MAX", "MIGRATION_POLICIES"]

INT_MAX = 2_147_483_647
# Kafka's CLASSIC_GROUP_NEW_MEMBER_JOIN_TIMEOUT_MS: a constant, not a broker config (spec §3.6).
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000
#: group.consumer.migration.policy values (Kafka's ConsumerGroupMigrationPolicy); Kafka's default is the first
MIGRATION_POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")
_STRING_FIELDS = frozenset({"group_consumer_migration_policy"})


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    group_min_session_timeout_ms: int = 6_000
    group_max_session_timeout_ms: int = 1_800_000
    group_initial_rebalance_delay_ms: int = 3_000
    group_max_size: int = INT_MAX
    offsets_topic_num_partitions: int = 50
    offsets_retention_minutes: int = 10_080
    offsets_retention_check_interval_ms: int = 600_000
    offset_metadata_max_bytes: int = 4_096
    offsets_commit_timeout_ms: int = 5_000     # accepted for compatibility; writes here are synchronous
    # consumer groups (KIP-848): the session and heartbeat interval are the broker's, not the member's
    group_consumer_session_timeout_ms: int = 45_000
    group_consumer_heartbeat_interval_ms: int = 5_000
    group_consumer_max_size: int = INT_MAX
    # a new target assignment at most once per interval (0 = at every group epoch change).  Kafka 4.3+ batches
    # them, 1,000 by default; serve's default is 0 (as kfake and Kafka before 4.3): a group of clients that
    # subscribe together is stable within one heartbeat interval instead of two (see consumer/heartbeat.py)
    group_consumer_assignment_interval_ms: int = 0
    # serve's own key, not Kafka's, off by default (0): when set, the heartbeat interval answered while the group
    # is not Stable (a target is due, or some member has yet to reach its target), so that members hear of
    # revocations and pick up released partitions soon instead of one full interval later.  Kafka always
    # answers the interval above, and rehearsing a rebalance at Kafka's pace is what serve is for; a test
    # suite that wants groups to settle in well under a second sets it (e.g. 500).
    group_consumer_reconciling_heartbeat_interval_ms: int = 0
    # the bounds Kafka checks the two values above against (and per-group overrides, not supported here)
    group_consumer_min_session_timeout_ms: int = 45_000
    group_consumer_max_session_timeout_ms: int = 60_000
    group_consumer_min_heartbeat_interval_ms: int = 5_000
    group_consumer_max_heartbeat_interval_ms: int = 15_000
    # mixed groups: which conversions of a non-empty group are allowed (Kafka's ConsumerGroupMigrationPolicy:
    # bidirectional, upgrade, downgrade, disabled; case-insensitive, stored lower case)
    group_consumer_migration_policy: str = "bidirectional"

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in _STRING_FIELDS:
                continue
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"{_kafka_key(f.name)} must be an integer, got {value!r}")
        policy = self.group_consumer_migration_policy
        if not isinstance(policy, str) or policy.strip().lower() not in MIGRATION_POLICIES:
            raise ValueError(f"group.consumer.migration.policy must be one of {', '.join(MIGRATION_POLICIES)}, "
                             f"got {policy!r}")
        object.__setattr__(self, "group_consumer_migration_policy", policy.strip().lower())
        if self.group_max_size < 1:
            raise ValueError(f"group.max.size must be at least 1, got {self.group_max_size}")
        if self.offsets_topic_num_partitions < 1:
            raise ValueError(f"offsets.topic.num.partitions must be at least 1, got {self.offsets_topic_num_partitions}")
        if self.group_min_session_timeout_ms > self.group_max_session_timeout_ms:
            raise ValueError("group.min.session.timeout.ms exceeds group.max.session.timeout.ms")
        for name in ("group_consumer_session_timeout_ms", "group_consumer_heartbeat_interval_ms",
                     "group_consumer_max_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{_kafka_key(name)} must be at least 1, got {getattr(self, name)}")
        for what in ("session_timeout", "heartbeat_interval"):
            low, value, high = (getattr(self, f"group_consumer_{k}") for k in
                                (f"min_{what}_ms", f"{what}_ms", f"max_{what}_ms"))
            if not low <= value <= high:
                raise ValueError(f"group.consumer.{what.replace('_', '.')}.ms={value} is outside "
                                 f"group.consumer.min/max.{what.replace('_', '.')}.ms [{low}, {high}]")
        if self.group_consumer_heartbeat_interval_ms >= self.group_consumer_session_timeout_ms:
            raise ValueError("group.consumer.heartbeat.interval.ms must be below group.consumer.session.timeout.ms")
        if self.group_consumer_reconciling_heartbeat_interval_ms < 0:
            raise ValueError("group.consumer.reconciling.heartbeat.interval.ms must not be negative (0 = off)")
        if self.group_consumer_assignment_interval_ms < 0:
            raise ValueError("group.consumer.assignment.interval.ms must not be negative")
        for name in ("group_initial_rebalance_delay_ms", "offsets_retention_minutes",
                     "offsets_retention_check_interval_ms", "offset_metadata_max_bytes"):
            if getattr(self, name) < 0:
                raise ValueError(f"{_kafka_key(name)} must not be negative")

    @property
    def offsets_retention_ms(self) -> int:
        """minutes × 60 × 1000 (Python ints cannot overflow; Kafka computes it in long for the same reason)."""
        return self.offsets_retention_minutes * 60 * 1000

    @classmethod
    def from_mapping(cls, config: Mapping[str, Any] | None = None, **kwargs: Any) -> "CoordinatorConfig":
        """Build from Kafka keys and/or underscore keyword arguments; unknown keys are an error."""
        names = {f.name for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {}
        for source in (config or {}, kwargs):
            for key, value in source.items():
                name = key.replace(".", "_")
                if name not in names:
                    raise ValueError(f"unknown coordinator config {key!r}; known: "
                                     + ", ".join(sorted(_kafka_key(n) for n in names)))
                values[name] = value
        return cls(**values)


def _kafka_key(name: str) -> str:
    return name.replace("_", ".")
