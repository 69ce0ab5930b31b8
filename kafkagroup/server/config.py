"""The server's own config keys (Kafka's broker names), next to the coordinator's, for ``serve()`` and
``kafkagroup serve --help``.  Free of kio so that the CLI's help needs no codec."""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from kafkagroup.coordinator.config import CoordinatorConfig

__all__ = ["SERVER_CONFIG", "DEFAULT_MAX_REQUEST_BYTES", "REBALANCE_PROTOCOLS", "split_config", "describe_config"]

DEFAULT_MAX_REQUEST_BYTES = 100 * 1024 * 1024
REBALANCE_PROTOCOLS = ("classic", "consumer")     # what group.coordinator.rebalance.protocols may list

# key -> (default, what it bounds)
SERVER_CONFIG: Mapping[str, tuple[Any, str]] = {
    "num.partitions": (1, "partitions of an auto-created topic"),
    "auto.create.topics.enable": (True, "create a topic on its first Metadata or Produce"),
    "socket.request.max.bytes": (DEFAULT_MAX_REQUEST_BYTES,
                                 "largest request frame; a larger one closes the connection"),
    "message.max.bytes": (1_048_588,
                          "largest record batch a Produce may carry (a topic's max.message.bytes overrides it); "
                          "a larger one is answered MESSAGE_TOO_LARGE, as Kafka answers it"),
    "log.retention.bytes": (256 * 1024 * 1024,
                            "per-partition byte bound of the in-memory log: the oldest batches are dropped "
                            "and fetching below the new log start is OFFSET_OUT_OF_RANGE"),
    "fetch.max.bytes": (55 * 1024 * 1024,
                        "largest Fetch answer, whatever the request asks (Kafka's rule: the first batch is "
                        "returned even if larger, so a consumer makes progress)"),
    "queued.max.answer.bytes": (256 * 1024 * 1024,
                                "server-wide bound on memory held for answers being written (a Fetch "
                                "reserves its records' bytes); beyond it Fetches wait (never fail); one "
                                "answer larger than the bound is served alone"),
    "group.coordinator.rebalance.protocols": (
        "classic,consumer",
        "the group protocols the coordinator takes (Kafka's key; classic is required): without consumer, "
        "ConsumerGroupHeartbeat and ConsumerGroupDescribe stay advertised and are answered UNSUPPORTED_VERSION, "
        "as a Kafka 4 broker so configured answers them"),
    "max.connections": (1000,
                        "open client connections; a new connection beyond it is closed at once (keep it "
                        "below the process's file-descriptor limit, `ulimit -n`)"),
}


def split_config(config: Mapping[str, Any] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(server keys with defaults filled in, the rest for the coordinator); ValueError for a bad server value."""
    server = {key: default for key, (default, _) in SERVER_CONFIG.items()}
    coordinator: dict[str, Any] = {}
    for key, value in (config or {}).items():
        dotted = key.replace("_", ".")
        if dotted in SERVER_CONFIG:
            server[dotted] = value
        else:
            coordinator[key] = value
    for key, (default, _) in SERVER_CONFIG.items():
        value = server[key]
        if type(value) is not type(default):
            kind = {bool: "true/false", int: "an integer", str: "a comma-separated list"}[type(default)]
            raise ValueError(f"{key} must be {kind}, got {value!r}")
        if type(default) is int and value < 1:
            raise ValueError(f"{key} must be at least 1, got {value}")
    protocols = [p.strip() for p in server["group.coordinator.rebalance.protocols"].split(",")]
    unknown = [p for p in protocols if p not in REBALANCE_PROTOCOLS]
    if unknown or "classic" not in protocols:
        raise ValueError(f"group.coordinator.rebalance.protocols must list classic and may list consumer, "
                         f"got {server['group.coordinator.rebalance.protocols']!r}")
    return server, coordinator


def describe_config() -> str:
    """One line per key with its default: the coordinator's, then the server's."""
    lines = ["  coordinator (kafkagroup.coordinator.CoordinatorConfig):"]
    for f in dataclasses.fields(CoordinatorConfig):
        lines.append(f"    {f.name.replace('_', '.')} (default {f.default})")
    lines.append("  server:")
    for key, (default, what) in SERVER_CONFIG.items():
        shown = str(default).lower() if isinstance(default, bool) else default
        lines.append(f"    {key} (default {shown}): {what}")
    return "\n".join(lines)
