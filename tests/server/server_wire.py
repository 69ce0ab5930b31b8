"""Test helpers: a server on a background loop, and a blocking Kafka client that speaks through kio.

The client writes request headers and reads response headers itself (header v2/v1 by the request's
flexibility, response header v1 except for ApiVersions), so the server's own framing module is checked
against an independent statement of the rule rather than against itself.
"""
from __future__ import annotations

import asyncio
import datetime
import io
import socket
import struct
import sys
import threading
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.schema.request_header.v1.header import RequestHeader as RequestHeaderV1
from kio.schema.request_header.v2.header import RequestHeader as RequestHeaderV2
from kio.schema.response_header.v0.header import ResponseHeader as ResponseHeaderV0
from kio.schema.response_header.v1.header import ResponseHeader as ResponseHeaderV1
from kio.serial import entity_reader, entity_writer
from kafka.record.default_records import DefaultRecordBatchBuilder

from kafkagroup.server import serve


class ServerThread:
    """``serve(...)`` on its own event loop in a daemon thread; ``stop()`` leaves the context cleanly."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("listen", "127.0.0.1:0")
        self._kwargs = kwargs
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.server: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("server did not start")
        if self._error:
            raise self._error

    def _run(self) -> None:
        async def main() -> None:
            self.loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()
            try:
                async with serve(**self._kwargs) as server:
                    self.server = server
                    self._ready.set()
                    await self._stop.wait()
            except BaseException as e:   # reported to the test thread
                self._error = e
                self._ready.set()

        asyncio.run(main())

    @property
    def address(self) -> tuple[str, int]:
        return self.server.host, self.server.port

    @property
    def bootstrap(self) -> str:
        return self.server.bootstrap

    def call(self, fn: Any, *args: Any) -> Any:
        """Run ``fn(*args)`` on the server's loop thread and return its result (for inspecting state)."""
        assert self.loop is not None
        async def run() -> Any:
            return fn(*args)
        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(10)

    def stop(self) -> None:
        if self.loop is not None and self._stop is not None and self._thread.is_alive():
            self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(30)
        assert not self._thread.is_alive(), "server did not stop"


def _build(cls: type, fields: dict[str, Any]) -> Any:
    present = cls.__dataclass_fields__
    kwargs = {}
    for name, value in fields.items():
        if name not in present:
            continue                      # a field this version does not have
        if present[name].metadata.get("kafka_type", "").startswith("timedelta") and isinstance(value, int):
            value = datetime.timedelta(milliseconds=value)
        kwargs[name] = value
    return cls(**kwargs)


def body(api_key: int, version: int, **fields: Any) -> Any:
    """The kio request entity of that version, from a superset of fields (those it lacks are dropped;
    timedelta fields in milliseconds)."""
    return _build(load_request_schema(api_key, version), fields)


def nested(api_key: int, version: int, class_name: str, /, **fields: Any) -> Any:
    """A nested request entity of that version by class name (e.g. ``JoinGroupRequestProtocol``)."""
    module = sys.modules[load_request_schema(api_key, version).__module__]
    return _build(getattr(module, class_name), fields)


def encode_request(api_key: int, version: int, correlation_id: int, entity: Any, client_id: str | None = "test") -> bytes:
    buf = io.BytesIO()
    flexible = type(entity).__flexible__
    header_cls = RequestHeaderV2 if flexible else RequestHeaderV1
    entity_writer(header_cls)(buf, header_cls(request_api_key=api_key, request_api_version=version,
                                              correlation_id=correlation_id, client_id=client_id))
    entity_writer(type(entity))(buf, entity)
    payload = buf.getvalue()
    return struct.pack(">i", len(payload)) + payload


class KafkaWire:
    """A blocking connection sending kio-encoded requests; ``request`` returns the decoded response."""

    def __init__(self, address: tuple[str, int], timeout: float = 15.0) -> None:
        self.sock = socket.create_connection(address, timeout=timeout)
        self.correlation_id = 0
        self.pending: list[tuple[int, int, int]] = []

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "KafkaWire":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, api_key: int, version: int, entity: Any) -> int:
        self.correlation_id += 1
        self.sock.sendall(encode_request(api_key, version, self.correlation_id, entity))
        self.pending.append((api_key, version, self.correlation_id))
        return self.correlation_id

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def read_frame(self) -> bytes:
        size = struct.unpack(">i", self._exactly(4))[0]
        return self._exactly(size)

    def _exactly(self, n: int) -> bytes:
        chunks = []
        while n:
            chunk = self.sock.recv(n)
            if not chunk:
                raise ConnectionError("closed by the server")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def receive(self, response_version: int | None = None) -> Any:
        api_key, version, correlation_id = self.pending.pop(0)
        frame = self.read_frame()
        response_cls = load_response_schema(api_key, version if response_version is None else response_version)
        header_cls = ResponseHeaderV1 if response_cls.__flexible__ and api_key != 18 else ResponseHeaderV0
        header, used = entity_reader(header_cls)(frame, 0)
        assert header.correlation_id == correlation_id, (header.correlation_id, correlation_id)
        entity, body_used = entity_reader(response_cls)(frame, used)
        assert used + body_used == len(frame), f"{response_cls.__name__}: {len(frame) - used - body_used} bytes left"
        return entity

    def request(self, api_key: int, version: int, entity: Any) -> Any:
        self.send(api_key, version, entity)
        return self.receive()

    def closed_by_server(self, timeout: float = 10.0) -> bool:
        """True once the server has closed this connection (EOF or reset), reading past any answers."""
        self.sock.settimeout(timeout)
        try:
            while self.sock.recv(65536):
                pass
            return True
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False


def record_batch(values: list[bytes], *, timestamp: int = 1_700_000_000_000, producer_id: int = -1,
                 base_sequence: int = 0) -> bytes:
    """A magic-v2 record batch as a producer sends it (kafka-python's builder; base offset 0)."""
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False,
                                        producer_id=producer_id, producer_epoch=0 if producer_id >= 0 else -1,
                                        base_sequence=base_sequence if producer_id >= 0 else -1, batch_size=1 << 24)
    for i, value in enumerate(values):
        builder.append(i, timestamp=timestamp + i, key=None, value=value, headers=[])
    return bytes(builder.build())


def batch_of_size(size: int) -> bytes:
    """One uncompressed record batch of exactly ``size`` bytes (one record, its value padded)."""
    overhead = len(record_batch([b""]))
    for pad in range(size - overhead - 8, size - overhead + 1):
        raw = record_batch([b"x" * pad])
        if len(raw) == size:
            return raw
    raise AssertionError(f"no batch of {size} bytes")


def produce_raw(wire: KafkaWire, topic: str, records: bytes) -> Any:
    """One Produce v9 request (acks=-1) of ``records`` to partition 0 of ``topic``: that partition's response."""
    r = wire.request(0, 9, body(0, 9, transactional_id=None, acks=-1, timeout=30000, topic_data=(
        nested(0, 9, "TopicProduceData", name=topic, partition_data=(
            nested(0, 9, "PartitionProduceData", index=0, records=records),)),)))
    return r.responses[0].partition_responses[0]
