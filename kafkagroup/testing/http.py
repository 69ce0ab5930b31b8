"""The control endpoint of a node: JSON over HTTP/1.1 on a loopback address, served on the node's own
event loop (asyncio streams, standard library only), so every call sees the coordinator between two
requests, as the in-process :class:`~kafkagroup.testing.control.Control` does.

    GET    /groups                               every group: [GroupView]
    GET    /groups/{group}                       one group, or null
    POST   /wait      {"group", "state", "members", "timeout"}   the group once it matches; 408 on timeout
    POST   /groups/{group}/members/{member}/expire               {"expired": true|false}
    GET    /faults                               the fault rules in force
    POST   /faults    {"api_key", "action", "count", "error_code", "delay_ms", "client_id"}
    DELETE /faults                               clear every rule

Errors are ``{"error": "..."}`` with status 400 (bad request), 404 (unknown path) or 408 (wait timed
out). One request per connection (``Connection: close``). It listens where it is told: keep it on
127.0.0.1, it has no authentication.
"""
from __future__ import annotations

import asyncio
import json
import logging
import urllib.parse
from contextlib import asynccontextmanager
from typing import Any, AsyncIterator

from kafkagroup.testing.control import Control

__all__ = ["control_endpoint"]

log = logging.getLogger("kafkagroup.testing")
_MAX_BODY = 1 << 20
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout",
            500: "Internal Server Error"}


class _HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def _route(control: Control, method: str, path: str, body: Any) -> Any:
    parts = [urllib.parse.unquote(p) for p in path.strip("/").split("/")] if path.strip("/") else []
    if parts == ["groups"] and method == "GET":
        return [g.to_dict() for g in control.groups()]
    if len(parts) == 2 and parts[0] == "groups" and method == "GET":
        view = control.group(parts[1])
        return None if view is None else view.to_dict()
    if len(parts) == 5 and parts[0] == "groups" and parts[2] == "members" and parts[4] == "expire" \
            and method == "POST":
        return {"expired": control.expire(parts[1], parts[3])}
    if parts == ["wait"] and method == "POST":
        if not isinstance(body, dict) or not isinstance(body.get("group"), str):
            raise _HttpError(400, "wait: expected {\"group\": ..., \"state\": ..., \"members\": ..., \"timeout\": ...}")
        try:
            view = await control.wait_async(body["group"], body.get("state", "Stable"), body.get("members"),
                                            float(body.get("timeout", 30.0)))
        except TimeoutError as e:
            raise _HttpError(408, str(e)) from None
        return view.to_dict()
    if parts == ["faults"]:
        if method == "GET":
            return control.faults()
        if method == "DELETE":
            control.clear_faults()
            return {"cleared": True}
        if method == "POST":
            if not isinstance(body, dict):
                raise _HttpError(400, "faults: expected a JSON object")
            try:
                from kafkagroup.testing.control import fault_spec

                spec = fault_spec(body.get("api_key", body.get("api")), body.get("action", ""),
                                  count=body.get("count", 1), error=body.get("error_code", body.get("error", 0)),
                                  delay_ms=body.get("delay_ms", 0), client_id=body.get("client_id"))
                return control._add_fault(spec)
            except (ValueError, TypeError) as e:
                raise _HttpError(400, str(e)) from None
    raise _HttpError(404, f"no such control path: {method} {path}")


async def _handle(control: Control, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    status, payload = 200, None
    try:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
        length = int(headers.get("content-length", "0"))
        if not 0 <= length <= _MAX_BODY:
            raise _HttpError(400, f"body of {length} bytes")
        raw = await reader.readexactly(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except json.JSONDecodeError as e:
            raise _HttpError(400, f"body is not JSON: {e}") from None
        payload = await _route(control, method, urllib.parse.urlsplit(target).path, body)
    except _HttpError as e:
        status, payload = e.status, {"error": str(e)}
    except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError) as e:
        status, payload = 400, {"error": f"bad HTTP request: {e}"}
    except Exception as e:      # a defect here must not take the node down
        log.exception("control endpoint: internal error")
        status, payload = 500, {"error": f"internal error: {e}"}
    data = json.dumps(payload).encode()
    writer.write(f"HTTP/1.1 {status} {_REASONS.get(status, '')}\r\nContent-Type: application/json\r\n"
                 f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode() + data)
    try:
        await writer.drain()
    except ConnectionError:
        pass
    writer.close()


@asynccontextmanager
async def control_endpoint(server: Any, listen: str = "127.0.0.1:0") -> AsyncIterator[str]:
    """Serve ``server``'s control (a running :func:`kafkagroup.server.serve`) at ``listen``; yields its URL."""
    from kafkagroup.server.app import parse_listen

    host, port = parse_listen(listen)
    control = Control(server, asyncio.get_running_loop())
    listener = await asyncio.start_server(lambda r, w: _handle(control, r, w), host, port)
    bound = listener.sockets[0].getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    try:
        yield f"http://{shown}:{bound}"
    finally:
        listener.close()
        await listener.wait_closed()
