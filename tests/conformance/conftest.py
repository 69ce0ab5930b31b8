"""Fixtures of the conformance suite: one Apache Kafka 4.4.0 broker and one `kafkagroup serve` per test
session (many groups on each), the same topics and group settings on both, the Java driver compiled against
Kafka 4's client, and ``conformance(scenario)`` which runs a scenario against both and diffs what clients
observed (conformance_support.compare).

Needs `make kafka4` (build/kafka4/lib) and a JDK (`make java`); `make test` provides both.
"""
from __future__ import annotations

import logging
import os
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
from server_support import ServeProcess, compile_java, wait_until  # noqa: E402

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
    "c.fetch-bounds": 2,
    "c.migration": 4,
    "c.kip848-fence": 2,
    "c.kip848-fence-java": 2,
}

# Group settings given to both servers: no initial rebalance delay (a wait, not behaviour) and a minimum
# session timeout low enough for the clients' 6 s sessions and for raw members' short ones.
GROUP_CONFIG: dict[str, Any] = {
    "group.initial.rebalance.delay.ms": 0,
    "group.min.session.timeout.ms": 1000,
    # consumer groups (KIP-848): the coordinator's heartbeat interval and session, small so scenarios take seconds
    "group.consumer.heartbeat.interval.ms": 500,
    "group.consumer.min.heartbeat.interval.ms": 500,
    "group.consumer.session.timeout.ms": 6000,
    "group.consumer.min.session.timeout.ms": 6000,
}

_started: dict[str, str] = {}

# `make conformance` sets this: the tests marked conformance_extended (longer: retention periods, every
# client through every trigger) run too; `make test` runs the default set only.
EXTENDED = os.environ.get("KAFKAGROUP_CONFORMANCE_EXTENDED") == "1"


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    if EXTENDED:
        return
    skip = pytest.mark.skip(reason="extended conformance set: `make conformance` "
                                   "(KAFKAGROUP_CONFORMANCE_EXTENDED=1)")
    for item in items:
        if item.get_closest_marker("conformance_extended") is not None:
            item.add_marker(skip)


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
    """tests/server/java/GroupConsumer.java compiled against Kafka 4.4.0's kafka-clients (build/kafka4/lib)."""
    if shutil.which("javac") is None:
        pytest.fail("javac not found: `make java` installs a JDK 17")
    return compile_java(tmp_path_factory.mktemp("java-driver-kafka4"))


def _checker(request: pytest.FixtureRequest, servers: list[Server], java_classpath: str) -> Callable[..., Any]:
    counter = iter(range(1, 1000))

    def check(scenario: Callable[..., Any], name: str | None = None, parallel: bool = False) -> dict[str, Any]:
        scenario_id = re.sub(r"[^A-Za-z0-9._-]", "-", f"{request.node.name}.{name or next(counter)}")
        return compare(scenario, servers, scenario_id, java_classpath, parallel=parallel)

    return check


@pytest.fixture
def conformance(request: pytest.FixtureRequest, kafka4: KafkaBroker, serve: ServeProcess,
                java_classpath: str) -> Callable[..., dict[str, Any]]:
    """conformance(scenario, name=None, parallel=False) -> runs scenario(run) against Kafka 4 then serve and
    diffs the normalised observations (see conformance_support). Group names are unique to the test (and
    `name`)."""
    return _checker(request, [Server("kafka", kafka4.bootstrap), Server("serve", serve.bootstrap)], java_classpath)


@pytest.fixture(scope="module")
def server_pair(request: pytest.FixtureRequest) -> Iterator[Callable[[dict[str, Any]], list[Server]]]:
    """server_pair(settings) -> [kafka, serve] started once per module and settings with GROUP_CONFIG + `settings` (for
    scenarios that need other broker settings than the session's, e.g. a short offsets retention); both
    stopped after the module."""
    started: list[Any] = []
    pairs: dict[str, list[Server]] = {}

    def start(settings: dict[str, Any]) -> list[Server]:
        key = repr(sorted(settings.items()))
        if key not in pairs:
            pairs[key] = _start_pair(settings)
        return pairs[key]

    def _start_pair(settings: dict[str, Any]) -> list[Server]:
        config = {**GROUP_CONFIG, **settings}
        broker = KafkaBroker(config)
        started.append(broker)
        _create_topics_on_kafka(broker.bootstrap, TOPICS)
        _warm_coordinator(broker.bootstrap)
        log.info("conformance: extra Apache Kafka %s with %s: started in %.2f s", KAFKA4_VERSION, settings,
                 broker.started_in_s)
        server = ServeProcess(TOPICS, config=config)
        started.append(server)
        return [Server("kafka", broker.bootstrap), Server("serve", server.bootstrap)]

    try:
        yield start
    finally:
        for thing in reversed(started):
            thing.kill() if isinstance(thing, KafkaBroker) else thing.terminate()


@pytest.fixture
def conformance_with(request: pytest.FixtureRequest, server_pair: Callable[[dict[str, Any]], list[Server]],
                     java_classpath: str) -> Callable[[dict[str, Any]], Callable[..., dict[str, Any]]]:
    """conformance_with(settings) -> a conformance(scenario, ...) on the module's server pair with those
    settings (started on first use)."""
    def make(settings: dict[str, Any]) -> Callable[..., dict[str, Any]]:
        return _checker(request, server_pair(settings), java_classpath)

    return make
