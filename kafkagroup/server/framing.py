"""Kafka's framing: a 4-byte big-endian size, then a request header and body; responses likewise.

Request headers and all bodies are read and written by kio's generated codecs; this module only chooses the header
version (request header v2 for a flexible request, else v1; response header v1 for a flexible response,
else v0 -- and always v0 for ApiVersions, KIP-511, so a client that sent a version the server does not
know can still read the answer) and checks the frame (its size against ``socket.request.max.bytes``,
that the header and body parse from it, and that no non-nullable field was sent as null: kio's
readers accept a null length anywhere, Kafka's refuse it and close the connection).  Bytes left in the frame
after the body are ignored, for every API, as Kafka's broker ignores them (it reads the body from the frame's
buffer and never checks what remains; checked on a 4.4.0 broker with Metadata v1/v12, ApiVersions v3 and
Heartbeat v4).  librdkafka 2.x relies on it: its "all topics" Metadata request in flexible versions writes
the null topic array as one varint and leaves 3 reserved bytes behind it.  The size prefix and the first eight header bytes (api key,
version, correlation id: identical in every header version) are read with :mod:`struct`, because the
header version to decode with depends on them; so is the fixed response header (see
:func:`encode_response`).
"""
from __future__ import annotations

import io
import struct
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.serial import entity_reader, entity_writer

from kafkagroup.server.entities import null_field
from kafkagroup.server.errors import FrameError   # re-exported: its old home
from kafkagroup.server.versions import API_VERSIONS, is_supported, request_class, response_class

__all__ = ["EncodedBody", "FrameError", "FrameBuffer", "Request", "decode_request", "encode_response", "encode_response_pieces",
           "response_header", "Records"]

_SIZE = struct.Struct(">i")
_HEADER_START = struct.Struct(">hhi")
_read_header_v1 = entity_reader(RequestHeaderV1)
_read_header_v2 = entity_reader(RequestHeaderV2)


@dataclass(slots=True)
class Request:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: Any            # the kio request entity; None for an ApiVersions of a version above the range


class FrameBuffer:
    """Bytes received on a connection, cut into frames: ``feed`` what arrives, ``next_frame`` until None.

    A connection reads whatever the socket has (many pipelined requests at once) and handles the frames
    in order; the size is checked against ``socket.request.max.bytes`` as soon as its prefix is in, so an
    absurd length is refused before anything is buffered for it.
    """

    __slots__ = ("_data", "_max_bytes")

    def __init__(self, max_bytes: int) -> None:
        self._data = bytearray()
        self._max_bytes = max_bytes

    def feed(self, chunk: bytes) -> None:
        self._data += chunk

    def __len__(self) -> int:
        return len(self._data)

    def has_frame(self) -> bool:
        """A complete frame (or a size prefix :meth:`next_frame` refuses) is buffered."""
        if len(self._data) < 4:
            return False
        (size,) = _SIZE.unpack_from(self._data)
        return size < 0 or size > self._max_bytes or len(self._data) >= 4 + size

    def next_frame(self) -> bytes | None:
        """The next complete frame's payload (size prefix removed), or None until more bytes arrive."""
        data = self._data
        if len(data) < 4:
            return None
        (size,) = _SIZE.unpack_from(data)
        if size < 0 or size > self._max_bytes:
            raise FrameError(f"frame size {size} is outside 0..{self._max_bytes} (socket.request.max.bytes)")
        if len(data) < 4 + size:
            return None
        frame = bytes(data[4:4 + size])
        del data[:4 + size]
        return frame

    def check_end(self) -> None:
        """At end of stream: a partial frame left over is an error."""
        if len(self._data) >= 4:
            (size,) = _SIZE.unpack_from(self._data)
            raise FrameError(f"connection closed after {len(self._data) - 4} of a frame's {size} bytes")
        if self._data:
            raise FrameError(f"connection closed inside a frame's size prefix ({len(self._data)} of 4 bytes)")


def decode_request(frame: bytes) -> Request:
    """Parse one request frame (without its size prefix); raise :class:`FrameError` naming what is wrong."""
    if len(frame) < _HEADER_START.size:
        raise FrameError(f"frame of {len(frame)} bytes is shorter than a request header")
    api_key, version, correlation_id = _HEADER_START.unpack_from(frame)
    if not is_supported(api_key, version):
        if api_key == API_VERSIONS and version >= 0:
            # Answered (v0, UNSUPPORTED_VERSION) so that a newer client can retry lower; the header is read
            # as the newest version's (v2, with tagged fields), as Kafka does: a v1 header closes it there.
            header, _ = _parse(_read_header_v2, frame, 0, "request header v2")
            return Request(api_key, version, correlation_id, header.client_id, None)
        raise FrameError(f"unsupported API key {api_key} version {version} (correlation id {correlation_id})")
    cls = request_class(api_key, version)
    read_header = _read_header_v2 if cls.__flexible__ else _read_header_v1
    header, used = _parse(read_header, frame, 0, "request header")
    body, _ = _parse(entity_reader(cls), frame, used, f"{cls.__name__} v{version}")
    null = null_field(body)
    if null is not None:
        raise FrameError(f"{cls.__name__} v{version}: non-nullable field {null} is null")
    return Request(api_key, version, correlation_id, header.client_id, body)


def _parse(read: Any, frame: bytes, offset: int, what: str) -> tuple[Any, int]:
    try:
        return read(frame, offset)
    except Exception as e:   # kio raises several types for bad bytes; every one means "malformed"
        raise FrameError(f"malformed {what} at byte {offset}: {type(e).__name__}: {e}") from None


def encode_response(api_key: int, version: int, correlation_id: int, body: Any) -> bytes:
    """Size prefix + response header + ``body`` (a kio response entity of ``version``).

    The response header is packed here rather than by kio's writer: it is a fixed 4 bytes (v0: the
    correlation id) or 5 (v1: plus an empty tagged-field section, one zero varint), and kio's generic
    entity writer costs as much for it as for a heartbeat's body.  Bodies of :data:`_CONSTANT_BODY_APIS`
    (a pure function of a few hashable fields: Heartbeat's throttle time and error code) are encoded once
    per distinct value.
    """
    return b"".join(encode_response_pieces(api_key, version, correlation_id, body))


def encode_response_pieces(api_key: int, version: int, correlation_id: int, body: Any) -> list[bytes]:
    """:func:`encode_response` as pieces to write in order: the size prefix and header, then the body, whose
    :class:`Records` fields are their batches themselves, not copies (a Fetch answer of fetch.max.bytes
    costs no copy of its records)."""
    if api_key in _CONSTANT_BODY_APIS:
        pieces = [_constant_body(body)]
    else:
        out = _Pieces()
        entity_writer(type(body))(out, body)
        pieces = out.finish()
    size = sum(map(len, pieces))
    return [response_header(api_key, version, correlation_id, size), *pieces]


def response_header(api_key: int, version: int, correlation_id: int, body_size: int) -> bytes:
    """Size prefix + response header of a body of ``body_size`` bytes."""
    if api_key != API_VERSIONS and response_class(api_key, version).__flexible__:
        return _HEADER_V1.pack(body_size + 5, correlation_id, 0)
    return _HEADER_V0.pack(body_size + 4, correlation_id)


@dataclass(frozen=True)
class EncodedBody:
    """A handler's answer already encoded (the body's bytes as pieces, no header): sent as it is.
    ``cacheable`` False: not to be kept by the whole-answer Metadata cache (topics changed while it was built)."""
    pieces: list[bytes]
    cacheable: bool = True


class Records:
    """A records field made of whole batches held elsewhere (the log's), written without copying them:
    ``len()`` is their total size (kio writes the length prefix from it); :func:`encode_response_pieces`
    keeps the batches as pieces; ``bytes()`` joins them."""

    __slots__ = ("batches", "size")

    def __init__(self, batches: list[bytes]) -> None:
        self.batches = batches
        self.size = sum(map(len, batches))

    def __len__(self) -> int:
        return self.size

    def __bytes__(self) -> bytes:
        return b"".join(self.batches)

    def __eq__(self, other: object) -> bool:
        return bytes(self) == (bytes(other) if isinstance(other, (bytes, bytearray, memoryview, Records)) else other)

    __hash__ = None  # type: ignore[assignment]


class _Pieces:
    """kio's write target for :func:`encode_response_pieces`: small writes gathered, Records kept by reference."""

    __slots__ = ("_pieces", "_buffer")

    def __init__(self) -> None:
        self._pieces: list[bytes] = []
        self._buffer = bytearray()

    def write(self, data: Any) -> int:
        if type(data) is Records:
            if self._buffer:
                self._pieces.append(bytes(self._buffer))
                self._buffer.clear()
            self._pieces.extend(data.batches)
        else:
            self._buffer += data
        return len(data)

    def finish(self) -> list[bytes]:
        if self._buffer:
            self._pieces.append(bytes(self._buffer))
        return self._pieces


_HEADER_V0 = struct.Struct(">ii")      # size, correlation id
_HEADER_V1 = struct.Struct(">iiB")     # size, correlation id, tagged fields: none
_CONSTANT_BODY_APIS = frozenset({12})  # Heartbeat


def _body_bytes(body: Any) -> bytes:
    buf = io.BytesIO()
    entity_writer(type(body))(buf, body)
    return buf.getvalue()


@lru_cache(maxsize=256)
def _constant_body(body: Any) -> bytes:
    return _body_bytes(body)
