"""``serve()``: one kafkagroup node on Kafka's wire protocol, as an async context manager.

::

    async with kafkagroup.server.serve(listen="127.0.0.1:0", topics={"orders": 6},
                                       config={"group.initial.rebalance.delay.ms": 0}) as server:
        consumer = confluent_kafka.Consumer({"bootstrap.servers": server.bootstrap, "group.id": "g", ...})

The node (id 0) is advertised as the listen address, leads every partition of the in-memory log and
coordinates every group with :class:`~kafkagroup.coordinator.GroupCoordinator` on the loop's clock.
The *log is in memory* (records are lost when the server stops); committed offsets and group state are
in ``store`` (an SQLite path; ``None`` = in memory too).  Leaving the block stops accepting, closes every
connection and shuts the coordinator down (its store closed; every acknowledged commit is already on disk).

``config`` takes the coordinator's Kafka keys (``group.initial.rebalance.delay.ms``,
``group.min.session.timeout.ms``, ``offsets.retention.minutes``, ...) and the server's own:
:data:`kafkagroup.server.config.SERVER_CONFIG`.
"""
from __future__ import annotations

import asyncio
import dataclasses
import logging
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, AsyncIterator, Mapping

from kafkagroup.coordinator.coordinator import GroupCoordinator
from kafkagroup.messages.clock import AsyncioClock
from kafkagroup.server.connection import serve_connection
from kafkagroup.server.config import split_config
from kafkagroup.server.faults import Faults
from kafkagroup.server.log import InMemoryLog
from kafkagroup.server.state import NODE_ID, NodeState
from kafkagroup.server.topic_config import broker_values

__all__ = ["serve", "Server", "parse_listen"]

log = logging.getLogger("kafkagroup.server")

@dataclass(slots=True)
class Server:
    """A running node: where it listens and what it runs."""

    host: str
    port: int
    coordinator: GroupCoordinator
    log: InMemoryLog
    faults: Faults                  # what a test injects into the answers (kafkagroup.testing)

    @property
    def bootstrap(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def parse_listen(listen: str) -> tuple[str, int]:
    """``"HOST:PORT"`` (``"[::1]:PORT"`` for IPv6) -> (host, port); ValueError naming what is wrong."""
    host, sep, port_text = listen.rpartition(":")
    if not sep or not host:
        raise ValueError(f"listen address {listen!r} is not HOST:PORT")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        port = int(port_text)
    except ValueError:
        raise ValueError(f"listen address {listen!r}: port {port_text!r} is not a number") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"listen address {listen!r}: port {port} is outside 0..65535")
    return host, port


@asynccontextmanager
async def serve(listen: str = "127.0.0.1:9092", *, store: str | None = None,
                topics: Mapping[str, int] | None = None,
                config: Mapping[str, Any] | None = None) -> AsyncIterator[Server]:
    """Run a node until the block exits (see the module docstring)."""
    host, port = parse_listen(listen)
    server_config, coordinator_config = split_config(config)
    records = InMemoryLog(num_partitions=server_config["num.partitions"],
                          partition_max_bytes=server_config["log.retention.bytes"],
                          auto_create=server_config["auto.create.topics.enable"],
                          message_max_bytes=server_config["message.max.bytes"])
    for name, partitions in (topics or {}).items():
        records.create(name, partitions)
    loop = asyncio.get_running_loop()
    coordinator = GroupCoordinator(coordinator_config, clock=AsyncioClock(loop),
                                   store=":memory:" if store is None else store)
    max_request_bytes = server_config["socket.request.max.bytes"]
    connections: set[asyncio.Task[None]] = set()
    state: NodeState | None = None

    async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None and state is not None
        connections.add(task)
        try:
            await serve_connection(state, reader, writer, max_request_bytes)
        except asyncio.CancelledError:
            pass   # the server is stopping; ending normally keeps asyncio's stream callback from logging it
        finally:
            connections.discard(task)

    try:
        listener = await asyncio.start_server(accept, host, port)
    except BaseException:
        coordinator.shutdown()
        raise
    bound_port = listener.sockets[0].getsockname()[1]
    effective = {**server_config, **{f.name.replace("_", "."): getattr(coordinator.config, f.name)
                                     for f in dataclasses.fields(coordinator.config)}}
    faults = Faults()
    state = NodeState(host, bound_port, coordinator, records,
                      broker_config=broker_values(NODE_ID, effective, (config or {}).keys()), faults=faults)
    log.info("listening on %s:%d (log in memory; offsets in %s)", host, bound_port, store or "memory")
    try:
        yield Server(host, bound_port, coordinator, records, faults)
    finally:
        listener.close()
        # The coordinator first: it answers every parked JoinGroup/SyncGroup (a retriable coordinator error:
        # clients look for the coordinator again) and closes its store; a loop pass lets those answers be
        # written; then the connections still waiting (on a fetch or on a client) are closed.
        coordinator.shutdown()
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        for task in list(connections):
            task.cancel()
        if connections:
            await asyncio.gather(*connections, return_exceptions=True)
        await listener.wait_closed()
