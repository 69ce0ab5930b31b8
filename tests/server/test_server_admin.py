"""The topic admin APIs through real admin clients (issue 20, item 2): confluent-kafka's AdminClient and
kafka-python's KafkaAdminClient create, grow, describe, trim and delete topics on ``serve`` and see what a
one-node Apache Kafka 4.4.0 broker answers them -- the error codes and messages below were read from one
(CreateTopics: TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, INVALID_CONFIG,
POLICY_VIOLATION, validate_only; CreatePartitions: INVALID_PARTITIONS both ways, UNKNOWN_TOPIC_OR_PARTITION;
DescribeConfigs: values, sources and synonyms; DeleteRecords: low watermarks, OFFSET_OUT_OF_RANGE).
Before this issue ``serve`` did not implement any of them: every client failed with an unsupported API.
"""
from __future__ import annotations

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, ConfigSource, NewPartitions, NewTopic, ResourceType

from server_wire import KafkaWire, ServerThread, body, nested

NONE, OFFSET_OUT_OF_RANGE, UNKNOWN = 0, 1, 3


@pytest.fixture
def server():
    s = ServerThread(topics={"existing": 2}, config={"group.initial.rebalance.delay.ms": 0,
                                                     "message.max.bytes": 2_000_000})
    yield s
    s.stop()


def outcomes(futures) -> dict[str, object]:
    """name -> None (success) or (error name, code, message), as the AdminClient's futures report them."""
    out: dict[str, object] = {}
    for key, future in futures.items():
        try:
            future.result(timeout=30)
            out[str(key)] = None
        except KafkaException as e:
            error = e.args[0]
            out[str(key)] = (error.name(), error.code(), error.str())
    return out


def test_confluent_admin_creates_topics_as_kafka_answers(server):
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    got = outcomes(admin.create_topics([
        NewTopic("orders", 3, 1, config={"max.message.bytes": "2000", "cleanup.policy": "compact"}),
        NewTopic("defaults", -1, -1),
        NewTopic("existing", 1, 1),
        NewTopic("none", 0, 1),
        NewTopic("rf2", 1, 2),
        NewTopic("bad name", 1, 1),
        NewTopic("unknown-config", 1, 1, config={"foo.bar": "1"}),
        NewTopic("bad-int", 1, 1, config={"max.message.bytes": "abc"}),
        NewTopic("bad-choice", 1, 1, config={"cleanup.policy": "nope"}),
        NewTopic("huge", 10_001, 1),
    ]))
    assert got["orders"] is None and got["defaults"] is None
    assert got["existing"] == ("TOPIC_ALREADY_EXISTS", 36, "Topic 'existing' already exists.")
    assert got["none"] == ("INVALID_PARTITIONS", 37, "Number of partitions was set to an invalid non-positive value.")
    assert got["rf2"][:2] == ("INVALID_REPLICATION_FACTOR", 38) and "only 1 broker(s)" in got["rf2"][2]
    assert got["bad name"][:2] == ("TOPIC_EXCEPTION", 17) and "'bad name'" in got["bad name"][2]
    assert got["unknown-config"] == ("INVALID_CONFIG", 40, "Unknown topic config name: foo.bar")
    assert got["bad-int"] == ("INVALID_CONFIG", 40,
                              "Invalid value abc for configuration max.message.bytes: Not a number of type INT")
    assert got["bad-choice"] == ("INVALID_CONFIG", 40, "Invalid value nope for configuration cleanup.policy: "
                                                       "String must be one of: compact, delete")
    assert got["huge"] == ("POLICY_VIOLATION", 44, "Excessively large number of partitions per request.")
    listed = {name: len(t.partitions) for name, t in admin.list_topics(timeout=10).topics.items()}
    assert listed == {"existing": 2, "orders": 3, "defaults": 1}

    assert outcomes(admin.create_topics([NewTopic("checked", 5, 1)], validate_only=True)) == {"checked": None}
    assert "checked" not in admin.list_topics(timeout=10).topics          # validate_only changes nothing


def test_confluent_admin_grows_and_deletes_topics(server):
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    assert outcomes(admin.create_partitions([NewPartitions("existing", 4), NewPartitions("missing", 3)])) == {
        "existing": None, "missing": ("UNKNOWN_TOPIC_OR_PART", 3, "Broker: Unknown topic or partition")}
    assert outcomes(admin.create_partitions([NewPartitions("existing", 4)])) == {
        "existing": ("INVALID_PARTITIONS", 37, "Topic already has 4 partition(s).")}
    assert outcomes(admin.create_partitions([NewPartitions("existing", 2)])) == {
        "existing": ("INVALID_PARTITIONS", 37, "The topic existing currently has 4 partition(s); 2 would not be an "
                                               "increase.")}
    assert outcomes(admin.create_partitions([NewPartitions("existing", 9)], validate_only=True)) == {"existing": None}
    assert len(admin.list_topics(timeout=10).topics["existing"].partitions) == 4

    def topic_id(name: str) -> str:
        return str(admin.describe_topics(TopicCollection([name]))[name].result(timeout=30).topic_id)

    before = topic_id("existing")
    assert outcomes(admin.delete_topics(["existing", "missing"])) == {
        "existing": None, "missing": ("UNKNOWN_TOPIC_OR_PART", 3, "Broker: Unknown topic or partition")}
    assert "existing" not in admin.list_topics(timeout=10).topics
    assert outcomes(admin.create_topics([NewTopic("existing", 1, 1)])) == {"existing": None}
    assert len(admin.list_topics(timeout=10).topics["existing"].partitions) == 1
    assert topic_id("existing") != before                              # a new topic, as in Kafka


def test_confluent_admin_describes_topic_and_broker_configs(server):
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    outcomes(admin.create_topics([NewTopic("tuned", 1, 1, config={"retention.ms": "1000"})]))
    (topic,) = admin.describe_configs([ConfigResource(ResourceType.TOPIC, "tuned")]).values()
    entries = topic.result(timeout=30)
    assert len(entries) == 37                                  # every key a Kafka 4.4.0 topic lists
    retention = entries["retention.ms"]
    assert (retention.value, retention.source, retention.is_default) == (
        "1000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value, False)
    size = entries["max.message.bytes"]                         # serve was given message.max.bytes
    assert (size.value, size.source) == ("2000000", ConfigSource.STATIC_BROKER_CONFIG.value)
    assert [(s.name, s.value, s.source) for s in size.synonyms.values()] == [
        ("message.max.bytes", "2000000", ConfigSource.STATIC_BROKER_CONFIG.value)]
    policy = entries["cleanup.policy"]
    assert (policy.value, policy.source, policy.is_default) == ("delete", ConfigSource.DEFAULT_CONFIG.value, True)

    (broker,) = admin.describe_configs([ConfigResource(ResourceType.BROKER, "0")]).values()
    node = broker.result(timeout=30)
    assert node["message.max.bytes"].value == "2000000"
    assert node["message.max.bytes"].source == ConfigSource.STATIC_BROKER_CONFIG.value
    assert (node["num.partitions"].value, node["num.partitions"].source) == ("1", ConfigSource.DEFAULT_CONFIG.value)
    assert node["group.initial.rebalance.delay.ms"].value == "0"
    assert node["auto.create.topics.enable"].value == "true"

    (missing,) = admin.describe_configs([ConfigResource(ResourceType.TOPIC, "missing")]).values()
    with pytest.raises(KafkaException) as e:
        missing.result(timeout=30)
    assert e.value.args[0].code() == UNKNOWN


def test_delete_records_moves_the_start_of_the_log(server):
    producer = Producer({"bootstrap.servers": server.bootstrap})
    for i in range(10):
        producer.produce("existing", value=b"v%d" % i, partition=0)
    assert producer.flush(30) == 0
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    (done,) = admin.delete_records([TopicPartition("existing", 0, 4)]).values()
    assert done.result(timeout=30).low_watermark == 4
    with KafkaWire(server.address) as wire:                    # the answers a client library hides
        r = wire.request(21, 2, body(21, 2, timeout=5000, topics=(nested(21, 2, "DeleteRecordsTopic", name="existing",
            partitions=tuple(nested(21, 2, "DeleteRecordsPartition", partition_index=p, offset=o)
                             for p, o in ((0, 2), (0, 11), (1, -1), (7, 0)))),)))
        assert [(p.partition_index, p.low_watermark, p.error_code) for p in r.topics[0].partitions] == [
            (0, 4, NONE), (0, -1, OFFSET_OUT_OF_RANGE), (1, 0, NONE), (7, -1, UNKNOWN)]
    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "after-delete",
                         "auto.offset.reset": "earliest"})
    try:
        low, high = consumer.get_watermark_offsets(TopicPartition("existing", 0), timeout=10)
        assert (low, high) == (4, 10)
        consumer.assign([TopicPartition("existing", 0)])
        first = None
        while first is None:
            message = consumer.poll(10)
            assert message is not None and message.error() is None
            first = message
        assert (first.offset(), first.value()) == (4, b"v4")   # the deleted records are gone
    finally:
        consumer.close()


def test_kafka_python_admin_client_round_trip(server):
    from kafka.admin import ConfigResource as KPConfigResource, ConfigResourceType, KafkaAdminClient
    from kafka.admin import NewPartitions as KPNewPartitions, NewTopic as KPNewTopic
    from kafka.errors import InvalidPartitionsError, TopicAlreadyExistsError, UnknownTopicOrPartitionError

    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap, request_timeout_ms=10000)
    try:
        admin.create_topics([KPNewTopic("kp", 2, 1, topic_configs={"max.message.bytes": "5000"})])
        with pytest.raises(TopicAlreadyExistsError):
            admin.create_topics([KPNewTopic("kp", 2, 1)])
        admin.create_partitions({"kp": KPNewPartitions(3)})
        with pytest.raises(InvalidPartitionsError, match="Topic already has 3 partition"):
            admin.create_partitions({"kp": KPNewPartitions(3)})
        assert len(admin.describe_topics(["kp"])[0]["partitions"]) == 3
        modified = admin.describe_configs([KPConfigResource(ConfigResourceType.TOPIC, "kp")])
        assert {k: v["value"] for k, v in modified["topic"]["kp"].items()} == {"max.message.bytes": "5000"}
        everything = admin.describe_configs([KPConfigResource(ConfigResourceType.TOPIC, "kp")], config_filter="all")
        assert len(everything["topic"]["kp"]) == 37 and everything["topic"]["kp"]["cleanup.policy"]["value"] == "delete"
        admin.delete_topics(["kp"])
        assert "kp" not in admin.list_topics()
        with pytest.raises(UnknownTopicOrPartitionError):
            admin.delete_topics(["kp"])
    finally:
        admin.close()
