"""`kafkagroup serve --store` killed (SIGKILL) and restarted on the same store and port under a running consumer
group (KIP-848) of confluent-kafka consumers with group.protocol=consumer: the group is read back with its
members, epochs and assignments (issue 22), the consumers' next heartbeats are accepted with their epochs,
and nothing moves -- no revoke, no lost, no new assignment callback, the same group epoch -- past the session
timeout, while the consumers read what is produced to the restarted server.

On today's main the restarted server knew no member: every heartbeat got UNKNOWN_MEMBER_ID, librdkafka lost
its partitions and rejoined (a ``lost`` callback, a new assignment, a new group epoch)."""
from __future__ import annotations

import time
from typing import Iterator

import pytest

from server_support import ServeProcess, produce, wait_until
from server_wire import KafkaWire, body

from tests.coordinator.consumer_helpers import needs_server_assignors

pytestmark = needs_server_assignors

CONFIG = {"group.consumer.heartbeat.interval.ms": 500, "group.consumer.min.heartbeat.interval.ms": 500,
          "group.consumer.session.timeout.ms": 6000, "group.consumer.min.session.timeout.ms": 6000}
SESSION_S = 6.0
SETTLE_S = 60


@pytest.fixture
def servers() -> Iterator[list[ServeProcess]]:
    started: list[ServeProcess] = []
    try:
        yield started
    finally:
        for s in started:
            s.kill()


def describe(bootstrap: str, group: str):
    host, _, port = bootstrap.rpartition(":")
    with KafkaWire((host, int(port))) as wire:
        return wire.request(69, 1, body(69, 1, group_ids=(group,), include_authorized_operations=False)).groups[0]


def members_view(described) -> dict[str, tuple[int, list]]:
    return {m.member_id: (m.member_epoch, sorted((t.topic_name, tuple(sorted(t.partitions))) for t in m.assignment.topic_partitions))
            for m in described.members}


def test_serve_killed_and_restarted_keeps_the_consumer_group_and_nothing_moves(consumers, servers, tmp_path):
    topics = {"t": 6}
    every = {("t", p) for p in range(6)}
    store = str(tmp_path / "groups.db")
    servers.append(ServeProcess(topics, store=store, config=CONFIG))
    first = servers[-1]
    members = [consumers.start("confluent", first.bootstrap, "g", ["t"], name=n, group_protocol="consumer")
               for n in ("a", "b", "c")]
    wait_until(lambda: all(m.owned for m in members) and set().union(*(m.owned for m in members)) == every
               and sum(len(m.owned) for m in members) == 6, SETTLE_S,
               lambda: f"the consumers to share 6 partitions ({[sorted(m.owned) for m in members]})")
    wait_until(lambda: describe(first.bootstrap, "g").group_state == "Stable", SETTLE_S, "a Stable group")
    before = describe(first.bootstrap, "g")
    held = {m.name: m.owned for m in members}
    marks = {m.name: m.mark() for m in members}

    first.kill()
    servers.append(ServeProcess(topics, store=store, port=first.port, config=CONFIG))
    again = servers[-1]
    restarted = time.monotonic()
    loaded = describe(again.bootstrap, "g")
    assert (loaded.group_state, loaded.group_epoch) == ("Stable", before.group_epoch)
    assert members_view(loaded) == members_view(before)

    # the consumers read what is produced to the restarted server (its log is in memory: empty at start)
    keys = [f"k{i:03d}" for i in range(60)]
    landed = produce(again.bootstrap, "t", keys)
    wait_until(lambda: {r[3] for m in members for r in m.records()} >= set(keys), SETTLE_S,
               "the consumers to read the keys produced after the restart")
    for m in members:
        for topic, partition, _, key in m.records():
            assert (topic, partition) in held[m.name], f"{m.name} read {key} of a partition it did not hold"
    assert {landed[k] for k in keys} <= every
    # past the session timeout counted from the load: members that had not heartbeated would be fenced now
    wait_until(lambda: time.monotonic() - restarted > SESSION_S + 2, SESSION_S + 10, "the session to pass")
    after = describe(again.bootstrap, "g")
    assert (after.group_state, after.group_epoch) == ("Stable", before.group_epoch)
    assert members_view(after) == members_view(before)
    for m in members:
        assert m.owned == held[m.name]
        assert not m.since(marks[m.name], "revoked") and not m.since(marks[m.name], "lost")
        assert not m.since(marks[m.name], "assigned"), f"{m.name}: {m.since(marks[m.name], 'assigned')}"
    assert again.terminate() == 0, again.stderr_tail[-10:]
