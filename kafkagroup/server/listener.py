"""Accepting connections: listening sockets, an accept loop that survives running out of file descriptors,
and the ``max.connections`` limit.

asyncio's own server reports every failed ``accept()`` through the loop's exception handler (a traceback
each time); with the process out of descriptors (EMFILE, a client opening connections until the limit)
that is a log flood.  Here an accept that fails for lack of resources (EMFILE, ENFILE, ENOBUFS, ENOMEM)
backs off -- 10 ms, doubling up to 1 s, reset by the next accept that works -- and is logged at most once
per ``_LOG_INTERVAL_S`` with the number of failures since the last line.  Connections beyond
``max.connections`` are closed as soon as accepted (the newest goes, the ones already served stay),
logged the same way.  Clients meanwhile wait in the listen backlog or retry, as with a broker at its limit.
"""
from __future__ import annotations

import asyncio
import errno
import logging
import socket
from typing import Callable

__all__ = ["open_listeners", "accept_forever", "RateLimitedLog"]

log = logging.getLogger("kafkagroup.server")
_RESOURCE_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
_BACKOFF_MIN_S, _BACKOFF_MAX_S = 0.01, 1.0
_LOG_INTERVAL_S = 10.0
_BACKLOG = 128


class RateLimitedLog:
    """One warning line per ``interval_s`` at most; the next line says how many were not logged."""

    def __init__(self, interval_s: float = _LOG_INTERVAL_S) -> None:
        self.interval_s = interval_s
        self._last: float | None = None
        self._suppressed = 0

    def warning(self, now: float, message: str, *args: object) -> None:
        if self._last is not None and now - self._last < self.interval_s:
            self._suppressed += 1
            return
        if self._suppressed:
            message += f" ({self._suppressed} more like it in the last {now - self._last:.0f} s, not logged)"  # type: ignore[operator]
        log.warning(message, *args)
        self._last = now
        self._suppressed = 0


def open_listeners(host: str, port: int) -> list[socket.socket]:
    """Non-blocking listening sockets on every address ``host`` resolves to (as asyncio.start_server)."""
    infos = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    sockets: list[socket.socket] = []
    seen = set()
    try:
        for family, kind, proto, _, address in infos:
            if sockets and port == 0:    # every address on the port the first one got
                address = (address[0], sockets[0].getsockname()[1], *address[2:])
            if (family, address) in seen:
                continue
            seen.add((family, address))
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(address)
            except OSError as e:
                raise OSError(e.errno, f"cannot listen on {address[0]}:{address[1]}: {e.strerror}") from None
            sock.listen(_BACKLOG)
            sock.setblocking(False)
    except BaseException:
        for sock in sockets:
            sock.close()
        raise
    return sockets


async def accept_forever(listener: socket.socket, max_connections: int, live: Callable[[], int],
                         serve: Callable[[socket.socket], None]) -> None:
    """Accept on ``listener`` until cancelled; hand each connection to ``serve`` unless ``live()`` connections
    already reach ``max_connections`` (then the new one is closed)."""
    loop = asyncio.get_running_loop()
    backoff = _BACKOFF_MIN_S
    out_of_resources = RateLimitedLog()
    over_limit = RateLimitedLog()
    while True:
        try:
            conn, address = await loop.sock_accept(listener)
        except OSError as e:
            if e.errno in _RESOURCE_ERRNOS:
                out_of_resources.warning(loop.time(), "cannot accept connections: %s; retrying with back-off "
                                         "(up to %.0f s)", e.strerror or e, _BACKOFF_MAX_S)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, _BACKOFF_MAX_S)
                continue
            if e.errno in (errno.ECONNABORTED, errno.EPROTO, errno.EPERM):   # the client gave up first
                continue
            raise
        backoff = _BACKOFF_MIN_S
        if live() >= max_connections:
            conn.close()
            over_limit.warning(loop.time(), "closed a new connection from %s: max.connections (%d) reached",
                               address[0] if isinstance(address, tuple) else address, max_connections)
            continue
        conn.setblocking(False)
        serve(conn)
