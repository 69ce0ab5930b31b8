"""The pytest plugin of ``kafkagroup.testing`` (entry point ``pytest11``: active wherever kafkagroup is
installed with its ``[serve]`` extra). It imports nothing until a test asks for its fixture.

    @pytest.mark.kafka_topics(orders=6)                      # topics to create (name=partitions)
    @pytest.mark.kafka_config({"group.min.session.timeout.ms": 500})   # more broker config
    def test_billing(kafka_server):
        consumer = Consumer({"bootstrap.servers": kafka_server.bootstrap, "group.id": "billing", ...})
        ...
        kafka_server.control.wait("billing", state="Stable", members=1)

``kafka_server`` is a fresh node per test (a free loopback port, group.initial.rebalance.delay.ms 0,
in-memory store), stopped after it. ``pytest --kafka-server=subprocess`` runs each as a ``kafkagroup
serve`` child process controlled over HTTP instead of in this process.
"""
from __future__ import annotations

from typing import Any, Iterator

import pytest


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("kafkagroup")
    group.addoption("--kafka-server", choices=("inprocess", "subprocess"), default="inprocess",
                    help="kafkagroup.testing's kafka_server fixture: a node in this process (default) or a "
                         "kafkagroup serve subprocess")


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "kafka_topics(**partitions): topics the kafka_server fixture creates, "
                                       "name=partition count")
    config.addinivalue_line("markers", "kafka_config(mapping): broker config of the kafka_server fixture")


def _marker_mapping(node: Any, name: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for marker in reversed(list(node.iter_markers(name))):   # the closest marker wins
        for arg in marker.args:
            out.update(arg)
        out.update(marker.kwargs)
    return out


@pytest.fixture
def kafka_server(request: Any) -> Iterator[Any]:
    """A kafkagroup node for this test (module docstring); ``.bootstrap``, ``.control``."""
    from kafkagroup.testing.server import start_server

    topics = _marker_mapping(request.node, "kafka_topics")
    config = _marker_mapping(request.node, "kafka_config")
    subprocess = request.config.getoption("--kafka-server") == "subprocess"
    with start_server(topics, config, subprocess=subprocess) as server:
        yield server
