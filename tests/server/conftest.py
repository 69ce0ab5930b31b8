from __future__ import annotations

import pytest

from server_wire import ServerThread


@pytest.fixture
def kafka_python_finishes_pending_joins(monkeypatch: pytest.MonkeyPatch) -> None:
    """For a test that drives an in-process kafka-python 3.0.12 KafkaConsumer through a group join: the test
    driver's workaround (consumer_driver._kafka_python_finish_pending_join) for kafka-python's pending-join
    defect, which strands a leader whose short poll gave up during a join round
    (tests/server/test_kafka_python_pending_join.py shows it step by step).  Undone after the test, so
    that test_kafka_python_pending_join still sees kafka-python as shipped."""
    from kafka.coordinator.consumer import ConsumerCoordinator

    from consumer_driver import _kafka_python_finish_pending_join

    monkeypatch.setattr(ConsumerCoordinator, "need_rejoin", ConsumerCoordinator.need_rejoin)   # restored after
    _kafka_python_finish_pending_join()


@pytest.fixture
def server():
    s = ServerThread(topics={"t": 3}, config={"group.initial.rebalance.delay.ms": 0,
                                              "group.min.session.timeout.ms": 10})
    yield s
    s.stop()
