"""Committed offsets of a group with no members, through the clients' own APIs: simple commits (with
metadata) by confluent-kafka and kafka-python, read back by both consumers, both admin clients and a raw
OffsetFetch; an admin alter (confluent), an offset delete and a group delete (kafka-python's admin), the
group's description and listing in between -- the same answers from Apache Kafka 4 and `kafkagroup serve`."""
from __future__ import annotations

from typing import Any

from conformance_support import OFFSET_COMMIT, OFFSET_DELETE, describe_group, fetch_offsets, list_groups, plain
from server_wire import body, nested

TOPIC = "c.offsets"      # 4 partitions


def _confluent_error(err: Any) -> Any:
    return None if err is None else err.code()


def _kafka_python_error(err: Any) -> Any:
    """kafka-python answers an error class, an instance or a name, by API."""
    if err is None or isinstance(err, str):
        return err
    return err.__name__ if isinstance(err, type) else type(err).__name__


def raw_commit(wire, group, offsets, version=8, generation=-1, member=""):
    """OffsetCommit of {(topic, partition): offset}; answers as [[topic, partition, error], ...]."""
    topics: dict[str, list] = {}
    for (t, p), o in offsets.items():
        topics.setdefault(t, []).append(nested(OFFSET_COMMIT, version, "OffsetCommitRequestPartition",
                                               partition_index=p, committed_offset=o, committed_leader_epoch=-1,
                                               committed_metadata="raw", commit_timestamp=-1))
    answer = wire.request(OFFSET_COMMIT, version, body(
        OFFSET_COMMIT, version, group_id=group, generation_id_or_member_epoch=generation, member_id=member,
        group_instance_id=None, retention_time=-1,
        topics=tuple(nested(OFFSET_COMMIT, version, "OffsetCommitRequestTopic", name=t, partitions=tuple(ps))
                     for t, ps in topics.items())))
    return sorted([t.name, p.partition_index, plain(p.error_code)] for t in answer.topics for p in t.partitions)


def raw_offset_delete(wire, group, partitions):
    """OffsetDelete v0 of [(topic, partition)]: [top-level error, [[topic, partition, error], ...]]."""
    by_topic: dict[str, list[int]] = {}
    for t, p in partitions:
        by_topic.setdefault(t, []).append(p)
    topics = tuple(nested(OFFSET_DELETE, 0, "OffsetDeleteRequestTopic", name=t, partitions=tuple(
        nested(OFFSET_DELETE, 0, "OffsetDeleteRequestPartition", partition_index=p) for p in ps))
        for t, ps in by_topic.items())
    answer = wire.request(OFFSET_DELETE, 0, body(OFFSET_DELETE, 0, group_id=group, topics=topics))
    return [plain(answer.error_code),
            sorted([t.name, p.partition_index, plain(p.error_code)] for t in answer.topics for p in t.partitions)]


def test_simple_commits_admin_alter_delete(conformance):
    def scenario(run):
        from confluent_kafka import Consumer, TopicPartition as CTP
        from confluent_kafka.admin import AdminClient
        from confluent_kafka import ConsumerGroupTopicPartitions
        from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition as KTP
        from kafka.admin import KafkaAdminClient

        group = run.group()
        seen: dict[str, Any] = {}
        wire = run.wire()
        seen["fetch.none"] = fetch_offsets(wire, group)
        seen["describe.none"] = describe_group(wire, group)

        confluent = Consumer({"bootstrap.servers": run.bootstrap, "group.id": group, "enable.auto.commit": False})
        run.on_close(confluent.close)
        confluent.commit(offsets=[CTP(TOPIC, 0, 5, metadata="c0"), CTP(TOPIC, 1, 6)], asynchronous=False)
        kp = KafkaConsumer(bootstrap_servers=run.bootstrap, group_id=group, enable_auto_commit=False)
        run.on_close(kp.close)
        kp.commit({KTP(TOPIC, 2): OffsetAndMetadata(7, "kp2", -1)})
        seen["committed.confluent"] = sorted(
            [tp.topic, tp.partition, tp.offset, _confluent_error(tp.error)]   # (its .metadata: garbage bytes)
            for tp in confluent.committed([CTP(TOPIC, p) for p in range(4)], timeout=30))
        seen["committed.kafka-python"] = [[p, getattr(kp.committed(KTP(TOPIC, p), metadata=True), "offset", None),
                                           getattr(kp.committed(KTP(TOPIC, p), metadata=True), "metadata", None)]
                                          for p in range(4)]
        seen["fetch.raw"] = fetch_offsets(wire, group)
        seen["commit.raw.unknown"] = raw_commit(wire, group, {("c.no-such-topic", 0): 1, (TOPIC, 99): 1})
        # Unknown topics/partitions next to a known one, from a member the group does not have.
        seen["commit.raw.unknown_member"] = raw_commit(
            wire, group, {("c.no-such-topic", 0): 1, (TOPIC, 99): 1, (TOPIC, 0): 1}, generation=3, member="nobody")
        # Only unknown partitions, to a group that does not exist: is the group created?
        seen["commit.raw.unknown_only"] = raw_commit(wire, run.group("never"), {("c.no-such-topic", 0): 1})
        seen["describe.unknown_only"] = describe_group(wire, run.group("never"))
        seen["fetch.raw.unknown"] = fetch_offsets(wire, group, [("c.no-such-topic", 0), (TOPIC, 99), (TOPIC, 3)])
        seen["describe.empty"] = describe_group(wire, group)
        seen["list"] = list_groups(wire, group)

        admin = AdminClient({"bootstrap.servers": run.bootstrap})
        altered = admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, [CTP(TOPIC, 3, 11), CTP(TOPIC, 0, 12)])])
        result = altered[group].result(30)
        seen["alter.confluent"] = sorted([tp.topic, tp.partition, tp.offset, _confluent_error(tp.error)]
                                         for tp in result.topic_partitions)
        listed = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(30)
        seen["list.confluent"] = sorted([tp.topic, tp.partition, tp.offset, _confluent_error(tp.error)] for tp in listed.topic_partitions)
        described = admin.describe_consumer_groups([group])[group].result(30)
        seen["describe.confluent"] = {"state": str(described.state), "simple": described.is_simple_consumer_group,
                                      "assignor": described.partition_assignor, "members": len(described.members)}

        kadmin = KafkaAdminClient(bootstrap_servers=run.bootstrap)
        run.on_close(kadmin.close)
        seen["list.kafka-python"] = sorted([tp.topic, tp.partition, o.offset, o.metadata]
                                           for tp, o in kadmin.list_group_offsets(group)[group].items())
        deleted = kadmin.delete_group_offsets(group, [KTP(TOPIC, 1), KTP(TOPIC, 2)])
        seen["delete_offsets.kafka-python"] = sorted([tp.topic, tp.partition, _kafka_python_error(err)]
                                                     for tp, err in deleted.items())
        seen["fetch.after_offset_delete"] = fetch_offsets(wire, group)
        seen["delete_offsets.raw.unknown"] = raw_offset_delete(wire, group, [("c.no-such-topic", 0), (TOPIC, 99),
                                                                             (TOPIC, 3)])
        seen["fetch.after_raw_delete"] = fetch_offsets(wire, group)
        seen["delete_offsets.raw.unknown_only"] = [
            raw_offset_delete(wire, g, [("c.no-such-topic", 0), (TOPIC, 99)]) for g in (group, run.group("never"))]
        seen["delete_groups.kafka-python"] = [[g, _kafka_python_error(err)]
                                              for g, err in sorted(dict(kadmin.delete_groups([group])).items())]
        seen["fetch.after_group_delete"] = fetch_offsets(wire, group)
        seen["describe.after_group_delete"] = describe_group(wire, group)
        seen["list.after_group_delete"] = list_groups(wire, group)
        return seen

    conformance(scenario)
