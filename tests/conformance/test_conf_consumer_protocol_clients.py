"""KIP-848 consumer groups with real clients (confluent-kafka, group.protocol=consumer), Apache Kafka 4 vs
`kafkagroup serve`, on what the harness's first file (test_conf_consumer_protocol.py) leaves out: a stale
member's commit refused, a crash found by the session timeout, a static member back after its session, a
subscription changed on a running consumer, one group whose members name different group.remote.assignor
values, a regex subscription picking up a topic created later, and partitions added to a subscribed topic.
The Java 4.4 consumer runs the fencing, crash, static, regex and partitions scenarios too (its driver has no
way to change a running subscription).

Observations: each client's callbacks, commits and commit errors, the group's committed offsets
(OffsetFetch) and ConsumerGroupDescribe.  Both servers run with a 500 ms heartbeat interval and a 6 s session
(conftest.GROUP_CONFIG), so the scenarios that wait for a session to expire take ~10 s a server and are in
the extended set (`make conformance`).

Not compared, on purpose (as in test_conf_consumer_protocol.py): which member ids get which partitions (the
ids are random, and uniform's tie-breaks follow them) -- partition counts are compared instead -- and the
group's state right after a change (Kafka batches target computations, group.consumer.assignment.interval.ms).
"""
from __future__ import annotations

import re
from typing import Any

import pytest

from conformance_support import callbacks, fetch_offsets, settled, wait_settled
from server_support import wait_until
from test_conf_consumer_protocol import CONSUMER, cg_describe, shape, wait_stable

from tests.coordinator.consumer_helpers import needs_server_assignors

pytestmark = needs_server_assignors
# produced to by test_a_stale_members_commit_is_refused only, one topic per client: a new group reads a topic
# from its start (auto.offset.reset=earliest), so one run's records must not be in another's way
FENCE_TOPICS = {"confluent": "c.kip848-fence", "java": "c.kip848-fence-java"}


def produce_to(bootstrap: str, topic: str, partition: int, keys: list[str]) -> int:
    """One record per key into one partition (server_support's produce picks partitions by key hash); returns
    the offset after the last one (the topic is shared by the scenarios of one session)."""
    from confluent_kafka import Producer

    errors: list[str] = []
    offsets: list[int] = []

    def delivered(err: Any, msg: Any) -> None:
        errors.append(str(err)) if err else offsets.append(msg.offset())

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for key in keys:
        producer.produce(topic, key=key.encode(), value=key.encode(), partition=partition, on_delivery=delivered)
    assert producer.flush(30) == 0 and not errors, f"produce to {topic}[{partition}]: {errors[:3]}"
    return max(offsets) + 1


def error_name(text: str) -> str:
    """The error a client reports: confluent-kafka's KafkaError{code=UNKNOWN_MEMBER_ID,...} -> its code, the
    Java client's exception -> its class name."""
    found = re.search(r"code=([A-Z_]+)", text) or re.search(r"\.(\w+(?:Exception|Error))\b", text)
    return found.group(1) if found else text


def counted(c) -> list[list[Any]]:
    """A consumer's callbacks as [event, how many partitions] (which ones follow the random member ids),
    leaving out the empty ones: whether a client calls back with nothing (a reconciliation step that changes
    nothing for it, e.g. a new member waiting for another to revoke) follows heartbeat timing."""
    return [[event, len(partitions)] for event, partitions in callbacks(c) if partitions]


@pytest.mark.conformance_extended
@pytest.mark.parametrize("client", ["confluent", "java"])
def test_a_stale_members_commit_is_refused(conformance, client):
    """a reads a record and is frozen (SIGSTOP) before it commits it; its session expires, b takes its
    partition, reads on and commits further.  Thawed, a commits what it read with its old member id and epoch:
    the coordinator refuses it and the group's committed offset stays b's.  a then rejoins.

    What the clients report, on both servers: librdkafka fails the commit with UNKNOWN_MEMBER_ID (the member
    was removed when its session expired); the Java consumer throws CommitFailedException.  Thawed, each
    client's commit and its first heartbeat leave at about the same moment; the commit is refused whichever
    answer arrives first (an unknown member, or a client that already knows it was fenced)."""
    def scenario(run):
        g, w, topic = run.group(), run.wire(), FENCE_TOPICS[client]
        every = {(topic, 0), (topic, 1)}
        a = run.start(client, g, [topic], name="a", commit_delay_ms=3000, **CONSUMER)
        wait_settled([a], every)
        b = run.start(client, g, [topic], name="b", **CONSUMER)
        wait_settled([a, b], every)
        ((_, pa),) = a.owned
        offsets_before = fetch_offsets(w, g)["offsets"] == []
        mark = a.mark()
        produce_to(run.bootstrap, topic, pa, ["first"])
        a.wait_event("records", 30, after=mark)
        a.freeze()                                  # within commit.delay.ms: read, not committed
        run.on_close(a.thaw)
        wait_until(lambda: b.owned == every, 60, lambda: f"b to take a's partition ({b.owned})")
        alone = shape(wait_stable(w, g, 1), False)
        end = produce_to(run.bootstrap, topic, pa, ["second", "third"])
        wait_until(lambda: b.committed().get((topic, pa)) == end, 30,
                   lambda: f"b to commit offset {end} on {pa} ({b.committed()})")
        mark = a.mark()
        a.thaw()
        wait_until(lambda: a.since(mark, "commit_failed") or a.since(mark, "committed"), 30, "a's commit")
        wait_until(lambda: settled([a, b], every), 60, "a to rejoin and get a partition")
        committed = fetch_offsets(w, g)
        return {"before": offsets_before, "alone": alone,
                "a's commit": [[e["event"], error_name(e.get("error", ""))] for e in a.since(mark)
                               if e["event"] in ("committed", "commit_failed")],
                "a read": sorted(r[3] for r in a.records()), "a saw": counted(a),
                "committed": {"error_code": committed["error_code"],
                              "b's": [[t, p == pa, o == b.committed().get((t, p)), e]
                                      for t, p, o, _, e in committed["offsets"]]},
                "after": shape(wait_stable(w, g, 2), False)}

    conformance(scenario)


@pytest.mark.conformance_extended
@pytest.mark.parametrize("client", ["confluent", "java"])
def test_a_crash_is_found_by_the_session_timeout(conformance, client):
    """b is SIGKILLed (no leave): its partitions stay its own until its session expires, then go to a."""
    def scenario(run):
        g, w, topic = run.group(), run.wire(), "c.three"
        every = {(topic, p) for p in range(3)}
        a = run.start(client, g, [topic], name="a", **CONSUMER)
        wait_settled([a], every)
        b = run.start(client, g, [topic], name="b", **CONSUMER)
        wait_settled([a, b], every)
        held_by_b, mark = sorted(b.owned), a.mark()
        b.kill()
        still_two = len(cg_describe(w, g).members)     # no leave: b is a member until its session expires
        wait_until(lambda: a.owned == every, 60, lambda: f"a to take b's partitions ({a.owned})")
        return {"b held": len(held_by_b), "members right after the kill": still_two,
                "a saw": [[e["event"], sorted(map(tuple, e["partitions"])) == held_by_b] for e in a.since(mark)
                          if e["event"] in ("assigned", "revoked", "lost")],
                "after": shape(wait_stable(w, g, 1))}

    conformance(scenario)


@pytest.mark.conformance_extended
@pytest.mark.parametrize("client", ["confluent", "java"])
def test_a_static_member_back_after_its_session_gets_a_fair_share(conformance, client):
    """A static member that closes leaves with epoch -2 and keeps its partitions for the session; gone longer,
    it is removed and b takes everything.  Back with the same group.instance.id it is a new member and gets
    a fair share again (taken from b by revocation first)."""
    def scenario(run):
        g, w, topic = run.group(), run.wire(), "c.three"
        every = {(topic, p) for p in range(3)}
        a = run.start(client, g, [topic], name="a", group_instance_id="a", **CONSUMER)
        wait_settled([a], every)
        b = run.start(client, g, [topic], name="b", group_instance_id="b", **CONSUMER)
        wait_settled([a, b], every)
        before = shape(wait_stable(w, g, 2), False)
        a.stop()
        kept = [m.member_epoch for m in cg_describe(w, g).members if m.instance_id == "a"]
        wait_until(lambda: b.owned == every, 60, lambda: f"b to take a's partitions once a's session expired "
                                                            f"({b.owned})")
        alone = shape(wait_stable(w, g, 1))
        mark = b.mark()
        a2 = run.start(client, g, [topic], name="a2", group_instance_id="a", **CONSUMER)
        wait_settled([a2, b], every)
        return {"before": before, "a left with": kept, "alone": alone,
                "b saw": [[e["event"], len(e["partitions"])] for e in b.since(mark)     # as counted()
                          if e["event"] in ("assigned", "revoked", "lost") and e["partitions"]],
                "a2 holds": len(a2.owned), "after": shape(wait_stable(w, g, 2), False)}

    conformance(scenario)


def test_a_subscription_change_moves_partitions(conformance):
    """a and b share c.three; a subscribes to c.three and c.two instead: c.two goes to a (only a subscribes),
    c.three's partitions are rebalanced around it; then a subscribes to c.two alone and c.three goes to b."""
    def scenario(run):
        g, w = run.group(), run.wire()
        three = {("c.three", p) for p in range(3)}
        two = {("c.two", p) for p in range(2)}
        a = run.start("confluent", g, ["c.three"], name="a", **CONSUMER)
        wait_settled([a], three)
        b = run.start("confluent", g, ["c.three"], name="b", **CONSUMER)
        wait_settled([a, b], three)
        out: dict[str, Any] = {"before": shape(wait_stable(w, g, 2), False)}
        a.send("subscribe c.three,c.two")
        wait_until(lambda: two <= a.owned and settled([a, b], three | two), 60,
                   lambda: f"a to get c.two ({a.owned}, b {b.owned})")
        d = wait_stable(w, g, 2)
        out["both topics"] = {"describe": shape(d, False),
                              "a subscribes": sorted(next(m.subscribed_topic_names for m in d.members
                                                          if len(m.subscribed_topic_names) == 2)),
                              "b holds c.two": sorted(p for t, p in b.owned if t == "c.two")}
        a.send("subscribe c.two")
        wait_until(lambda: a.owned == two and b.owned == three, 60,
                   lambda: f"c.three to move to b ({a.owned}, b {b.owned})")
        out["c.two only"] = {"describe": shape(wait_stable(w, g, 2)), "a saw": counted(a)[-2:]}
        return out

    conformance(scenario)


def test_members_naming_different_remote_assignors(conformance):
    """group.remote.assignor is chosen per group by its members: the name most of them give (uniform when
    none).  One uniform and two range members: range, co-partitioning c.three and c.two; the range members
    gone, the uniform one alone: uniform."""
    def scenario(run):
        g, w = run.group(), run.wire()
        topics = ["c.three", "c.two"]
        every = {(t, p) for t, n in (("c.three", 3), ("c.two", 2)) for p in range(n)}
        u = run.start("confluent", g, topics, name="u", group_remote_assignor="uniform", **CONSUMER)
        wait_settled([u], every)
        alone = cg_describe(w, g).assignor_name
        rs = [run.start("confluent", g, topics, name=f"r{i}", group_remote_assignor="range", **CONSUMER)
              for i in range(2)]
        wait_settled([u, *rs], every)
        d = wait_stable(w, g, 3)
        out = {"u alone": alone, "range majority": shape(d),
               "co-partitioned": sorted(sorted(p for t, p in m.owned if t == "c.two")
                                        == sorted(p for t, p in m.owned if t == "c.three" and p < 2)
                                        for m in (u, *rs))}
        for r in rs:
            r.stop()
        wait_until(lambda: u.owned == every, 60, lambda: f"u to hold everything again ({u.owned})")
        out["u alone again"] = shape(wait_stable(w, g, 1))
        return out

    conformance(scenario)


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})     # kept alive until the futures are done
    for future in admin.create_topics([NewTopic(name, partitions, 1)], operation_timeout=30).values():
        future.result(60)


def topic_prefix(group: str) -> str:
    """Topic names of one scenario's own (equal on both servers): its group name, dots made dashes."""
    return group.replace(".", "-")


@pytest.mark.parametrize("client", ["confluent", pytest.param("java", marks=pytest.mark.conformance_extended)])
def test_a_regex_subscription_picks_up_a_topic_created_later(conformance, client):
    """A member subscribed by regular expression (the coordinator resolves it, RE2/J full match) gets the
    partitions of a topic created after it joined, and reads its records; a second member with the same
    regex shares both topics.  Kafka resolves regexes asynchronously: the wait is until the client holds
    the new topic, not a fixed time."""
    def scenario(run):
        g, w = run.group(), run.wire()
        prefix = topic_prefix(g)
        eu, us = f"{prefix}-eu", f"{prefix}-us"
        create_topic(run.bootstrap, eu, 2)
        pattern = f"^{prefix}-.*"
        a = run.start(client, g, [pattern], name="a", topic_metadata_refresh_interval_ms=1000,
                      metadata_max_age_ms=1000, **CONSUMER)
        wait_settled([a], {(eu, 0), (eu, 1)})
        first = cg_describe(w, g)
        create_topic(run.bootstrap, us, 1)
        produce_to(run.bootstrap, us, 0, ["u1", "u2", "u3"])
        wait_until(lambda: (us, 0) in a.owned, 60, lambda: f"a to get {us} ({a.owned})")
        wait_until(lambda: {"u1", "u2", "u3"} <= {r[3] for r in a.records()}, 30, f"a to read {us}")
        b = run.start(client, g, [pattern], name="b", topic_metadata_refresh_interval_ms=1000,
                      metadata_max_age_ms=1000, **CONSUMER)
        wait_settled([a, b], {(eu, 0), (eu, 1), (us, 0)})
        return {"regex as described": first.members[0].subscribed_topic_regex == (
                    f"({pattern})" if client == "confluent" else pattern),
                "first": shape(first), "a read": sorted(r[3] for r in a.records()),
                "shared": shape(wait_stable(w, g, 2), False)}

    conformance(scenario)


@pytest.mark.parametrize("client", ["confluent", "java"])
def test_partitions_added_are_assigned(conformance, client):
    """Partitions added to a subscribed topic (CreatePartitions) bump the group epoch: the new ones are
    assigned, the old ones stay where they were."""
    from confluent_kafka.admin import AdminClient, NewPartitions

    def scenario(run):
        g, w = run.group(), run.wire()
        topic = f"{topic_prefix(g)}-t"
        create_topic(run.bootstrap, topic, 2)
        ms = [run.start(client, g, [topic], name=n, topic_metadata_refresh_interval_ms=1000,
                        metadata_max_age_ms=1000, **CONSUMER) for n in ("a", "b")]
        wait_settled(ms, {(topic, p) for p in range(2)})
        held = [sorted(m.owned) for m in ms]
        admin = AdminClient({"bootstrap.servers": run.bootstrap})
        for future in admin.create_partitions([NewPartitions(topic, 4)]).values():
            future.result(30)
        wait_settled(ms, {(topic, p) for p in range(4)})
        return {"kept their partitions": [set(h) <= m.owned for h, m in zip(held, ms)],
                "after": shape(wait_stable(w, g, 2), False),
                "saw": sorted(counted(m) for m in ms)}

    conformance(scenario)
