"""The server's own config keys (Kafka's broker names), next to the coordinator's, for ``serve()`` and
``kafkagroup serve --help``.  Free of kio so that the CLI's help needs no codec."""
from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from kafkagroup.coordinator.config import CoordinatorConfig

__all__ = ["SERVER_CONFIG", "DEFAULT_MAX_REQUEST_BYTES", "split_config", "describe_config"]

DEFAULT_MAX_REQUEST_BYTES = 100 * 1024 * 1024

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
            raise ValueError(f"{key} must be {'true/false' if isinstance(default, bool) else 'an integer'}, "
                             f"got {value!r}")
        if not isinstance(default, bool) and value < 1:
            raise ValueError(f"{key} must be at least 1, got {value}")
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
