"""Observe and steer a running node from a test: :class:`Control` in process, :class:`ControlClient` over
the node's loopback HTTP endpoint (``kafkagroup serve --control 127.0.0.1:PORT``). Both have the same
methods, so a test reads the same whichever way its server runs::

    control.wait("billing", state="Stable", members=3)       # -> GroupView, or TimeoutError naming the last one
    control.group("billing").members[0].assignment          # {"orders": [0, 1]}
    control.expire("billing", member_id)                     # its session expires now: the group rebalances
    control.inject_error("Heartbeat", "REBALANCE_IN_PROGRESS", count=2)
    control.delay("Fetch", 500, count=1)                     # the next Fetch answer leaves 0.5 s late
    control.drop("OffsetCommit", client_id="app-1")          # the next OffsetCommit of app-1 is never answered
    control.clear_faults()

``api`` is a Kafka API name (``"JoinGroup"``, case and underscores ignored: ``"join_group"``) or key;
``error`` an ``ErrorCode`` name or number. ``count=None`` keeps a fault until cleared.
"""
from __future__ import annotations

from abc import ABC, abstractmethod

import asyncio
import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from kafkagroup.testing.observe import GroupView, matches, observe_groups

__all__ = ["Control", "ControlClient", "api_key", "error_code"]

_POLL_S = 0.005


def api_key(api: str | int) -> int:
    """``"JoinGroup"`` / ``"join_group"`` / 11 -> 11 (the APIs the node serves)."""
    from kafkagroup.server.versions import SUPPORTED

    if isinstance(api, int) and not isinstance(api, bool):
        if api in SUPPORTED:
            return api
    else:
        wanted = str(api).replace("_", "").replace("-", "").lower()
        for key, (name, _, _) in SUPPORTED.items():
            if name.lower() == wanted:
                return key
    known = ", ".join(name for name, _, _ in SUPPORTED.values())
    raise ValueError(f"unknown API {api!r} (served: {known})")


def error_code(error: str | int) -> int:
    """``"NOT_COORDINATOR"`` / 16 -> 16."""
    from kafkagroup.messages.error_codes import ErrorCode

    if isinstance(error, int) and not isinstance(error, bool):
        return int(ErrorCode(error)) if error in ErrorCode._value2member_map_ else error
    try:
        return int(ErrorCode[str(error).upper()])
    except KeyError:
        raise ValueError(f"unknown error code {error!r} (a Kafka error name such as NOT_COORDINATOR, or a number)") \
            from None


def fault_spec(api: str | int, action: str, *, count: int | None = 1, error: str | int = 0, delay_ms: int = 0,
               client_id: str | None = None) -> dict[str, Any]:
    return {"api_key": api_key(api), "action": action, "count": count, "error_code": error_code(error),
            "delay_ms": int(delay_ms), "client_id": client_id}


class _Surface(ABC):
    """The methods shared by both controls, over five primitives the subclasses provide (groups, group, wait,
    expire, _add_fault)."""

    @abstractmethod
    def groups(self) -> list[GroupView]:
        """Every group the node knows, as the coordinator describes it."""

    @abstractmethod
    def group(self, group_id: str) -> GroupView | None:
        """One group as the coordinator describes it; None when the node has no such group."""

    @abstractmethod
    def wait(self, group_id: str, state: str | None = "Stable", members: int | None = None,
             timeout: float = 30.0) -> GroupView:
        """The group once it is in ``state`` with ``members`` members (None: any); TimeoutError after
        ``timeout`` seconds, naming what was last seen."""

    @abstractmethod
    def expire(self, group_id: str, member_id: str) -> bool:
        """Expire the member's session now, as its session timeout would; False when it is not a member."""

    @abstractmethod
    def _add_fault(self, spec: dict[str, Any]) -> dict[str, Any]:
        """Add a fault rule (:func:`fault_spec`) to the node; the rule as stored."""

    def inject_error(self, api: str | int, error: str | int, count: int | None = 1,
                     client_id: str | None = None) -> dict[str, Any]:
        """The next ``count`` requests of ``api`` are answered ``error`` without being handled."""
        return self._add_fault(fault_spec(api, "error", count=count, error=error, client_id=client_id))

    def delay(self, api: str | int, delay_ms: int, count: int | None = 1,
              client_id: str | None = None) -> dict[str, Any]:
        """The answers to the next ``count`` requests of ``api`` leave ``delay_ms`` late."""
        return self._add_fault(fault_spec(api, "delay", count=count, delay_ms=delay_ms, client_id=client_id))

    def drop(self, api: str | int, count: int | None = 1, client_id: str | None = None) -> dict[str, Any]:
        """The next ``count`` requests of ``api`` are handled and never answered."""
        return self._add_fault(fault_spec(api, "drop", count=count, client_id=client_id))


class Control(_Surface):
    """In-process control of a node running on ``loop`` (another thread's or this one's)."""

    def __init__(self, server: Any, loop: asyncio.AbstractEventLoop) -> None:
        self._server = server
        self._loop = loop

    def _on_loop(self, fn: Any, *args: Any) -> Any:
        """Run ``fn(*args)`` on the node's loop (the coordinator is not thread-safe) and return its result."""
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is self._loop:          # called from the node's own loop (an asyncio test)
            return fn(*args)
        done = threading.Event()
        box: list[Any] = []

        def call() -> None:
            try:
                box.append((True, fn(*args)))
            except BaseException as e:     # handed to the caller's thread
                box.append((False, e))
            done.set()

        self._loop.call_soon_threadsafe(call)
        done.wait()
        ok, value = box[0]
        if not ok:
            raise value
        return value

    def groups(self) -> list[GroupView]:
        return self._on_loop(observe_groups, self._server.coordinator)

    def group(self, group_id: str) -> GroupView | None:
        views = self._on_loop(observe_groups, self._server.coordinator, [group_id])
        return views[0] if views and views[0].state != "Dead" else None

    def wait(self, group_id: str, state: str | None = "Stable", members: int | None = None,
             timeout: float = 30.0) -> GroupView:
        deadline = time.monotonic() + timeout
        while True:
            view = self.group(group_id)
            if matches(view, state, members):
                return view  # type: ignore[return-value]
            if time.monotonic() >= deadline:
                raise TimeoutError(_timeout_text(group_id, state, members, timeout, view))
            time.sleep(_POLL_S)

    async def wait_async(self, group_id: str, state: str | None = "Stable", members: int | None = None,
                         timeout: float = 30.0) -> GroupView:
        """:meth:`wait` for a caller on the node's own loop (the HTTP endpoint, an asyncio test)."""
        deadline = time.monotonic() + timeout
        while True:
            views = observe_groups(self._server.coordinator, [group_id])
            view = views[0] if views and views[0].state != "Dead" else None
            if matches(view, state, members):
                return view  # type: ignore[return-value]
            if time.monotonic() >= deadline:
                raise TimeoutError(_timeout_text(group_id, state, members, timeout, view))
            await asyncio.sleep(_POLL_S)

    def expire(self, group_id: str, member_id: str) -> bool:
        return self._on_loop(self._server.coordinator.expire_session, group_id, member_id)

    def _add_fault(self, spec: dict[str, Any]) -> dict[str, Any]:
        from kafkagroup.server.faults import FaultRule

        return self._server.faults.add(FaultRule(**spec)).as_dict()

    def faults(self) -> list[dict[str, Any]]:
        return [r.as_dict() for r in self._server.faults.rules()]

    def clear_faults(self) -> None:
        self._server.faults.clear()


def _timeout_text(group_id: str, state: str | None, members: int | None, timeout: float,
                  view: GroupView | None) -> str:
    wanted = " with ".join(x for x in (state, f"{members} member(s)" if members is not None else None) if x)
    seen = "no such group" if view is None else f"{view.state} with {len(view.members)} member(s)"
    return f"group {group_id!r} not {wanted} within {timeout:g} s (last seen: {seen})"


class ControlError(RuntimeError):
    """The control endpoint refused a request (its message says why)."""


class ControlClient(_Surface):
    """The same control over HTTP: ``ControlClient("http://127.0.0.1:PORT")`` (serve --control's address)."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/") if "://" in url else f"http://{url.rstrip('/')}"

    def _request(self, method: str, path: str, body: Any = None, timeout: float = 10.0) -> Any:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                return json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as e:
            try:
                message = json.loads(e.read())["error"]
            except Exception:
                message = f"HTTP {e.code}"
            if e.code == 408:
                raise TimeoutError(message) from None
            raise ControlError(message) from None

    @staticmethod
    def _q(text: str) -> str:
        return urllib.parse.quote(text, safe="")

    def groups(self) -> list[GroupView]:
        return [GroupView.from_dict(g) for g in self._request("GET", "/groups")]

    def group(self, group_id: str) -> GroupView | None:
        found = self._request("GET", f"/groups/{self._q(group_id)}")
        return None if found is None else GroupView.from_dict(found)

    def wait(self, group_id: str, state: str | None = "Stable", members: int | None = None,
             timeout: float = 30.0) -> GroupView:
        body = {"group": group_id, "state": state, "members": members, "timeout": timeout}
        return GroupView.from_dict(self._request("POST", "/wait", body, timeout=timeout + 10))

    def expire(self, group_id: str, member_id: str) -> bool:
        return self._request("POST", f"/groups/{self._q(group_id)}/members/{self._q(member_id)}/expire")["expired"]

    def _add_fault(self, spec: dict[str, Any]) -> dict[str, Any]:
        return self._request("POST", "/faults", spec)

    def faults(self) -> list[dict[str, Any]]:
        return self._request("GET", "/faults")

    def clear_faults(self) -> None:
        self._request("DELETE", "/faults")
