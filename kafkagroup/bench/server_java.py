"""Apache Kafka 4's server-side assignors (UniformAssignor, RangeAssignor of kafka-group-coordinator) as a
peer: one long-lived JVM running ``java/ServerAssignorDriver.java``, one JSON line per group each way.

The differential test (tests/core/test_server_assignors_kafka.py) and the benchmark
(benches/bench_server_assignors.py) use it. The jars come from ``$KAFKAGROUP_KAFKA4_LIB`` or
``<repo>/build/kafka4/lib`` (``make kafka4``); without them or a JDK, :class:`JavaUnavailable` says why.
The driver times ``assignor.assign(groupSpec, describer)`` itself (System.nanoTime, after warm-up calls);
building Kafka's input, the pipe and JSON are outside the figure.

A group is given the way :func:`kafkagroup.assign` takes it: ``topics`` maps a name to its partition count,
``members`` maps a member id to ``{"topics": [...], "owned": [(topic, p), ...], "instance": id or None}``.
Members are handed to Kafka's HashMap in the mapping's order.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkagroup.bench.idle import wait_idle
from kafkagroup.bench.java_peer import JavaUnavailable, _compile

_SOURCE = "ServerAssignorDriver.java"
ASSIGNORS = {"server-uniform": "uniform", "server-range": "range"}


class KafkaAssignorError(RuntimeError):
    """Kafka's assignor threw (the message is the exception's class and message)."""


def find_kafka4_jars() -> list[Path]:
    folder = Path(os.environ.get("KAFKAGROUP_KAFKA4_LIB") or Path(__file__).resolve().parents[2] / "build" / "kafka4" / "lib")
    jars = sorted(folder.glob("*.jar")) if folder.is_dir() else []
    if not any(j.name.startswith("kafka-group-coordinator-") for j in jars):
        raise JavaUnavailable(f"not available (no kafka-group-coordinator jar in {folder}; run make kafka4)")
    return jars


def topic_id(name: str) -> str:
    """A made-up, stable Kafka topic id (Uuid string: URL-safe base64 of 16 bytes) for a topic name."""
    raw = bytearray(hashlib.sha256(name.encode("utf-8", "surrogatepass")).digest()[:16])
    return base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")


@dataclass
class KafkaResult:
    assignment: dict[str, list[tuple[str, int]]]   # member -> (topic, partition) ascending; absent = nothing
    nanos: list[int]                               # assign() per timed round


class KafkaServerAssignors:
    """The driver process; use as a context manager. One group at a time."""

    def __init__(self) -> None:
        jars = find_kafka4_jars()
        classes = _compile(jars, _SOURCE)
        self._classpath = os.pathsep.join([str(classes), *map(str, jars)])
        self._log = tempfile.TemporaryFile()
        self._proc = subprocess.Popen(["java", "-Xss16m", "-XX:+UseParallelGC", "-cp", self._classpath,
                                       "ServerAssignorDriver"],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log, text=True,
                                      encoding="utf-8")

    def __enter__(self) -> KafkaServerAssignors:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def settle(self) -> float:
        """Wait until the JVM is idle (its JIT and collector done with the last call: kafkagroup.bench.idle);
        the seconds waited."""
        return wait_idle(self._proc.pid)

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()

    @staticmethod
    def request(strategy: str, topics: Mapping[str, int], members: Mapping[str, Mapping[str, Any]],
                warmup: int = 0, rounds: int = 1) -> dict[str, Any]:
        """The JSON request for a group (also what a failing test prints)."""
        return {
            "assignor": ASSIGNORS[strategy], "warmup": warmup, "rounds": rounds,
            "topics": [{"name": t, "id": topic_id(t), "partitions": int(n)} for t, n in topics.items()],
            "members": [{"id": m, "instance": spec.get("instance"), "topics": list(spec.get("topics", ())),
                         "owned": [[t, int(p)] for t, p in spec.get("owned", ())]} for m, spec in members.items()],
        }

    def send(self, request: Mapping[str, Any]) -> KafkaResult:
        if self._proc.poll() is not None:
            self._log.seek(0)
            raise RuntimeError(f"the Kafka driver exited: {self._log.read().decode(errors='replace')[-2000:]}")
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            self._log.seek(0)
            raise RuntimeError(f"the Kafka driver died: {self._log.read().decode(errors='replace')[-2000:]}")
        reply = json.loads(line)
        if "error" in reply:
            raise KafkaAssignorError(reply["error"])
        return KafkaResult({m: [(t, p) for t, p in tps] for m, tps in reply["assignment"].items()}, reply["nanos"])

    def assign(self, strategy: str, topics: Mapping[str, int], members: Mapping[str, Mapping[str, Any]],
               warmup: int = 0, rounds: int = 1) -> KafkaResult:
        return self.send(self.request(strategy, topics, members, warmup, rounds))
