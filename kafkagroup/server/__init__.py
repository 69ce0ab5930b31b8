"""``kafkagroup serve``: the group coordinator on Kafka's wire protocol, for real Kafka clients.

``async with serve(listen="127.0.0.1:0") as server`` runs one node (id 0) on the running loop; its
``server.bootstrap`` goes into any client's ``bootstrap.servers``.  The record log is in memory.
Requires kio (``pip install 'kafkagroup[serve]'``); it is imported on first use of ``serve``/``Server``,
so that ``kafkagroup --help`` (which registers the ``serve`` command) works without it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kafkagroup.server.config import SERVER_CONFIG

if TYPE_CHECKING:
    from kafkagroup.server.app import Server, serve

__all__ = ["serve", "Server", "SERVER_CONFIG"]


def __getattr__(name: str) -> Any:
    if name in ("serve", "Server"):
        from kafkagroup.server import app
        return getattr(app, name)
    raise AttributeError(f"module 'kafkagroup.server' has no attribute {name!r}")
