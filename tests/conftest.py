"""Shared test fixtures: the vectors produced by Apache Kafka's own classes, loaded from ../shared/vectors/,
and the local SparkSession of the modules that ask for ``spark``."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

VECTORS = Path(__file__).resolve().parents[1] / ".." / "shared" / "vectors"


@pytest.fixture(scope="session")
def assignor_vectors() -> list[dict]:
    return json.loads((VECTORS / "assignor_vectors.json").read_text())["vectors"]


@pytest.fixture(scope="session")
def protocol_vectors() -> dict:
    return json.loads((VECTORS / "consumer_protocol_vectors.json").read_text())


@pytest.fixture(scope="module")
def spark():
    """A local[2] SparkSession (UI off, 2 shuffle partitions) for one test module, stopped after it (so
    a module that checks no Spark is running is not misled by another's session). PYSPARK_PYTHON is set to this interpreter: Spark's workers would otherwise run a plain
    ``python3`` without kafkagroup."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("kafkagroup-tests")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def kafka_python_finishes_pending_joins(monkeypatch: pytest.MonkeyPatch) -> None:
    """For a test that drives an in-process kafka-python 3.0.12 KafkaConsumer through a group join: the test
    driver's workaround (consumer_driver._kafka_python_finish_pending_join) for kafka-python's pending-join
    defect, which strands a leader whose short poll gave up during a join round
    (tests/server/test_kafka_python_pending_join.py shows it step by step).  Undone after the test, so
    that test_kafka_python_pending_join still sees kafka-python as shipped."""
    from kafka.coordinator.consumer import ConsumerCoordinator

    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parent / "server"))     # where the driver lives
    from consumer_driver import _kafka_python_finish_pending_join

    monkeypatch.setattr(ConsumerCoordinator, "need_rejoin", ConsumerCoordinator.need_rejoin)   # restored after
    _kafka_python_finish_pending_join()
