"""Build a kio entity of any API version from plain values.

kio generates one frozen dataclass per (API, version, entity): a field that a version lacks is simply
absent from its class, and nested entities are distinct classes per version.  The handlers therefore
describe each response once, as plain values (mappings or objects with attributes, e.g. the
``kafkagroup.messages`` response dataclasses, whose names are Kafka's), and :func:`to_entity` keeps the
fields the target version has, converting on the way:

* ``error_code`` fields take an int (``kafkagroup.messages.ErrorCode`` included) -> ``kio.schema.errors.ErrorCode``;
* ``timedelta_i32`` / ``timedelta_i64`` fields take milliseconds as an int;
* arrays of entities take any iterable of plain values, converted with the nested class of that version;
* ``None`` for a string or bytes field that this version cannot null becomes empty.

A field missing from the values takes the class default, else a neutral default of Kafka's generated
messages for the few fields a handler never computes (``throttle_time`` 0, authorized operations
``-2147483648`` = not requested); any other missing field is a bug here and raises ``KeyError`` naming it.
"""
from __future__ import annotations

import dataclasses
import datetime
import typing
from functools import lru_cache
from typing import Any, Callable, Mapping

from kio.schema.errors import ErrorCode as KioErrorCode

__all__ = ["to_entity", "null_field"]

_NEUTRAL: Mapping[str, Any] = {
    "throttle_time": 0,
    "authorized_operations": -2147483648,
    "topic_authorized_operations": -2147483648,
    "cluster_authorized_operations": -2147483648,
    "error_message": None,
}
_MISSING = object()
_KIO_ERRORS = {int(e): e for e in KioErrorCode}


def _error(value: int) -> KioErrorCode:
    try:
        return _KIO_ERRORS[int(value)]
    except KeyError:
        return KioErrorCode.unknown_server_error


def _delta(value: int | datetime.timedelta) -> datetime.timedelta:
    return value if isinstance(value, datetime.timedelta) else datetime.timedelta(milliseconds=int(value))


def _entity_class(hint: Any) -> type | None:
    """The dataclass inside ``X``, ``X | None``, ``tuple[X, ...]`` or ``tuple[X, ...] | None``."""
    if dataclasses.is_dataclass(hint):
        return hint  # type: ignore[return-value]
    for arg in typing.get_args(hint):
        found = _entity_class(arg)
        if found is not None:
            return found
    return None


def _is_array(hint: Any) -> bool:
    if typing.get_origin(hint) is tuple:
        return True
    return any(_is_array(a) for a in typing.get_args(hint))


@lru_cache(maxsize=None)
def _plan(cls: type) -> tuple[tuple[str, Callable[[Any], Any] | None, Any], ...]:
    """Per field of ``cls``: (name, converter or None, default)."""
    hints = typing.get_type_hints(cls)
    plan = []
    for f in dataclasses.fields(cls):
        kafka_type = f.metadata.get("kafka_type")
        hint = hints[f.name]
        nested = _entity_class(hint)
        convert: Callable[[Any], Any] | None
        if nested is not None:
            if _is_array(hint):
                convert = (lambda n: lambda v: None if v is None else tuple(to_entity(n, x) for x in v))(nested)
            else:
                convert = (lambda n: lambda v: None if v is None else to_entity(n, v))(nested)
        elif kafka_type == "error_code":
            convert = _error
        elif kafka_type in ("timedelta_i32", "timedelta_i64"):
            convert = _delta
        elif _is_array(hint):
            convert = lambda v: None if v is None else tuple(v)  # noqa: E731
        elif kafka_type in ("string", "bytes") and type(None) not in typing.get_args(hint):
            # nullable only in newer versions: older ones carry null as empty, as Kafka's response
            # classes do (e.g. JoinGroup's protocol name before v7)
            empty = "" if kafka_type == "string" else b""
            convert = (lambda e: lambda v: e if v is None else v)(empty)
        else:
            convert = None
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            default = f.default_factory()  # type: ignore[misc]
        else:
            default = _NEUTRAL.get(f.name, _MISSING)
            if default is not _MISSING and default is not None and convert is not None:
                default = convert(default)
        plan.append((f.name, convert, default))
    return tuple(plan)


def to_entity(cls: type, values: Any) -> Any:
    """``cls(**fields)`` taken from ``values`` (a mapping or an object with attributes)."""
    get = values.get if isinstance(values, Mapping) else (lambda k, d: getattr(values, k, d))
    kwargs = {}
    for name, convert, default in _plan(cls):
        value = get(name, _MISSING)
        if value is _MISSING:
            if default is _MISSING:
                raise KeyError(f"{cls.__module__}.{cls.__name__}: no value for field {name!r}")
            value = default
        elif convert is not None:
            value = convert(value)
        kwargs[name] = value
    return cls(**kwargs)


@lru_cache(maxsize=None)
def _null_plan(cls: type) -> tuple[tuple[str, bool, type | None, bool], ...]:
    """Per field: (name, nullable, nested entity class or None, is an array)."""
    hints = typing.get_type_hints(cls)
    plan = []
    for f in dataclasses.fields(cls):
        hint = hints[f.name]
        nullable = type(None) in typing.get_args(hint) or f.metadata.get("tag") is not None
        plan.append((f.name, nullable, _entity_class(hint), _is_array(hint)))
    return tuple(plan)


def null_field(entity: Any, path: str = "") -> str | None:
    """The path of the first field that this version declares non-nullable but holds None (kio's readers
    accept a null length for any string or array; Kafka's generated readers refuse it), else None."""
    for name, nullable, nested, is_array in _null_plan(type(entity)):
        value = getattr(entity, name)
        where = f"{path}.{name}" if path else name
        if value is None:
            if not nullable:
                return where
            continue
        if nested is not None:
            for i, item in enumerate(value if is_array else (value,)):
                found = null_field(item, f"{where}[{i}]" if is_array else where)
                if found:
                    return found
        elif is_array and any(item is None for item in value):
            return f"{where}[{next(i for i, item in enumerate(value) if item is None)}]"
    return None
