"""Faults a test injects into a running node (kafkagroup.testing): the one hook a connection calls.

A connection asks :meth:`Faults.answer` for each request it decodes; with no rule matching it returns
``None`` and the request is handled as usual. A rule matches an API (by key) and optionally a client id,
and applies to the next ``count`` matching requests (``count=None``: until cleared):

* ``error``: the request is not handled; its answer carries ``error_code`` in every error field, with
  the request's own topics / partitions / groups echoed where the answer lists them under the same name
  (Kafka's ``AbstractRequest.getErrorResponse`` does the same per API). Other fields are -1 / empty.
* ``delay``: the request is handled, its answer leaves ``delay_ms`` later (the connection answers in
  order, so answers behind it wait too, as behind a slow link);
* ``drop``: the request is handled and never answered (the client's request times out, as when an answer
  is lost; Kafka clients then close the connection and retry).

Limits: an answer whose arrays are named differently from the request's (Produce: ``topic_data`` in,
``responses`` out) is sent with those arrays empty.
"""
from __future__ import annotations

import asyncio
import dataclasses
import datetime
import threading
import typing
import uuid
from dataclasses import dataclass
from typing import Any

from kafkagroup.server.entities import _entity_class, _error, _is_array
from kafkagroup.server.framing import Request
from kafkagroup.server.state import NO_RESPONSE
from kafkagroup.server.versions import response_class

__all__ = ["Faults", "FaultRule", "ACTIONS", "error_answer"]

ACTIONS = ("error", "delay", "drop")


@dataclass(slots=True)
class FaultRule:
    api_key: int
    action: str
    count: int | None = 1                   # requests left; None = until cleared
    error_code: int = 0
    delay_ms: int = 0
    client_id: str | None = None
    applied: int = 0

    def matches(self, request: Request) -> bool:
        return request.api_key == self.api_key and (self.client_id is None or request.client_id == self.client_id)

    def as_dict(self) -> dict[str, Any]:
        return {f: getattr(self, f) for f in self.__slots__}  # type: ignore[attr-defined]


class Faults:
    """The rules of one node, first added first applied; thread-safe (a test thread adds, the loop takes)."""

    def __init__(self) -> None:
        self._rules: list[FaultRule] = []
        self._lock = threading.Lock()

    def add(self, rule: FaultRule) -> FaultRule:
        if rule.action not in ACTIONS:
            raise ValueError(f"fault action {rule.action!r}: expected one of {', '.join(ACTIONS)}")
        if rule.count is not None and rule.count < 1:
            raise ValueError(f"fault count {rule.count}: expected at least 1 (or None: until cleared)")
        if rule.delay_ms < 0:
            raise ValueError(f"fault delay_ms {rule.delay_ms}: expected at least 0")
        with self._lock:
            self._rules.append(rule)
        return rule

    def clear(self) -> None:
        with self._lock:
            self._rules.clear()

    def active(self) -> bool:
        """Is any rule set? (A connection answers from its caches only when none is.)"""
        return bool(self._rules)

    def rules(self) -> list[FaultRule]:
        with self._lock:
            return list(self._rules)

    def _take(self, request: Request) -> FaultRule | None:
        with self._lock:
            for rule in self._rules:
                if rule.matches(request):
                    rule.applied += 1
                    if rule.count is not None:
                        rule.count -= 1
                        if rule.count == 0:
                            self._rules.remove(rule)
                    return rule
        return None

    def answer(self, request: Request, handle: typing.Callable[[], Any]) -> Any:
        """None when no rule matches (handle as usual); else the values, awaitable or NO_RESPONSE to send.
        ``handle()`` runs the request's handler."""
        if not self._rules:
            return None
        rule = self._take(request)
        if rule is None:
            return None
        if rule.action == "error":
            return error_answer(request, rule.error_code)
        if rule.action == "drop":
            return _drop(handle())
        return _delay(handle(), rule.delay_ms)


async def _drop(result: Any) -> Any:
    if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
        await result
    return NO_RESPONSE


async def _delay(result: Any, delay_ms: int) -> Any:
    if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
        result = await result
    await asyncio.sleep(delay_ms / 1000)
    return result


def error_answer(request: Request, error_code: int) -> Any:
    """The response entity of ``request``'s API and version with ``error_code`` in every error field."""
    version = request.api_version if request.body is not None else 0
    return _error_entity(response_class(request.api_key, version), request.body, error_code)


_MISSING = object()
_ZERO = {"timedelta_i32": datetime.timedelta(0), "timedelta_i64": datetime.timedelta(0)}


def _error_entity(cls: type, source: Any, code: int) -> Any:
    hints = typing.get_type_hints(cls)
    kwargs: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        kafka_type = f.metadata.get("kafka_type")
        nullable = type(None) in typing.get_args(hint)
        nested = _entity_class(hint)
        given = getattr(source, f.name, _MISSING) if source is not None else _MISSING
        if kafka_type == "error_code":
            value: Any = _error(code)
        elif nested is not None:
            if _is_array(hint):
                items = given if isinstance(given, tuple) else ()
                value = tuple(_error_entity(nested, item, code) for item in items)
            else:
                value = None if nullable else _error_entity(nested, None if given is _MISSING else given, code)
        elif given is not _MISSING and not isinstance(given, tuple) and not dataclasses.is_dataclass(given):
            value = given                                  # an echoed key: name, partition_index, group_id
        elif f.default is not dataclasses.MISSING:
            value = f.default
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            value = f.default_factory()  # type: ignore[misc]
        elif nullable:
            value = None
        elif _is_array(hint):
            value = ()
        elif kafka_type in _ZERO:
            value = _ZERO[kafka_type]
        elif kafka_type == "string":
            value = ""
        elif kafka_type in ("bytes", "records"):
            value = b""
        elif kafka_type == "bool":
            value = False
        elif kafka_type == "uuid":
            value = uuid.UUID(int=0)
        else:                                              # int8 .. int64, float64
            value = -1
        kwargs[f.name] = value
    return cls(**kwargs)
