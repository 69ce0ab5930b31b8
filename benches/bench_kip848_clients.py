"""KIP-848 consumer groups over the wire: time to a stable assignment, `kafkagroup serve` next to Apache Kafka
4.4.0 (tests/conformance/kafka_broker.py, `make kafka4`) and franz-go's kfake (benches/kfake_peer.py, built from
the Go module proxy on first use), every server started by this module and measured in the same run.

1. Real clients: N confluent-kafka consumers (librdkafka, group.protocol=consumer, the broker's default
   5 s heartbeat interval; one polling thread each) subscribe to a 100-partition topic; the figure is the time
   from the subscribe() calls to every partition held exactly once with counts balanced (max - min <= 1), as
   the consumers' own on_assign / on_revoke callbacks report it.  10 and 50 consumers.
2. 1,000 members, then one joins: a raw-protocol driver (ConsumerGroupHeartbeat v1 over 25 connections in
   one asyncio loop; each member heartbeats once per the interval the server answers and at once after an
   assignment changed, as librdkafka paces it) brings 1,000 members on a 2,000-partition topic to a
   balanced assignment; the figure is one more member's join to the group balanced again (2,000 partitions
   held once by 1,001 members, max - min <= 1), as the members' own answers show it.  Before each join the
   group has been balanced for one heartbeat interval, so every member is on its regular cadence, and then
   for a seeded random part of one more (the same draws for every server).

Nothing here asserts on time. Rows: "serve vs that peer", median seconds and ratio. Long: run by hand
(`.venv/bin/python -m pytest benches/bench_kip848_clients.py`), never in `make test`.
"""
from __future__ import annotations

import asyncio
import os
import random
import statistics
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "server"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "conformance"))
from server_support import ServeProcess, wait_until  # noqa: E402
from server_wire import KafkaWire, body, encode_request, nested  # noqa: E402
from kafka_broker import KAFKA4_VERSION, KafkaBroker, kafka4_lib  # noqa: E402
from kfake_peer import KfakeProcess, KfakeUnavailable, kfake_binary  # noqa: E402
from bench_serve import SettleRounds as ServeSettleRounds, ThreadedGroup, _create_topics  # noqa: E402

from kio.index import load_response_schema  # noqa: E402
from kio.schema.response_header.v1.header import ResponseHeader  # noqa: E402
from kio.serial import entity_reader  # noqa: E402

TOPIC, PARTITIONS = "bench848", 100
BIG, BIG_PARTITIONS, BIG_MEMBERS, CONNECTIONS = "big848", 2_000, 1_000, 25
HEARTBEAT_INTERVAL_S = 5.0                 # group.consumer.heartbeat.interval.ms, every server's default
JOIN_ROUNDS = 5
TOPICS = {TOPIC: PARTITIONS, BIG: BIG_PARTITIONS}
KAFKA, KFAKE = f"Apache Kafka {KAFKA4_VERSION}", "franz-go kfake"
PEERS = (KAFKA, KFAKE)
# serve's defaults (heartbeat interval 5 s, as the peers'); KAFKAGROUP_KIP848_SERVE_CONFIG="k=v,k=v" measures
# others, e.g. "group.consumer.reconciling.heartbeat.interval.ms=500" (serve's opt-in faster pacing)
SERVE_CONFIG: dict[str, Any] = dict(kv.split("=", 1) for kv in
                                    os.environ.get("KAFKAGROUP_KIP848_SERVE_CONFIG", "").split(",") if kv)


class Server:
    def __init__(self, name: str, bootstrap: str, stop: Callable[[], Any]) -> None:
        self.name, self.bootstrap, self.stop = name, bootstrap, stop


def _start(name: str) -> Server | str:
    """One server with the bench topics; the reason as a string when it cannot run here."""
    try:
        if name == KAFKA:
            if not kafka4_lib().is_dir():
                return "no jars (make kafka4)"
            broker = KafkaBroker({"group.initial.rebalance.delay.ms": 0})
            try:
                _create_topics(broker.bootstrap, TOPICS)
            except BaseException:
                broker.kill()
                raise
            return Server(name, broker.bootstrap, broker.kill)
        k = KfakeProcess(kfake_binary(), TOPICS)
        return Server(name, k.bootstrap, k.kill)
    except (KfakeUnavailable, RuntimeError, OSError, AssertionError) as e:
        return f"fails: {str(e)[:60]}"


@pytest.fixture(scope="module")
def servers():
    serve = ServeProcess(TOPICS, config=SERVE_CONFIG)
    started: dict[str, Server | str] = {"serve": Server("serve", serve.bootstrap, serve.terminate)}
    try:
        for name in PEERS:
            started[name] = _start(name)
        yield started
    finally:
        for s in started.values():
            if isinstance(s, Server):
                s.stop()


def balanced(held: list[set[int]], partitions: int) -> bool:
    counts = [len(h) for h in held]
    return (sum(counts) == partitions and len(set().union(*held)) == partitions
            and max(counts) - min(counts) <= 1)


# --- 1. confluent consumers ------------------------------------------------------------------------------
class ConsumerGroup848(ThreadedGroup):
    """bench_serve's N threaded confluent-kafka consumers, with group.protocol=consumer (the broker's heartbeat
    interval and session; no client-side assignor), settled when every partition is held once and balanced."""

    topic = TOPIC

    def __init__(self, bootstrap: str, group: str, n: int) -> None:
        super().__init__(bootstrap, group, n, "")

    def consumer_config(self, bootstrap: str, group: str, strategy: str) -> dict[str, Any]:
        return {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer"}

    def settled(self) -> bool:
        with self._lock:
            return balanced(self.owned, PARTITIONS)


class SettleRounds(ServeSettleRounds):
    """bench_serve's rounds (a fresh group each round, the timed call waits until it has settled), with a
    group of consumer-protocol members."""

    def __init__(self, bootstrap: str, n: int, deadline_s: float = 60) -> None:
        super().__init__(bootstrap, n, "consumer protocol", deadline_s)

    def setup(self) -> tuple[tuple, dict]:
        self.close()
        self.group = ConsumerGroup848(self.bootstrap, f"kip848-{self.n}-{time.monotonic_ns()}", self.n)
        self.group.subscribe_all()
        return (), {}


@pytest.mark.parametrize("n", [10, 50])
def test_confluent_consumers_subscribe_to_stable(benchmark, report, servers, n):
    ours = SettleRounds(servers["serve"].bootstrap, n)
    try:
        benchmark.pedantic(ours.wait, setup=ours.setup, rounds=3, iterations=1)
    finally:
        ours.close()
    for name in PEERS:
        peer = servers[name]
        value: float | str = peer if isinstance(peer, str) else SettleRounds(peer.bootstrap, n).time_rounds(3)
        report.add(f"KIP-848: {n} confluent consumers (group.protocol=consumer) subscribe -> stable", benchmark,
                   name, value * 1000 if isinstance(value, float) else value, 60,
                   note="100 partitions, heartbeat interval 5 s")


# --- 2. 1,000 raw members, one joins -----------------------------------------------------------------------
HB = 68
RETRIABLE = (14, 15, 16)     # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
_RESPONSE = load_response_schema(HB, 1)


class Connection:
    """One connection; Kafka answers in order per connection, so answers resolve futures first in, first out."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.waiting: list[asyncio.Future] = []
        self.correlation = 0
        self.task = asyncio.get_running_loop().create_task(self._read())

    async def _read(self) -> None:
        while True:
            size = struct.unpack(">i", await self.reader.readexactly(4))[0]
            frame = await self.reader.readexactly(size)
            _, used = entity_reader(ResponseHeader)(frame, 0)
            entity, _ = entity_reader(_RESPONSE)(frame, used)
            self.waiting.pop(0).set_result(entity)

    async def heartbeat(self, **fields: Any) -> Any:
        self.correlation += 1
        future = asyncio.get_running_loop().create_future()
        self.waiting.append(future)
        d = dict(instance_id=None, rack_id=None, rebalance_timeout=-1, subscribed_topic_names=None,
                 subscribed_topic_regex=None, server_assignor=None, topic_partitions=None)
        self.writer.write(encode_request(HB, 1, self.correlation, body(HB, 1, **{**d, **fields}), "bench848"))
        return await future


class RawMember:
    """A KIP-848 member paced as librdkafka paces it; `held` = the partitions of the last assignment."""

    def __init__(self, conn: Connection, group: str, member_id: str) -> None:
        self.conn, self.group, self.member_id = conn, group, member_id
        self.epoch, self.held, self.owned_field = 0, set(), ()
        self.stopped = False

    async def run(self) -> None:
        first = True
        while not self.stopped:
            if first:
                r = await self.conn.heartbeat(group_id=self.group, member_id=self.member_id, member_epoch=0,
                                              rebalance_timeout=60_000, subscribed_topic_names=(BIG,),
                                              topic_partitions=())
                first = False
            else:
                r = await self.conn.heartbeat(group_id=self.group, member_id=self.member_id,
                                              member_epoch=self.epoch, topic_partitions=self.owned_field)
            if r.error_code in RETRIABLE:           # the coordinator is loading or moving: as a client, retry
                first = self.epoch == 0
                await asyncio.sleep(0.1)
                continue
            assert r.error_code == 0, (self.member_id, r.error_code, r.error_message)
            self.epoch = r.member_epoch
            if r.assignment is not None:
                new = {p for tp in r.assignment.topic_partitions for p in tp.partitions}
                changed = new != self.held
                self.held = new
                self.owned_field = tuple(nested(HB, 1, "TopicPartitions", topic_id=tp.topic_id,
                                                partitions=tuple(tp.partitions))
                                         for tp in r.assignment.topic_partitions)
                if changed:
                    continue                     # acknowledge at once (librdkafka's expedited heartbeat)
            await asyncio.sleep(r.heartbeat_interval.total_seconds())

    async def leave(self) -> None:
        self.stopped = True
        await self.conn.heartbeat(group_id=self.group, member_id=self.member_id, member_epoch=-1)


class BigGroup:
    """BIG_MEMBERS raw members of one group on one server, on a loop in a background thread."""

    def __init__(self, bootstrap: str) -> None:
        self.host, port = bootstrap.rsplit(":", 1)
        self.port = int(port)
        self.group = f"big848-{time.monotonic_ns()}"
        with KafkaWire((self.host, self.port)) as wire:     # Kafka creates __consumer_offsets on first use
            wait_until(lambda: int(wire.request(10, 4, body(10, 4, key_type=0, coordinator_keys=(self.group,)))
                                   .coordinators[0].error_code) == 0, 60, "the group coordinator")
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.conns: list[Connection] = self._call(self._connect())
        self.members: list[RawMember] = []
        self.tasks: list[asyncio.Future] = []
        self.joined = 0

    def _call(self, coro: Any, timeout: float = 120) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    async def _connect(self) -> list[Connection]:
        out = []
        for _ in range(CONNECTIONS):
            reader, writer = await asyncio.open_connection(self.host, self.port)
            out.append(Connection(reader, writer))
        return out

    def add(self, count: int) -> None:
        async def start() -> None:
            for _ in range(count):
                m = RawMember(self.conns[self.joined % CONNECTIONS], self.group, f"m-{self.joined:05d}-{self.group}")
                self.joined += 1
                self.members.append(m)
                self.tasks.append(asyncio.ensure_future(m.run()))
        self._call(start())

    def failed(self) -> str | None:
        for t in self.tasks:
            if t.done() and t.exception() is not None:
                return repr(t.exception())[:200]
        return None

    def balanced(self) -> bool:
        error = self.failed()
        if error:
            raise AssertionError(error)
        return balanced([m.held for m in self.members], BIG_PARTITIONS)

    def close(self) -> None:
        async def stop() -> None:
            for m in self.members:
                m.stopped = True
            await asyncio.gather(*(m.leave() for m in self.members), return_exceptions=True)
            for t in self.tasks:
                t.cancel()
            for c in self.conns:
                c.task.cancel()
                c.writer.close()
        try:
            self._call(stop(), 60)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)


class JoinRounds:
    """A 1,000-member group brought to balance (untimed); each round adds one member and times the group
    back to balance."""

    def __init__(self, bootstrap: str) -> None:
        self.rng = random.Random(848)
        self.group = BigGroup(bootstrap)
        self.group.add(BIG_MEMBERS)
        wait_until(self.group.balanced, 180, "1,000 members to balance", interval=0.05)

    def setup(self) -> tuple[tuple, dict]:
        wait_until(self.group.balanced, 60, "the group to balance before a join", interval=0.01)
        # one more interval: every member's last answer is then a Stable group's (serve answers a shorter
        # interval while a group reconciles), so the join meets members on their regular 5 s cadence; then a
        # seeded random part of an interval, the same draws for every server: the members' heartbeats come in
        # bunches (they joined together), and a join right after a bunch waits a whole interval for it
        time.sleep(HEARTBEAT_INTERVAL_S + self.rng.uniform(0, HEARTBEAT_INTERVAL_S))
        self.group.add(1)
        return (), {}

    def wait(self) -> None:
        wait_until(self.group.balanced, 60, "the group to balance after a join", interval=0.002)

    def median_s(self, rounds: int) -> float | str:
        times = []
        try:
            for _ in range(rounds):
                self.setup()
                start = time.perf_counter()
                self.wait()
                times.append(time.perf_counter() - start)
        except AssertionError as e:
            return f"fails: {str(e)[:60]}"
        return statistics.median(times)


def test_one_join_into_1000_members_to_stable(benchmark, report, servers):
    ours = JoinRounds(servers["serve"].bootstrap)
    try:
        benchmark.pedantic(ours.wait, setup=ours.setup, rounds=JOIN_ROUNDS, iterations=1)
    finally:
        ours.group.close()
    for name in PEERS:
        peer = servers[name]
        value: float | str
        if isinstance(peer, str):
            value = peer
        else:
            try:
                rounds = JoinRounds(peer.bootstrap)
            except AssertionError as e:
                value = f"fails: {str(e)[-90:]}"
            else:
                try:
                    value = rounds.median_s(JOIN_ROUNDS)
                finally:
                    rounds.group.close()
        report.add("KIP-848: one member joins a 1,000-member group -> stable", benchmark, name,
                   value * 1000 if isinstance(value, float) else value, 60,
                   note="raw ConsumerGroupHeartbeat v1, 2,000 partitions, librdkafka's pacing")
