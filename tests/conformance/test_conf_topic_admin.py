"""Issue 20 items 1 and 2 on both servers: the topic admin APIs through confluent-kafka's AdminClient (create
with every refusal and validate_only, grow, describe configs, trim, delete), librdkafka's all-topics Metadata
request, a regex subscription that picks up a topic created later, and a running group rebalancing onto
partitions added by CreatePartitions -- what the clients observe, the same on Apache Kafka 4 and on `serve`.

Each scenario creates topics of its own (named after the scenario), so both servers start it from nothing.
Known differences kept out of the observations: ``retention.bytes`` (Kafka -1, unbounded; serve reports its
in-memory bound, ``log.retention.bytes``); ``min.insync.replicas``' source (a formatted KRaft node holds it as
a dynamic cluster default); ``cleanup.policy=compact`` is stored and described but not enforced by serve (Kafka
refuses records without a key on a compacted topic, serve appends them).
"""
from __future__ import annotations

import pytest

from conformance_support import describe_group, owned_by, wait_group, wait_settled
from server_support import produce, wait_until
from server_wire import body, nested

CONFIG_KEYS = ("cleanup.policy", "compression.type", "max.message.bytes", "retention.ms", "segment.bytes",
               "message.timestamp.type", "unclean.leader.election.enable")


def _admin(run):
    from confluent_kafka.admin import AdminClient
    return AdminClient({"bootstrap.servers": run.bootstrap})


def _outcomes(futures) -> dict:
    from confluent_kafka import KafkaException
    out = {}
    for key, future in futures.items():
        try:
            future.result(timeout=60)
            out[str(key)] = "ok"
        except KafkaException as e:          # the error's text is each server's own (as the harness treats it)
            out[str(key)] = e.args[0].name()
    return dict(sorted(out.items()))


def _topics(admin, prefix: str) -> dict:
    meta = admin.list_topics(timeout=30)
    return {name: len(t.partitions) for name, t in sorted(meta.topics.items()) if name.startswith(prefix)}


def _topics_when(admin, prefix: str, ready, what: str) -> dict:
    """The scenario's topics (name -> partitions) once ``ready(them)`` holds (metadata propagates on Kafka)."""
    last: dict = {}

    def check():
        nonlocal last
        last = _topics(admin, prefix)
        return last if ready(last) else None

    return wait_until(check, 30, lambda: f"{what} (listed: {last})")


def test_create_grow_describe_trim_delete(conformance):
    def scenario(run):
        from confluent_kafka import Producer, TopicPartition
        from confluent_kafka.admin import ConfigResource, NewPartitions, NewTopic, ResourceType

        p = run.group("")                       # the scenario's topic prefix
        admin = _admin(run)
        seen = {}
        seen["create"] = _outcomes(admin.create_topics([
            NewTopic(p + "a", 3, 1, config={"retention.ms": "100000", "compression.type": "gzip"}),
            NewTopic(p + "b", -1, -1), NewTopic(p + "zero", 0, 1), NewTopic(p + "rf3", 1, 3),
            NewTopic(p + "bad name", 1, 1), NewTopic(p + "cfg", 1, 1, config={"no.such.key": "1"}),
            NewTopic(p + "int", 1, 1, config={"segment.bytes": "x"}),
            NewTopic(p + "bool", 1, 1, config={"preallocate": "maybe"}),
            NewTopic(p + "type", 1, 1, config={"message.timestamp.type": "Sometime"})]))
        seen["create.too_many"] = _outcomes(admin.create_topics([NewTopic(p + "huge", 9_000, 1),
                                                                 NewTopic(p + "small", 1_001, 1)]))
        seen["again"] = _outcomes(admin.create_topics([NewTopic(p + "a", 3, 1)]))
        seen["validate_only"] = _outcomes(admin.create_topics([NewTopic(p + "c", 2, 1)], validate_only=True))
        seen["topics"] = _topics_when(admin, p, lambda t: len(t) == 2, f"both created topics to be listed ({seen})")
        seen["grow"] = _outcomes(admin.create_partitions([NewPartitions(p + "a", 5), NewPartitions(p + "none", 2)]))
        seen["grow.same"] = _outcomes(admin.create_partitions([NewPartitions(p + "a", 5)]))
        seen["grow.fewer"] = _outcomes(admin.create_partitions([NewPartitions(p + "a", 1)]))
        seen["grow.validate_only"] = _outcomes(admin.create_partitions([NewPartitions(p + "b", 9)],
                                                                       validate_only=True))
        seen["topics.grown"] = _topics_when(admin, p, lambda t: t.get(p + "a") == 5, "the grown topic")
        configs = {}
        for resource, future in admin.describe_configs([ConfigResource(ResourceType.TOPIC, p + "a"),
                                                        ConfigResource(ResourceType.TOPIC, p + "b")]).items():
            entries = future.result(timeout=60)
            configs[resource.name] = {k: [entries[k].value, entries[k].source, entries[k].is_default,
                                          entries[k].is_read_only,
                                          sorted([s.name, s.value, s.source] for s in entries[k].synonyms.values())]
                                      for k in CONFIG_KEYS}
            configs[resource.name + ".keys"] = sorted(entries)
        seen["configs"] = configs
        seen["describe.missing"] = _outcomes(admin.describe_configs([ConfigResource(ResourceType.TOPIC, p + "none")]))

        producer = Producer({"bootstrap.servers": run.bootstrap})
        for i in range(10):
            producer.produce(p + "a", value=b"%d" % i, partition=1)
        assert producer.flush(30) == 0
        from confluent_kafka import Consumer
        watcher = Consumer({"bootstrap.servers": run.bootstrap, "group.id": run.group("watch")})
        run.on_close(watcher.close)
        seen["watermarks"] = watcher.get_watermark_offsets(TopicPartition(p + "a", 1), timeout=30)
        seen["delete_records"] = _outcomes(admin.delete_records([TopicPartition(p + "a", 1, 6)]))
        seen["watermarks.after"] = watcher.get_watermark_offsets(TopicPartition(p + "a", 1), timeout=30)
        wire = run.wire()
        raw = wire.request(21, 2, body(21, 2, timeout=30000, topics=(nested(21, 2, "DeleteRecordsTopic", name=p + "a",
            partitions=tuple(nested(21, 2, "DeleteRecordsPartition", partition_index=i, offset=o)
                             for i, o in ((1, 3), (1, 11), (2, -1), (9, 0)))),)))
        seen["delete_records.raw"] = sorted([q.partition_index, q.low_watermark, q.error_code.value]
                                            for q in raw.topics[0].partitions)
        seen["delete"] = _outcomes(admin.delete_topics([p + "b", p + "none"], operation_timeout=30))
        seen["topics.after_delete"] = _topics_when(admin, p, lambda t: p + "b" not in t, "the deletion")
        return seen

    conformance(scenario)


def test_all_topics_metadata_and_a_regex_subscription(conformance):
    """librdkafka's all-topics Metadata request (a null array with bytes after it) on every confluent handle,
    and a confluent consumer on ``^<prefix>ev-.*`` reading a topic created after it joined."""
    def scenario(run):
        from confluent_kafka import Consumer, Producer
        from confluent_kafka.admin import NewTopic

        p = run.group("")
        admin = _admin(run)
        _outcomes(admin.create_topics([NewTopic(p + "ev-a", 2, 1)]))
        _topics_when(admin, p, lambda t: p + "ev-a" in t, "the first topic")
        seen = {"admin": _topics(admin, p)}
        producer = Producer({"bootstrap.servers": run.bootstrap})
        consumer = Consumer({"bootstrap.servers": run.bootstrap, "group.id": run.group()})
        run.on_close(consumer.close)
        seen["producer"] = {n: len(t.partitions) for n, t in producer.list_topics(timeout=30).topics.items()
                            if n.startswith(p)}
        seen["consumer"] = {n: len(t.partitions) for n, t in consumer.list_topics(timeout=30).topics.items()
                            if n.startswith(p)}
        regex = "^" + p.replace(".", "\\.") + "ev-.*"
        member = run.start("confluent", run.group("regex"), [regex], name="regex",
                           topic_metadata_refresh_interval_ms=1000, metadata_max_age_ms=1000)
        producer.produce(p + "ev-a", key=b"a", value=b"a", partition=0)
        assert producer.flush(30) == 0
        wait_until(lambda: any(r[3] == "a" for r in member.records()), 60, "the first topic's record")
        _outcomes(admin.create_topics([NewTopic(p + "ev-b", 1, 1)]))
        _topics_when(admin, p, lambda t: p + "ev-b" in t, "the second topic")
        producer.produce(p + "ev-b", key=b"b", value=b"b", partition=0)
        assert producer.flush(30) == 0
        wait_until(lambda: any(r[3] == "b" for r in member.records()), 60, "the later topic's record")
        seen["read"] = sorted([r[0], r[1], r[2], r[3]] for r in member.records())
        seen["owned"] = sorted([t, q] for t, q in member.owned)
        return seen

    conformance(scenario)


@pytest.mark.parametrize("client", ("java", "confluent"))
def test_partitions_added_rebalance_the_group(conformance, client):
    """Two static range members; CreatePartitions takes their topic from 2 to 4 partitions; the leader notices
    at its next metadata refresh and the group rebalances onto all four (range over static members is
    deterministic, so both servers must give the same assignment)."""
    def scenario(run):
        from confluent_kafka.admin import NewPartitions, NewTopic

        p = run.group("")
        topic = p + "grow"
        admin = _admin(run)
        _outcomes(admin.create_topics([NewTopic(topic, 2, 1)]))
        _topics_when(admin, p, lambda t: topic in t, "the topic")
        group = run.group(client)
        refresh = {"topic_metadata_refresh_interval_ms": 1000} if client == "confluent" else {}
        members = {name: run.start(client, group, [topic], name=name, group_instance_id=name, strategy="range",
                                   metadata_max_age_ms=1000, **refresh) for name in ("a", "b")}
        wait_settled(list(members.values()), {(topic, 0), (topic, 1)})
        before = owned_by(members)
        grown = _outcomes(admin.create_partitions([NewPartitions(topic, 4)]))
        wait_settled(list(members.values()), {(topic, q) for q in range(4)})
        wire = run.wire()
        return {"before": before, "grow": grown, "after": owned_by(members),
                "described": wait_group(wire, group, "Stable", members=2)}

    conformance(scenario, name=client)
