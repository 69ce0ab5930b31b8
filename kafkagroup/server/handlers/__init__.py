"""Request handlers, one module per API family; :data:`HANDLERS` maps an api key to its handler.

A handler is ``handler(state, request, peer_host) -> values | awaitable of values | NO_RESPONSE``;
``values`` are turned into the response entity of the request's version by
:func:`kafkagroup.server.entities.to_entity`.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

from kafkagroup.server.handlers import admin, cluster, data, group, switched_off

__all__ = ["HANDLERS", "Handler"]

Handler = Callable[..., Any]
# switched_off first: an API implemented elsewhere is answered by its own handler
HANDLERS: Mapping[int, Handler] = {**switched_off.HANDLERS, **cluster.HANDLERS, **group.HANDLERS, **data.HANDLERS,
                                   **admin.HANDLERS}
