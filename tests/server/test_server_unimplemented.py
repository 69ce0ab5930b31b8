"""What serve does not implement fails fast with a clear error in every client (issue 20, item 5), as a Kafka
broker without it makes them fail -- never a silent wait for the client's whole timeout.

- APIs serve does not advertise (AlterConfigs, ACLs, SCRAM, ...): the clients refuse to send them (librdkafka:
  "... not supported by broker") and a request for one closes the connection, as Kafka 4.4.0 closes it.
- KIP-848's ConsumerGroupHeartbeat / ConsumerGroupDescribe on a node started with
  ``group.coordinator.rebalance.protocols=classic``: advertised and answered UNSUPPORTED_VERSION in the body, as a
  Kafka 4.4.0 broker so configured does (observed).  A confluent consumer with ``group.protocol=consumer`` gets a
  fatal error at its first heartbeat.  Leaving the APIs out of ApiVersions would not do: librdkafka then looks
  for the coordinator again for ever, telling the application nothing (its ConsumerGroupHeartbeat request is
  never sent: rd_kafka_ConsumerGroupHeartbeatRequest marks the coordinator dead when ApiVersions lacks the API).
- Transactions: FindCoordinator for a transactional id and a transactional InitProducerId are answered
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED with "transactions are not supported by kafkagroup serve": librdkafka's
  ``init_transactions`` raises it at once (before: INVALID_REQUEST, which it retried until its timeout).
"""
from __future__ import annotations

import socket
import struct
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from kafkagroup.server.versions import ADVERTISED
from server_wire import KafkaWire, ServerThread, body

UNSUPPORTED_VERSION = 35


@pytest.fixture
def server():
    s = ServerThread(topics={"t": 2}, config={"group.initial.rebalance.delay.ms": 0})
    yield s
    s.stop()


@pytest.fixture
def classic_only():
    """A node whose coordinator takes the classic protocol only (Kafka's group.coordinator.rebalance.protocols)."""
    s = ServerThread(topics={"t": 2}, config={"group.initial.rebalance.delay.ms": 0,
                                              "group.coordinator.rebalance.protocols": "classic"})
    yield s
    s.stop()


def test_consumer_group_apis_are_refused_in_the_body_as_kafka_does_with_the_protocol_off(classic_only):
    with KafkaWire(classic_only.address) as wire:
        listed = wire.request(18, 3, body(18, 3, client_software_name="t", client_software_version="1"))
        assert {(k.api_key, k.min_version, k.max_version) for k in listed.api_keys} >= {(68, 0, 1), (69, 0, 1)}
        assert {k.api_key: (k.min_version, k.max_version) for k in listed.api_keys} == {
            key: (lo, hi) for key, (_, lo, hi) in ADVERTISED.items()}
        for version in (0, 1):
            r = wire.request(68, version, body(68, version, group_id="g", member_id="m", member_epoch=0,
                                               instance_id=None, rack_id=None, rebalance_timeout=60000,
                                               subscribed_topic_names=("t",), subscribed_topic_regex=None,
                                               server_assignor=None, topic_partitions=()))
            assert (r.error_code, r.error_message, r.member_id, r.member_epoch, r.assignment) == (
                UNSUPPORTED_VERSION, None, None, 0, None)
            d = wire.request(69, version, body(69, version, group_ids=("g", "h"), include_authorized_operations=False))
            assert [(g.group_id, g.error_code, g.group_state, g.members) for g in d.groups] == [
                ("g", UNSUPPORTED_VERSION, "", ()), ("h", UNSUPPORTED_VERSION, "", ())]


def test_confluent_consumer_protocol_gets_an_error_instead_of_polling_for_ever(classic_only):
    consumer = Consumer({"bootstrap.servers": classic_only.bootstrap, "group.id": "kip848", "group.protocol": "consumer"})
    try:
        consumer.subscribe(["t"])
        error = None
        deadline = time.monotonic() + 60
        while error is None and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is not None:
                error = message.error()
        assert error is not None, "no error reached the application"
        # librdkafka raises it as its fatal error: "Fatal error: Broker: API version not supported:
        # ConsumerGroupHeartbeat fatal error: Broker: API version not supported"
        assert error.code() == KafkaError._FATAL, error
        assert "ConsumerGroupHeartbeat fatal error: Broker: API version not supported" in error.str(), error
    finally:
        consumer.close()


def test_confluent_init_transactions_fails_at_once_with_the_reason(server):
    producer = Producer({"bootstrap.servers": server.bootstrap, "transactional.id": "tx-1"})
    with pytest.raises(KafkaException) as e:
        producer.init_transactions(120)
    error = e.value.args[0]
    # a timeout would be _TIMED_OUT after 120 s; this is the server's answer, fatal, with its reason
    assert error.code() == KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED and error.fatal(), error
    assert "transactions are not supported by kafkagroup serve" in error.str(), error


# alter_configs is deprecated in confluent-kafka, and used here on purpose: it is what older tools still send.
@pytest.mark.filterwarnings("ignore:alter_configs has been deprecated:DeprecationWarning")
def test_unadvertised_apis_fail_in_the_client_and_close_on_the_wire(server):
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    (future,) = admin.alter_configs([ConfigResource(ResourceType.TOPIC, "t", set_config={"retention.ms": "1"})]).values()
    with pytest.raises(KafkaException) as e:
        future.result(timeout=30)
    assert e.value.args[0].code() == KafkaError._UNSUPPORTED_FEATURE
    # AlterConfigs v2 sent anyway: the connection is closed without an answer, as Kafka closes it
    with socket.create_connection(server.address) as raw:
        payload = struct.pack(">hhih", 33, 2, 1, -1) + struct.pack(">i", 0) + b"\x00"
        raw.sendall(struct.pack(">i", len(payload)) + payload)
        raw.settimeout(10)
        assert raw.recv(100) == b""


@pytest.mark.parametrize("value", ["consumer", "classic,streams", "", 3])
def test_rebalance_protocols_must_list_classic_and_nothing_unknown(value):
    from kafkagroup.server.config import split_config

    with pytest.raises(ValueError, match="group.coordinator.rebalance.protocols"):
        split_config({"group.coordinator.rebalance.protocols": value})


def test_consumer_protocol_is_on_by_default_and_off_with_classic_only():
    from kafkagroup.server.config import split_config

    assert split_config({})[0]["group.coordinator.rebalance.protocols"] == "classic,consumer"
    assert split_config({"group.coordinator.rebalance.protocols": "classic"})[0][
        "group.coordinator.rebalance.protocols"] == "classic"
