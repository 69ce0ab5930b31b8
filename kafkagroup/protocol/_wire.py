"""Kafka's classic (non-flexible) wire primitives, read and written with the stdlib ``struct`` module.

Encodings (big-endian, as every Kafka message before flexible versions):

- ``int16`` / ``int32``: two's complement;
- ``string``: int16 byte length + UTF-8; a nullable string uses length -1 for null;
- ``bytes``: int32 byte length + raw bytes; nullable bytes use length -1 for null;
- ``array``: int32 element count followed by the elements (-1 would mean null; none of the
  consumer-protocol arrays is nullable, so a negative count is an error here).

:class:`Reader` never trusts a length or a count: before it slices or allocates anything it checks
that ``count * smallest_element_size`` fits in the bytes left, so a hostile 4-byte prefix cannot make
it allocate gigabytes. Every failure is a :class:`~kafkagroup.errors.ProtocolError` naming the field
(a dotted path such as ``owned_partitions[2].partitions``) and the byte offset where it starts.

Limits and a deliberate difference from Java: Kafka's Java client decodes invalid UTF-8 with
replacement characters; kafkagroup rejects it (a topic name that is not valid UTF-8 cannot name a
real topic, and a silently altered name would be assigned as a different topic).
"""
from __future__ import annotations

import struct
from typing import Optional

from kafkagroup.errors import ProtocolError

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")

INT16_MAX = 0x7FFF
INT32_MIN = -0x80000000
INT32_MAX = 0x7FFFFFFF


class Reader:
    """Sequential reader over one message; ``what`` prefixes every error message (e.g. the message
    name, or ``member 3 subscription``)."""

    __slots__ = ("data", "pos", "what")

    def __init__(self, data: bytes, what: str) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"{what}: expected bytes, got {type(data).__name__}")
        self.data = bytes(data)
        self.pos = 0
        self.what = what

    def fail(self, field: str, offset: int, problem: str) -> ProtocolError:
        return ProtocolError(f"{self.what}: {field} at byte offset {offset}: {problem}")

    def remaining(self) -> int:
        return len(self.data) - self.pos

    def _need(self, field: str, size: int, kind: str) -> None:
        left = len(self.data) - self.pos
        if size > left:
            raise self.fail(field, self.pos, f"truncated: {kind} needs {size} bytes, {left} left")

    def int16(self, field: str) -> int:
        self._need(field, 2, "int16")
        (value,) = _I16.unpack_from(self.data, self.pos)
        self.pos += 2
        return value

    def int32(self, field: str) -> int:
        self._need(field, 4, "int32")
        (value,) = _I32.unpack_from(self.data, self.pos)
        self.pos += 4
        return value

    def string(self, field: str, nullable: bool = False) -> Optional[str]:
        start = self.pos
        raw = self._sized(field, start, self.int16(field), "string", nullable)
        if raw is None:
            return None
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise self.fail(field, start, f"invalid UTF-8 at byte {self.pos - len(raw) + exc.start}") from None

    def nullable_bytes(self, field: str) -> Optional[bytes]:
        start = self.pos
        return self._sized(field, start, self.int32(field), "bytes", True)

    def _sized(self, field: str, start: int, length: int, kind: str, nullable: bool) -> Optional[bytes]:
        """The ``length`` bytes after the length prefix of a ``kind`` field read at ``start``; None for a null
        (length -1) where ``nullable``; a length that is negative otherwise, or longer than what is left, fails."""
        if length < 0:
            if nullable and length == -1:
                return None
            raise self.fail(field, start, f"invalid {kind} length {length}")
        left = len(self.data) - self.pos
        if length > left:
            raise self.fail(field, start, f"{kind} length {length} exceeds the {left} bytes left")
        raw = self.data[self.pos : self.pos + length]
        self.pos += length
        return raw

    def array_count(self, field: str, min_element_size: int) -> int:
        """Read an array's int32 count and check the elements can fit before anyone allocates them."""
        start = self.pos
        count = self.int32(field)
        if count < 0:
            raise self.fail(field, start, f"invalid array count {count}")
        left = len(self.data) - self.pos
        if count * min_element_size > left:
            raise self.fail(
                field,
                start,
                f"array count {count} needs at least {count * min_element_size} bytes, {left} left",
            )
        return count

    def int32_array(self, field: str) -> tuple[int, ...]:
        count = self.array_count(field, 4)
        values = struct.unpack_from(f">{count}i", self.data, self.pos)
        self.pos += 4 * count
        return values

    def expect_end(self, field: str) -> None:
        if self.pos != len(self.data):
            raise self.fail(field, self.pos, f"{len(self.data) - self.pos} unexpected trailing bytes")


class Writer:
    """Accumulates encoded fields; ``getvalue()`` joins them once."""

    __slots__ = ("parts",)

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def int16(self, value: int) -> None:
        self.parts.append(_I16.pack(value))

    def int32(self, value: int) -> None:
        if not INT32_MIN <= value <= INT32_MAX:
            raise ValueError(f"int32 value out of range: {value}")
        self.parts.append(_I32.pack(value))

    def string(self, value: Optional[str], field: str) -> None:
        if value is None:
            self.parts.append(_I16.pack(-1))
            return
        raw = value.encode("utf-8")
        if len(raw) > INT16_MAX:
            raise ValueError(f"{field}: string of {len(raw)} UTF-8 bytes exceeds Kafka's {INT16_MAX}")
        self.parts.append(_I16.pack(len(raw)))
        self.parts.append(raw)

    def nullable_bytes(self, value: Optional[bytes]) -> None:
        if value is None:
            self.parts.append(_I32.pack(-1))
            return
        self.parts.append(_I32.pack(len(value)))
        self.parts.append(bytes(value))

    def int32_array(self, values: "list[int] | tuple[int, ...]") -> None:
        self.parts.append(_I32.pack(len(values)))
        if values:
            try:
                self.parts.append(struct.pack(f">{len(values)}i", *values))
            except struct.error:
                bad = next(v for v in values if not INT32_MIN <= v <= INT32_MAX)
                raise ValueError(f"partition id out of int32 range: {bad}") from None

    def getvalue(self) -> bytes:
        return b"".join(self.parts)
