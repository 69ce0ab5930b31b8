"""Request handlers, one module per API family; :data:`HANDLERS` maps an api key to its handler.

A handler is ``handler(state, request, peer_host) -> values | awaitable of values | NO_RESPONSE``;
``values`` are turned into the response entity of the request's version by
:func:`kafkagroup.server.entities.to_entity`.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

from kafkagroup.server.handlers import admin, cluster, consumer, data, group

__all__ = ["HANDLERS", "Handler"]

Handler = Callable[..., Any]
HANDLERS: Mapping[int, Handler] = {**cluster.HANDLERS, **group.HANDLERS, **data.HANDLERS, **admin.HANDLERS,
                                   **consumer.HANDLERS}
