"""Topic and broker configs with Kafka 4.4's names, types and defaults: what CreateTopics checks and
DescribeConfigs answers.

:data:`TOPIC_CONFIGS` is every key a Kafka 4.4.0 broker lists for a topic (read from one), with its type, its
default and the broker key it falls back to (its *synonym*).  A topic's value comes from, in order: the
topic's own setting at CreateTopics (source DYNAMIC_TOPIC_CONFIG), the broker synonym when ``serve`` was
given it in ``config`` (STATIC_BROKER_CONFIG), else the default (DEFAULT_CONFIG).  ``serve`` *honours*
``max.message.bytes`` (Produce answers MESSAGE_TOO_LARGE above it) and ``retention.bytes`` (a positive value
bounds the partition's in-memory log instead of ``log.retention.bytes``); every other key is checked, stored
and described, as a client that reads configs back expects, and has no effect on the in-memory log.

CreateTopics checks what Kafka's ConfigDef checks for these keys -- the type, the choices of the enumerated
keys and the lower bounds listed in :data:`_AT_LEAST` -- and words the refusal as Kafka does
(``Invalid value abc for configuration max.message.bytes: Not a number of type INT``).  Documentation is
not served (``include_documentation`` gets null, which the protocol allows).
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping

__all__ = ["TOPIC_CONFIGS", "BROKER_CONFIG_TYPES", "DYNAMIC_TOPIC_CONFIG", "STATIC_BROKER_CONFIG",
           "DEFAULT_CONFIG", "config_problem", "broker_values", "topic_rows", "broker_rows", "as_text"]

# DescribeConfigs config_type (ConfigDef.Type) and config_source (ConfigSource) codes
BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST = 1, 2, 3, 4, 5, 6, 7
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5
_TYPE_NAMES = {INT: "INT", SHORT: "SHORT", LONG: "LONG", DOUBLE: "DOUBLE"}
_RANGES = {INT: (-2**31, 2**31 - 1), SHORT: (-2**15, 2**15 - 1), LONG: (-2**63, 2**63 - 1)}
_LONG_MAX = str(2**63 - 1)

# name -> (type, Kafka 4.4 default, broker synonym or None)
TOPIC_CONFIGS: Mapping[str, tuple[int, str, str | None]] = {
    "cleanup.policy": (LIST, "delete", "log.cleanup.policy"),
    "compression.gzip.level": (INT, "-1", "compression.gzip.level"),
    "compression.lz4.level": (INT, "9", "compression.lz4.level"),
    "compression.type": (STRING, "producer", "compression.type"),
    "compression.zstd.level": (INT, "3", "compression.zstd.level"),
    "delete.retention.ms": (LONG, "86400000", "log.cleaner.delete.retention.ms"),
    "errors.deadletterqueue.group.enable": (BOOLEAN, "false", None),
    "file.delete.delay.ms": (LONG, "60000", "log.segment.delete.delay.ms"),
    "flush.messages": (LONG, _LONG_MAX, "log.flush.interval.messages"),
    "flush.ms": (LONG, _LONG_MAX, None),
    "follower.replication.throttled.replicas": (LIST, "", None),
    "index.interval.bytes": (INT, "4096", "log.index.interval.bytes"),
    "leader.replication.throttled.replicas": (LIST, "", None),
    "local.retention.bytes": (LONG, "-2", "log.local.retention.bytes"),
    "local.retention.ms": (LONG, "-2", "log.local.retention.ms"),
    "max.compaction.lag.ms": (LONG, _LONG_MAX, "log.cleaner.max.compaction.lag.ms"),
    "max.decompressed.message.bytes": (INT, "2147483639", "max.decompressed.message.bytes"),
    "max.message.bytes": (INT, "1048588", "message.max.bytes"),
    "message.timestamp.after.max.ms": (LONG, "3600000", "log.message.timestamp.after.max.ms"),
    "message.timestamp.before.max.ms": (LONG, _LONG_MAX, "log.message.timestamp.before.max.ms"),
    "message.timestamp.type": (STRING, "CreateTime", "log.message.timestamp.type"),
    "min.cleanable.dirty.ratio": (DOUBLE, "0.5", "log.cleaner.min.cleanable.ratio"),
    "min.compaction.lag.ms": (LONG, "0", "log.cleaner.min.compaction.lag.ms"),
    "min.insync.replicas": (INT, "1", "min.insync.replicas"),
    "preallocate": (BOOLEAN, "false", "log.preallocate"),
    "remote.copy.lag.bytes": (LONG, "-1", "log.remote.copy.lag.bytes"),
    "remote.copy.lag.ms": (LONG, "0", "log.remote.copy.lag.ms"),
    "remote.log.copy.disable": (BOOLEAN, "false", None),
    "remote.log.delete.on.disable": (BOOLEAN, "false", None),
    "remote.storage.enable": (BOOLEAN, "false", None),
    "retention.bytes": (LONG, "-1", "log.retention.bytes"),
    "retention.ms": (LONG, "604800000", None),
    "segment.bytes": (INT, "1073741824", "log.segment.bytes"),
    "segment.index.bytes": (INT, "10485760", "log.index.size.max.bytes"),
    "segment.jitter.ms": (LONG, "0", None),
    "segment.ms": (LONG, "604800000", None),
    "unclean.leader.election.enable": (BOOLEAN, "false", "unclean.leader.election.enable"),
}
_CHOICES: Mapping[str, tuple[str, ...]] = {
    "cleanup.policy": ("compact", "delete"),
    "compression.type": ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
    "message.timestamp.type": ("CreateTime", "LogAppendTime"),
}
_AT_LEAST: Mapping[str, float] = {"max.message.bytes": 0, "min.insync.replicas": 1, "retention.ms": -1}
_BETWEEN: Mapping[str, tuple[float, float]] = {"min.cleanable.dirty.ratio": (0, 1)}

# Broker keys serve describes beyond the topic synonyms: its own and the coordinator's, with Kafka's types.
BROKER_CONFIG_TYPES: Mapping[str, int] = {
    "node.id": INT, "broker.id": INT, "num.partitions": INT, "auto.create.topics.enable": BOOLEAN,
    "socket.request.max.bytes": INT, "default.replication.factor": INT, "offsets.topic.replication.factor": SHORT,
    "delete.topic.enable": BOOLEAN, "group.min.session.timeout.ms": INT, "group.max.session.timeout.ms": INT,
    "group.initial.rebalance.delay.ms": INT, "group.max.size": INT, "offsets.topic.num.partitions": INT,
    "offsets.retention.minutes": INT, "offsets.retention.check.interval.ms": LONG, "offset.metadata.max.bytes": INT,
    "offsets.commit.timeout.ms": INT,
    **{synonym: kind for kind, _, synonym in TOPIC_CONFIGS.values() if synonym is not None},
}
# One replica, one node: what a single-node Kafka reports for these.
_FIXED_BROKER_VALUES = {"default.replication.factor": "1", "offsets.topic.replication.factor": "1",
                        "delete.topic.enable": "true"}


def as_text(value: Any) -> str:
    """A config value as Kafka writes it (booleans lower case)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def config_problem(name: str, value: str | None) -> str | None:
    """Why a topic config ``name=value`` is refused at CreateTopics (Kafka's words), or None."""
    spec = TOPIC_CONFIGS.get(name)
    if spec is None:
        return f"Unknown topic config name: {name}"
    if value is None:
        return f"Null value not supported for topic configs: {name}"
    kind = spec[0]
    text = value.strip()
    number: float | None = None
    if kind in _RANGES:
        low, high = _RANGES[kind]
        try:
            number = int(text)
        except ValueError:
            number = None
        if number is None or not low <= number <= high:
            return f"Invalid value {value} for configuration {name}: Not a number of type {_TYPE_NAMES[kind]}"
    elif kind == DOUBLE:
        try:
            number = float(text)
        except ValueError:
            return f"Invalid value {value} for configuration {name}: Not a number of type DOUBLE"
    elif kind == BOOLEAN and text.lower() not in ("true", "false"):
        return f"Invalid value {value} for configuration {name}: Expected value to be either true or false"
    choices = _CHOICES.get(name)
    if choices is not None:
        items = [v.strip() for v in text.split(",")] if kind == LIST else [text]
        bad = next((v for v in items if v not in choices), None)
        if bad is not None:
            return f"Invalid value {value} for configuration {name}: String must be one of: {', '.join(choices)}"
    if number is not None and name in _AT_LEAST and number < _AT_LEAST[name]:
        return f"Invalid value {value} for configuration {name}: Value must be at least {_AT_LEAST[name]}"
    if number is not None and name in _BETWEEN and not _BETWEEN[name][0] <= number <= _BETWEEN[name][1]:
        low, high = _BETWEEN[name]
        return f"Invalid value {value} for configuration {name}: Value must be no less than {low} and no more than {high}"
    return None


def broker_values(node_id: int, effective: Mapping[str, Any], given: Iterable[str]) -> dict[str, tuple[str, int]]:
    """Broker key -> (value text, source) for a node: ``effective`` holds serve's and the coordinator's values
    (Kafka names), ``given`` the keys set explicitly (STATIC_BROKER_CONFIG), the rest being defaults.  Topic
    synonyms serve has no value for take Kafka's defaults."""
    explicit = {key.replace("_", ".") for key in given}
    out: dict[str, tuple[str, int]] = {}
    for kind, default, synonym in TOPIC_CONFIGS.values():
        if synonym is not None:
            out[synonym] = (default, DEFAULT_CONFIG)
    out.update({key: (value, DEFAULT_CONFIG) for key, value in _FIXED_BROKER_VALUES.items()})
    for key, value in effective.items():
        out[key] = (as_text(value), STATIC_BROKER_CONFIG if key in explicit else DEFAULT_CONFIG)
    out["node.id"] = out["broker.id"] = (str(node_id), STATIC_BROKER_CONFIG)
    return out


def _row(name: str, value: str, source: int, kind: int, read_only: bool,
         synonyms: list[tuple[str, str, int]], include_synonyms: bool) -> dict[str, Any]:
    return {"name": name, "value": value, "read_only": read_only, "config_source": source,
            "is_default": source == DEFAULT_CONFIG, "is_sensitive": False, "config_type": kind,
            "documentation": None,
            "synonyms": [{"name": n, "value": v, "source": s} for n, v, s in synonyms] if include_synonyms else ()}


def topic_rows(overrides: Mapping[str, str], broker: Mapping[str, tuple[str, int]],
               keys: Iterable[str] | None, include_synonyms: bool) -> list[dict[str, Any]]:
    """DescribeConfigs rows of a topic (``keys`` None = all; unknown keys are left out, as Kafka does)."""
    names = sorted(TOPIC_CONFIGS) if keys is None else [k for k in dict.fromkeys(keys) if k in TOPIC_CONFIGS]
    rows = []
    for name in names:
        kind, default, synonym = TOPIC_CONFIGS[name]
        synonyms: list[tuple[str, str, int]] = []
        if name in overrides:
            synonyms.append((name, overrides[name], DYNAMIC_TOPIC_CONFIG))
        if synonym is not None:
            synonyms.append((synonym, *broker[synonym]))
        value, source = (synonyms[0][1], synonyms[0][2]) if synonyms else (default, DEFAULT_CONFIG)
        rows.append(_row(name, value, source, kind, False, synonyms, include_synonyms))
    return rows


def broker_rows(broker: Mapping[str, tuple[str, int]], keys: Iterable[str] | None,
                include_synonyms: bool) -> list[dict[str, Any]]:
    """DescribeConfigs rows of the node: a topic synonym is read-write in Kafka (dynamic), the rest read-only."""
    dynamic = {synonym for _, _, synonym in TOPIC_CONFIGS.values() if synonym is not None}
    names = sorted(broker) if keys is None else [k for k in dict.fromkeys(keys) if k in broker]
    return [_row(name, broker[name][0], broker[name][1], BROKER_CONFIG_TYPES.get(name, STRING), name not in dynamic,
                 [(name, *broker[name])], include_synonyms) for name in names]
