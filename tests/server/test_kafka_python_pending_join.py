"""kafka-python 3.0.12 strands a group leader whose poll gave up during a join round that its own assignment
then made look unneeded; the test driver's workaround (tests/server/consumer_driver.py:
_kafka_python_finish_pending_join) brings it back.

The defect, scripted step by step against kafkagroup's server (in-thread) with an in-process KafkaConsumer:
the server holds the consumer's topic Metadata, so that the leader's first assignment has no partitions;
then it holds the answer to the second round's SyncGroup (a round started by kafka-python's own metadata
check) while the consumer polls with a short timeout.  Once the answer is released, shipped kafka-python
never finishes that round: no assignment, heartbeats off.  This is how the real-client tests failed under
load (one kafka-python consumer holding nothing for 60 s while the coordinator, as Kafka's broker would,
expired its silent session).  The holds are released by the test, not by timers; polls are counted.
"""
from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from consumer_driver import _kafka_python_finish_pending_join
from server_support import HEARTBEAT_MS, SESSION_MS, thread_server, wait_until

kafka = pytest.importorskip("kafka")
from kafka import KafkaConsumer, TopicPartition  # noqa: E402
from kafka.coordinator.consumer import ConsumerCoordinator  # noqa: E402

from kafkagroup.server import handlers  # noqa: E402

METADATA, SYNC_GROUP = 3, 14
TOPIC = "t"
PARTITIONS = {TopicPartition(TOPIC, p) for p in range(3)}


class Hold:
    """Holds the server's answers to the requests `which` picks until `release()`; records what it answered."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, api_key: int, which: Callable[[Any], bool]) -> None:
        self.released = threading.Event()
        self.armed = threading.Event()          # for a `which` that holds only from some point on
        self.holding = threading.Event()       # an answer is being held now
        self.answered: list[Any] = []          # answers sent, in order
        handle = handlers.HANDLERS[api_key]

        def held(state: Any, request: Any, peer: str) -> Any:
            if not which(request.body):
                return handle(state, request, peer)

            async def later() -> Any:
                result = handle(state, request, peer)
                if inspect.isawaitable(result):
                    result = await result
                self.holding.set()
                while not self.released.is_set():
                    await asyncio.sleep(0.01)
                self.holding.clear()
                self.answered.append(result)
                return result
            return later()

        monkeypatch.setitem(handlers.HANDLERS, api_key, held)   # type: ignore[index]

    def release(self) -> None:
        self.released.set()


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Hold, Hold]]:
    """A server that holds topic Metadata answers until released, and SyncGroup answers, once armed
    (``second_sync.armed``), until released."""
    topic_metadata = Hold(monkeypatch, METADATA, lambda body: bool(getattr(body, "topics", None)))
    second_sync = Hold(monkeypatch, SYNC_GROUP, lambda body: second_sync.armed.is_set())
    server = thread_server({TOPIC: len(PARTITIONS)})
    try:
        yield server, topic_metadata, second_sync
    finally:
        topic_metadata.release()
        second_sync.release()
        server.stop()


def poll_until(consumer: KafkaConsumer, done: Callable[[], Any], what: str) -> None:
    """poll(timeout_ms=100), as the test driver does, until `done()` (deadline: a loaded machine)."""
    def step() -> Any:
        consumer.poll(timeout_ms=100)
        return done()
    wait_until(step, 60, what, interval=0)


def strand_the_leader(server: Any, topic_metadata: Hold, second_sync: Hold, group: str) -> KafkaConsumer:
    """Drive a lone consumer (its group's leader) into the stranded state; returns it, its round just
    answered by the server."""
    consumer = KafkaConsumer(bootstrap_servers=server.bootstrap, group_id=group, enable_auto_commit=False,
                             session_timeout_ms=SESSION_MS, heartbeat_interval_ms=HEARTBEAT_MS)
    consumer.subscribe([TOPIC])
    coordinator = consumer._coordinator   # private: the defect lives there
    # a first generation: the leader assigns without the topic's partitions (its Metadata is held); nothing
    # starts another round until that metadata arrives
    poll_until(consumer, lambda: coordinator.generation_if_stable() is not None, "a first generation")
    assert consumer.assignment() == set()
    second_sync.armed.set()
    topic_metadata.release()
    # kafka-python's metadata check starts generation 2; its leader SyncGroup answer is held past the polls
    poll_until(consumer, second_sync.holding.is_set, "the second round's SyncGroup to be held")
    for _ in range(3):
        consumer.poll(timeout_ms=100)     # each gives up with the round in flight
    assert consumer.assignment() == set()
    second_sync.release()
    wait_until(lambda: second_sync.answered and coordinator._join_task is not None
               and coordinator._join_task.is_done, 30, "the round's SyncGroup answer to reach the consumer")
    return consumer


def test_shipped_kafka_python_strands_the_leader(scripted: tuple[Any, Hold, Hold],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The defect itself (if this starts failing, kafka-python fixed it and the driver's workaround can go):
    after the answered round, polls never finish it; the member stays rebalancing, heartbeats off."""
    server, topic_metadata, second_sync = scripted
    current = ConsumerCoordinator.need_rejoin
    monkeypatch.setattr(ConsumerCoordinator, "need_rejoin", getattr(current, "shipped", current))  # as shipped
    consumer = strand_the_leader(server, topic_metadata, second_sync, "strand-shipped")
    try:
        coordinator = consumer._coordinator
        for _ in range(50):
            consumer.poll(timeout_ms=10)
        fixed = "kafka-python finished the round: its defect is fixed, drop _kafka_python_finish_pending_join"
        assert consumer.assignment() == set(), fixed
        assert not coordinator.need_rejoin() and coordinator.generation_if_stable() is None, fixed
        assert not coordinator._heartbeat_enabled, fixed
    finally:
        consumer.close(autocommit=False)


def test_driver_workaround_finishes_the_round(scripted: tuple[Any, Hold, Hold],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """With the driver's workaround the next polls finish the round: the leader holds every partition, its
    heartbeats resume (the coordinator restarts its session) and the group is Stable with it."""
    server, topic_metadata, second_sync = scripted
    monkeypatch.setattr(ConsumerCoordinator, "need_rejoin", ConsumerCoordinator.need_rejoin)  # restored after
    _kafka_python_finish_pending_join()
    group = "strand-worked-around"
    consumer = strand_the_leader(server, topic_metadata, second_sync, group)
    try:
        poll_until(consumer, lambda: consumer.assignment() == PARTITIONS, "the leader to hold every partition")
        coordinator = consumer._coordinator
        assert coordinator.generation_if_stable() is not None and coordinator._heartbeat_enabled
        member = coordinator.generation_if_stable().member_id

        def heartbeats_seen() -> int:
            return server.call(lambda: server.server.coordinator.group(group).members[member].session_deadline)

        first = heartbeats_seen()
        poll_until(consumer, lambda: heartbeats_seen() != first, "a heartbeat to restart the member's session")
        state = server.call(lambda: (server.server.coordinator.group(group).state.name,
                                     sorted(server.server.coordinator.group(group).members)))
        assert state == ("STABLE", [member])
    finally:
        consumer.close(autocommit=False)
