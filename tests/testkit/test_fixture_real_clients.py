"""kafkagroup.testing with real clients (issue 25): the kafka_server fixture (pytest plugin by entry point),
observing groups, waiting, expiring a member, injecting errors, delaying and dropping answers.

Every assertion is on what a client nobody here wrote observes (confluent-kafka's librdkafka, kafka-python):
its callbacks, the errors it raises, what it commits; the control's views are checked against them.
"""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from kafkagroup.testing import Control


def _consumer(bootstrap: str, group: str, **extra) -> Consumer:
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                     "enable.auto.commit": False, "session.timeout.ms": 6000, "heartbeat.interval.ms": 100,
                     **extra})


def _poll_until(consumers: list[Consumer], done, timeout: float = 30.0) -> None:
    """Poll every consumer (their callbacks run in poll) until ``done()``; fails after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "condition not reached"
        for c in consumers:
            c.poll(0.05)


def _join(consumer: Consumer, topic: str, assigned: list) -> None:
    consumer.subscribe([topic], on_assign=lambda c, tps: assigned.append(sorted(tp.partition for tp in tps)))


@pytest.mark.kafka_topics(orders=4)
def test_fixture_serves_a_consumer_and_the_control_sees_its_assignment(kafka_server) -> None:
    assert isinstance(kafka_server.control, Control)          # in process by default
    producer = Producer({"bootstrap.servers": kafka_server.bootstrap})
    for i in range(8):
        producer.produce("orders", key=str(i), value=b"x", partition=i % 4)
    assert producer.flush(10) == 0
    consumer = _consumer(kafka_server.bootstrap, "billing")
    assigned: list = []
    _join(consumer, "orders", assigned)
    records: list = []

    def read_all() -> bool:
        message = consumer.poll(0.05)
        if message is not None and not message.error():
            records.append(message)
        return len(records) == 8

    _poll_until([], read_all)
    view = kafka_server.control.wait("billing", state="Stable", members=1, timeout=10)
    assert view.protocol == "range" and view.generation == 1
    (member,) = view.members
    assert member.assignment == {"orders": [0, 1, 2, 3]} and assigned == [[0, 1, 2, 3]]
    assert member.member_id == consumer.memberid()
    consumer.close()
    assert kafka_server.control.wait("billing", state="Empty", members=0, timeout=10).members == []


@pytest.mark.kafka_topics(orders=4)
def test_expire_takes_a_member_out_and_the_group_rebalances(kafka_server) -> None:
    control = kafka_server.control
    a, b = _consumer(kafka_server.bootstrap, "g"), _consumer(kafka_server.bootstrap, "g")
    got_a: list = []
    got_b: list = []
    _join(a, "orders", got_a)
    _join(b, "orders", got_b)
    _poll_until([a, b], lambda: len(control.groups()) == 1 and
                (v := control.group("g")) is not None and v.state == "Stable" and len(v.members) == 2)
    before = control.wait("g", members=2)
    old_b = b.memberid()
    assert control.expire("g", old_b) is True
    assert control.expire("g", "no-such-member") is False
    # b learns from its next heartbeat (UNKNOWN_MEMBER_ID) that it is out, rejoins with a new member id
    _poll_until([a, b], lambda: b.memberid() not in (None, "", old_b) and
                (v := control.group("g")) is not None and v.state == "Stable" and len(v.members) == 2)
    after = control.wait("g", members=2)
    assert after.generation > before.generation
    assert {m.member_id for m in after.members} == {a.memberid(), b.memberid()}
    assert sorted(p for m in after.members for p in m.assignment["orders"]) == [0, 1, 2, 3]
    a.close()
    b.close()


@pytest.mark.kafka_topics(orders=2)
def test_injected_heartbeat_error_makes_the_client_rejoin(kafka_server) -> None:
    control = kafka_server.control
    consumer = _consumer(kafka_server.bootstrap, "hb")
    assigned: list = []
    _join(consumer, "orders", assigned)
    _poll_until([consumer], lambda: bool(assigned))
    generation = control.wait("hb", members=1).generation
    rule = control.inject_error("Heartbeat", "REBALANCE_IN_PROGRESS", count=1)
    assert rule["count"] == 1 and rule["error_code"] == 27
    _poll_until([consumer], lambda: (v := control.group("hb")) is not None and v.state == "Stable"
                and v.generation == generation + 1)
    assert control.faults() == []                                  # used up
    consumer.close()


@pytest.mark.kafka_topics(orders=1)
def test_injected_commit_error_reaches_kafka_python_and_the_next_commit_succeeds(kafka_server) -> None:
    from kafka import KafkaConsumer, TopicPartition as KTopicPartition
    from kafka.errors import GroupAuthorizationFailedError
    from kafka.structs import OffsetAndMetadata

    consumer = KafkaConsumer(bootstrap_servers=kafka_server.bootstrap, group_id="kp", enable_auto_commit=False)
    tp = KTopicPartition("orders", 0)
    consumer.assign([tp])
    kafka_server.control.inject_error("OffsetCommit", "GROUP_AUTHORIZATION_FAILED")
    with pytest.raises(GroupAuthorizationFailedError):
        consumer.commit({tp: OffsetAndMetadata(5, "", -1)})
    consumer.commit({tp: OffsetAndMetadata(7, "", -1)})
    assert consumer.committed(tp) == 7
    consumer.close()


@pytest.mark.kafka_topics(orders=1)
def test_dropped_and_delayed_answers_time_the_client_out(kafka_server) -> None:
    control = kafka_server.control
    consumer = _consumer(kafka_server.bootstrap, "slow", **{"socket.timeout.ms": 1000})
    consumer.assign([TopicPartition("orders", 0)])
    consumer.commit(offsets=[TopicPartition("orders", 0, 1)], asynchronous=False)   # coordinator known
    control.drop("OffsetCommit", count=None)        # every retry dropped too, until cleared
    with pytest.raises(KafkaException):
        consumer.commit(offsets=[TopicPartition("orders", 0, 2)], asynchronous=False)
    control.clear_faults()
    control.delay("OffsetFetch", 5000)
    with pytest.raises(KafkaException):
        consumer.committed([TopicPartition("orders", 0)], timeout=1.0)
    control.clear_faults()
    consumer.commit(offsets=[TopicPartition("orders", 0, 3)], asynchronous=False)
    assert consumer.committed([TopicPartition("orders", 0)], timeout=10)[0].offset == 3
    consumer.close()
