"""Fixtures of the conformance suite: one Apache Kafka 4.4.0 broker and one `kafkagroup serve` per test
session (many groups on each), the same topics and group settings on both, the Java driver compiled against
Kafka 4's client, and ``conformance(scenario)`` which runs a scenario against both and diffs what clients
observed (conformance_support.compare).

Needs `make kafka4` (build/kafka4/lib) and a JDK (`make java`); `make test` provides both.
"""
from __future__ import annotations

import logging
import re
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "server"))   # server_support, server_wire: the real-client drivers
sys.path.insert(0, str(HERE))

from kafka_broker import KAFKA4_VERSION, KafkaBroker, kafka4_lib  # noqa: E402
from conformance_support import Server, compare  # noqa: E402
from server_support import JAVA_SOURCE, ServeProcess, wait_until  # noqa: E402

log = logging.getLogger("conformance")

# The topics every scenario may use (created on both servers at session start; scenarios own their groups,
# not topics, so a scenario that produces uses a topic of its own).
TOPICS: dict[str, int] = {
    "c.three": 3,
    "c.two": 2,
    "c.one": 1,
    "c.offsets": 4,
    "c.data-static": 3,
    "c.data-static-b": 2,
    "c.vote": 2,
    "c.tool": 2,
}

# Group settings given to both servers: no initial rebalance delay (a wait, not behaviour) and a minimum
# session timeout low enough for the clients' 6 s sessions and for raw members' short ones.
GROUP_CONFIG: dict[str, Any] = {
    "group.initial.rebalance.delay.ms": 0,
    "group.min.session.timeout.ms": 1000,
}

_started: dict[str, str] = {}


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for line in _started.values():
        terminalreporter.write_line(line)


def _create_topics_on_kafka(bootstrap: str, topics: dict[str, int]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(t, n, 1) for t, n in topics.items()], operation_timeout=30)
    for topic, future in futures.items():
        future.result(60)

    def all_led() -> bool:
        meta = admin.list_topics(timeout=10)
        return all(t in meta.topics and len(meta.topics[t].partitions) == n
                   and all(p.leader >= 0 for p in meta.topics[t].partitions.values())
                   for t, n in topics.items())

    wait_until(all_led, 60, f"Kafka to lead the partitions of {sorted(topics)}")


def _warm_coordinator(bootstrap: str) -> None:
    """The first FindCoordinator creates __consumer_offsets; wait for it here, not in the first scenario."""
    from server_wire import KafkaWire, body

    host, port = bootstrap.rsplit(":", 1)
    with KafkaWire((host, int(port))) as wire:
        wait_until(lambda: wire.request(10, 3, body(10, 3, key="warm-up", key_type=0)).error_code == 0, 60,
                   "Kafka's group coordinator to be available")


@pytest.fixture(scope="session")
def kafka4() -> Iterator[KafkaBroker]:
    """A single-node Apache Kafka 4.4.0 KRaft broker with TOPICS, stopped by PID at the end of the session."""
    if not kafka4_lib().is_dir():
        pytest.fail(f"{kafka4_lib()} is missing: run `make kafka4`")
    broker = KafkaBroker(GROUP_CONFIG)
    try:
        _create_topics_on_kafka(broker.bootstrap, TOPICS)
        _warm_coordinator(broker.bootstrap)
        _started["kafka"] = (f"conformance: Apache Kafka {KAFKA4_VERSION} (pid {broker.pid}, {broker.bootstrap}): "
                             f"storage formatted in {broker.formatted_in_s:.2f} s, first answer "
                             f"{broker.answered_in_s:.2f} s after launch ({broker.started_in_s:.2f} s in all)")
        log.info(_started["kafka"])
        yield broker
    finally:
        broker.kill()


@pytest.fixture(scope="session")
def serve() -> Iterator[ServeProcess]:
    """`kafkagroup serve` as a process with the same TOPICS and group settings, for the whole session."""
    begin = time.monotonic()
    server = ServeProcess(TOPICS, config=GROUP_CONFIG)
    try:
        _started["serve"] = (f"conformance: kafkagroup serve (pid {server.proc.pid}, {server.bootstrap}): "
                             f"listening {time.monotonic() - begin:.2f} s after launch")
        log.info(_started["serve"])
        yield server
    finally:
        server.terminate()


@pytest.fixture(scope="session")
def java_classpath(tmp_path_factory: pytest.TempPathFactory) -> str:
    """tests/server/java/GroupConsumer.java compiled against Kafka 4.4.0's kafka-clients."""
    if shutil.which("javac") is None:
        pytest.fail("javac not found: `make java` installs a JDK 17")
    import subprocess
    import os

    out = tmp_path_factory.mktemp("java-driver-kafka4")
    classpath = os.pathsep.join([str(out), str(kafka4_lib() / "*")])
    subprocess.run(["javac", "-nowarn", "-d", str(out), "-cp", classpath, str(JAVA_SOURCE)],
                   check=True, capture_output=True, text=True)
    return classpath


@pytest.fixture
def conformance(request: pytest.FixtureRequest, kafka4: KafkaBroker, serve: ServeProcess,
                java_classpath: str) -> Callable[..., dict[str, Any]]:
    """conformance(scenario, name=None) -> runs scenario(run) against Kafka 4 then serve and diffs the
    normalised observations (see conformance_support). Group names are unique to the test (and `name`)."""
    servers = [Server("kafka", kafka4.bootstrap), Server("serve", serve.bootstrap)]
    counter = iter(range(1, 1000))

    def check(scenario: Callable[..., Any], name: str | None = None) -> dict[str, Any]:
        scenario_id = re.sub(r"[^A-Za-z0-9._-]", "-", f"{request.node.name}.{name or next(counter)}")
        return compare(scenario, servers, scenario_id, java_classpath)

    return check
