"""KIP-848 against `kafkagroup serve` with real clients nobody here wrote: confluent-kafka (librdkafka 2.x) and
Apache Kafka's Java consumer 4.4 (build/kafka4/lib, `make kafka4`), both with group.protocol=consumer.

Scenarios: join, scale out and in, crash (SIGKILL, noticed by the session timeout), static restart within the
session (no partition moves), a regex subscription picking up a topic created later, group.remote.assignor
uniform and range, Java and librdkafka members in one group.  Assertions are on what the clients report
(assignment callbacks, records, commits) and on ConsumerGroupDescribe over the wire; an independent tracker
replays every member's callbacks in arrival order and checks that no partition ever has two owners.

The server runs with a 500 ms heartbeat interval and a 6 s session (group.consumer.*) so that a scenario takes
seconds; the clients' own session settings do not apply under KIP-848.

KAFKAGROUP_KIP848_BROKER=host:port runs the same scenarios against a running Kafka 4 broker instead (one node,
group.consumer.heartbeat.interval.ms / min = 500, group.consumer.session.timeout.ms / min = 6000,
auto.create.topics.enable=true): topics and groups then get unique names per test.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
import uuid
from typing import Any, Iterable, Iterator

import pytest

from server_support import (REPO, ConsumerProcess, Consumers, JAVA_SOURCE, never_two_owners, produce, thread_server,
                            wait_until)
from server_wire import KafkaWire, body

from tests.coordinator.consumer_helpers import needs_server_assignors

pytestmark = [] if os.environ.get("KAFKAGROUP_KIP848_BROKER") else needs_server_assignors

KAFKA4_LIB = REPO / "build" / "kafka4" / "lib"
CONFIG = {"group.consumer.heartbeat.interval.ms": 500, "group.consumer.min.heartbeat.interval.ms": 500,
          "group.consumer.session.timeout.ms": 6000, "group.consumer.min.session.timeout.ms": 6000}
SETTLE_S = 60
CONSUMER = {"group_protocol": "consumer"}
TP = tuple[str, int]


@pytest.fixture(scope="module")
def java4_classpath(tmp_path_factory: pytest.TempPathFactory) -> str:
    if shutil.which("javac") is None:
        pytest.fail("javac not found: `make java` installs a JDK 17")
    if not any(p.name.startswith("kafka-clients-4.") for p in KAFKA4_LIB.glob("*.jar")):
        pytest.fail(f"no kafka-clients 4.x jar in {KAFKA4_LIB}: run `make kafka4`")
    out = tmp_path_factory.mktemp("java4-driver")
    classpath = f"{out}:{KAFKA4_LIB}/*"
    subprocess.run(["javac", "-nowarn", "-d", str(out), "-cp", classpath, str(JAVA_SOURCE)], check=True,
                   capture_output=True, text=True)
    return classpath


@pytest.fixture
def consumers(java4_classpath: str) -> Iterator[Consumers]:
    launcher = Consumers(java4_classpath)
    try:
        yield launcher
    finally:
        launcher.stop_all()


BROKER = os.environ.get("KAFKAGROUP_KIP848_BROKER")


class Peer:
    """Where a scenario runs: `kafkagroup serve` in a thread, or the broker of KAFKAGROUP_KIP848_BROKER (topic
    and group names prefixed per test there, so that tests do not see each other)."""

    def __init__(self, topics: dict[str, int]) -> None:
        self.prefix = "" if BROKER is None else f"k{uuid.uuid4().hex[:8]}-"
        self.group = f"{self.prefix}g"
        self.thread = None
        if BROKER is None:
            self.thread = thread_server(topics, CONFIG)
            self.bootstrap, self.address = self.thread.bootstrap, self.thread.address
        else:
            from confluent_kafka.admin import AdminClient, NewTopic
            host, _, port = BROKER.rpartition(":")
            self.bootstrap, self.address = BROKER, (host, int(port))
            admin = AdminClient({"bootstrap.servers": BROKER})
            for future in admin.create_topics([NewTopic(self.t(n), c, 1) for n, c in topics.items()]).values():
                future.result(30)

    def t(self, name: str) -> str:
        return self.prefix + name

    def partitions(self, topics: dict[str, int]) -> set[TP]:
        return {(self.t(t), p) for t, n in topics.items() for p in range(n)}

    def stop(self) -> None:
        if self.thread is not None:
            self.thread.stop()


@pytest.fixture
def server() -> Iterator[Any]:
    made: list[Peer] = []

    def start(topics: dict[str, int]) -> Peer:
        made.append(Peer(topics))
        return made[-1]

    yield start
    for s in made:
        s.stop()


# --- what the clients saw ---------------------------------------------------------------------------


def settled(members: list[ConsumerProcess], expected: set[TP]) -> bool:
    owned = [m.owned for m in members]
    return all(owned) and sum(map(len, owned)) == len(expected) and set().union(*owned) == expected


def wait_settled(members: list[ConsumerProcess], expected: set[TP], timeout: float = SETTLE_S) -> None:
    wait_until(lambda: settled(members, expected), timeout,
               lambda: f"{[m.name for m in members]} to share {len(expected)} partitions (now "
                       f"{[sorted(m.owned) for m in members]}; {[m._context() for m in members]})")


def keys_read(members: Iterable[ConsumerProcess]) -> set[str]:
    return {r[3] for m in members for r in m.records()}


def describe(server: Any, group: str) -> Any:
    with KafkaWire(server.address) as wire:
        return wire.request(69, 1, body(69, 1, group_ids=(group,), include_authorized_operations=False)).groups[0]


def start(consumers: Consumers, client: str, server: Peer, topics: list[str], name: str,
          **settings: Any) -> ConsumerProcess:
    return consumers.start(client, server.bootstrap, server.group, topics, name=name, **CONSUMER, **settings)


# --- scenarios ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("client", ["confluent", "java"])
def test_join_scale_out_and_in_every_record_read_once_per_owner(consumers, server, client):
    topics = {"t": 6}
    srv = server(topics)
    every = srv.partitions(topics)
    produce(srv.bootstrap, srv.t("t"), [f"k{i}" for i in range(60)])
    a = start(consumers, client, srv, [srv.t("t")], "a")
    wait_settled([a], every)
    wait_until(lambda: len(keys_read([a])) == 60, SETTLE_S, lambda: f"a to read 60 keys ({len(keys_read([a]))})")
    b = start(consumers, client, srv, [srv.t("t")], "b")
    c = start(consumers, client, srv, [srv.t("t")], "c")
    wait_settled([a, b, c], every)
    d = wait_until(lambda: (lambda d: d if d.group_state == "Stable" else None)(describe(srv, srv.group)), SETTLE_S,
                   "the group to describe as Stable")
    assert (len(d.members), d.assignor_name) == (3, "uniform")
    assert sorted(len(m.assignment.topic_partitions[0].partitions) for m in d.members) == [2, 2, 2]
    produce(srv.bootstrap, srv.t("t"), [f"n{i}" for i in range(30)])
    wait_until(lambda: {f"n{i}" for i in range(30)} <= keys_read([a, b, c]), SETTLE_S, "the new keys to be read")
    c.stop()                                                   # close: leave with epoch -1
    wait_settled([a, b], every)
    assert len(describe(srv, srv.group).members) == 2
    never_two_owners([a, b, c])
    committed = {}
    for m in (a, b, c):
        committed.update(m.committed())
    assert all(o >= 1 for o in committed.values())


@pytest.mark.parametrize("client", ["confluent", "java"])
def test_crash_is_noticed_by_the_session_timeout(consumers, server, client):
    topics = {"t": 4}
    srv = server(topics)
    a = start(consumers, client, srv, [srv.t("t")], "a")
    b = start(consumers, client, srv, [srv.t("t")], "b")
    wait_settled([a, b], srv.partitions(topics))
    killed_at = time.monotonic()
    b.kill()
    wait_until(lambda: a.owned == srv.partitions(topics), SETTLE_S, lambda: f"a to take everything ({a.owned})")
    assert [m.member_id for m in describe(srv, srv.group).members] == [a.of("assigned")[-1]["member"]]
    never_two_owners([a, b], killed={"b": killed_at})


@pytest.mark.parametrize("client", ["confluent", "java"])
def test_static_member_restarts_within_the_session_and_nothing_moves(consumers, server, client):
    topics = {"t": 4}
    srv = server(topics)
    a = start(consumers, client, srv, [srv.t("t")], "a", group_instance_id="inst-a")
    b = start(consumers, client, srv, [srv.t("t")], "b", group_instance_id="inst-b")
    wait_settled([a, b], srv.partitions(topics))
    held_by_a, epoch = a.owned, describe(srv, srv.group).group_epoch
    mark_b = b.mark()
    # the replacement's process is started beforehand (hold): a JVM start on a loaded machine can outlast the
    # 6 s session, and a restart *beyond* the session is another scenario
    a2 = start(consumers, client, srv, [srv.t("t")], "a2", group_instance_id="inst-a", hold="true")
    a2.wait_event("holding", SETTLE_S)
    a.stop()                                                   # close: a static member leaves with epoch -2
    a2.go()
    wait_until(lambda: a2.owned == held_by_a, SETTLE_S, lambda: f"a2 to get {held_by_a} back ({a2.owned})")
    assert describe(srv, srv.group).group_epoch == epoch       # no rebalance
    assert not b.since(mark_b, "revoked") and not b.since(mark_b, "assigned")
    assert {m.instance_id for m in describe(srv, srv.group).members} == {"inst-a", "inst-b"}


def test_regex_subscription_picks_up_a_topic_created_later(consumers, server):
    srv = server({"orders-eu": 2, "other": 1})
    a = start(consumers, "confluent", srv, [f"^{srv.t('orders-')}.*"], "a")
    wait_settled([a], {(srv.t("orders-eu"), 0), (srv.t("orders-eu"), 1)})
    produce(srv.bootstrap, srv.t("orders-us"), ["u1", "u2", "u3"])   # auto-creates the topic
    wait_until(lambda: (srv.t("orders-us"), 0) in a.owned, SETTLE_S, lambda: f"a to get orders-us ({a.owned})")
    wait_until(lambda: {"u1", "u2", "u3"} <= keys_read([a]), SETTLE_S, "the orders-us records to be read")
    assert (srv.t("other"), 0) not in a.owned
    # as librdkafka sends it
    assert describe(srv, srv.group).members[0].subscribed_topic_regex == f"(^{srv.t('orders-')}.*)"


@pytest.mark.parametrize("client", ["confluent", "java"])
def test_remote_assignor_range_co_partitions(consumers, server, client):
    topics = {"t": 4, "u": 4}
    srv = server(topics)
    ms = [start(consumers, client, srv, [srv.t("t"), srv.t("u")], f"m{i}", group_remote_assignor="range")
          for i in range(2)]
    wait_settled(ms, srv.partitions(topics))
    assert describe(srv, srv.group).assignor_name == "range"
    for m in ms:
        assert {p for t, p in m.owned if t == srv.t("t")} == {p for t, p in m.owned if t == srv.t("u")}


def test_java_and_librdkafka_members_share_one_consumer_group(consumers, server):
    topics = {"t": 6}
    srv = server(topics)
    produce(srv.bootstrap, srv.t("t"), [f"k{i}" for i in range(40)])
    j = start(consumers, "java", srv, [srv.t("t")], "java")
    c = start(consumers, "confluent", srv, [srv.t("t")], "confluent")
    wait_settled([j, c], srv.partitions(topics))
    wait_until(lambda: len(keys_read([j, c])) >= 40, SETTLE_S, "every key to be read")
    assert {f"k{i}" for i in range(40)} <= keys_read([j, c])
    never_two_owners([j, c])


@pytest.mark.parametrize("client", ["confluent", "java"])
def test_partitions_added_are_assigned(consumers, server, client):
    from confluent_kafka.admin import AdminClient, NewPartitions
    srv = server({"t": 2})
    a = start(consumers, client, srv, [srv.t("t")], "a", topic_metadata_refresh_interval_ms=1000,
              metadata_max_age_ms=1000)
    b = start(consumers, client, srv, [srv.t("t")], "b", topic_metadata_refresh_interval_ms=1000,
              metadata_max_age_ms=1000)
    wait_settled([a, b], srv.partitions({"t": 2}))
    admin = AdminClient({"bootstrap.servers": srv.bootstrap})
    for future in admin.create_partitions([NewPartitions(srv.t("t"), 4)]).values():
        future.result(30)
    wait_settled([a, b], srv.partitions({"t": 4}))
    never_two_owners([a, b])
