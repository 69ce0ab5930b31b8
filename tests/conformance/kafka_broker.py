"""Apache Kafka 4 as a process: a single-node KRaft broker (combined broker + controller) from the jars that
`make kafka4` copies from Maven Central into build/kafka4/lib, in a temporary directory, on free 127.0.0.1
ports. Used by the conformance suite (tests/conformance/) as the oracle and by benches/bench_serve.py as a
peer column.

Start-up: storage formatted with `kafka.tools.StorageTool format --standalone` (one JVM), then `kafka.Kafka`
(a second JVM); ready once it answers ApiVersions and a Metadata request lists itself as a broker. The broker
is stopped by its PID (SIGTERM, then SIGKILL after a deadline); only that process is signalled.
"""
from __future__ import annotations

import base64
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Mapping, Optional

REPO = Path(__file__).resolve().parents[2]
KAFKA4_VERSION = "4.4.0"

# Broker settings that differ from Kafka's defaults, for one node on loopback. Scenario-specific group
# settings (delay, session bounds, retention) are passed by the caller so that `serve` gets the same ones.
BASE_PROPERTIES = {
    "process.roles": "broker,controller",
    "node.id": "1",
    "controller.listener.names": "CONTROLLER",
    "inter.broker.listener.name": "PLAINTEXT",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "share.coordinator.state.topic.replication.factor": "1",
    "share.coordinator.state.topic.min.isr": "1",
    "group.initial.rebalance.delay.ms": "0",
}


def kafka4_lib() -> Path:
    """Apache Kafka 4's jars: $KAFKAGROUP_KAFKA4_LIB, else <repo>/build/kafka4/lib (`make kafka4`)."""
    return Path(os.environ.get("KAFKAGROUP_KAFKA4_LIB") or REPO / "build" / "kafka4" / "lib")


def kafka4_classpath() -> str:
    lib = kafka4_lib()
    jars = sorted(lib.glob("*.jar"))
    if not any(j.name == f"kafka_2.13-{KAFKA4_VERSION}.jar" for j in jars):
        raise RuntimeError(f"no kafka_2.13-{KAFKA4_VERSION}.jar in {lib}: run `make kafka4`")
    return os.pathsep.join(map(str, jars))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def random_cluster_id() -> str:
    """A Kafka Uuid as StorageTool's random-uuid prints it: 16 random bytes, URL-safe base64, no padding; never
    one starting with "-" (1 in 64: StorageTool's argument parser takes it for an option and refuses `-t`)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def _request(port: int, api_key: int, version: int, body: bytes, timeout: float = 2.0) -> bytes:
    """One request with a v1 (non-flexible) header on a fresh connection; the response body after the
    correlation id. Only for the readiness probe (ApiVersions v0, Metadata v1: no flexible encoding)."""
    header = struct.pack(">hhih", api_key, version, 1, 5) + b"probe"
    payload = header + body
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(struct.pack(">i", len(payload)) + payload)
        size = struct.unpack(">i", _exactly(s, 4))[0]
        frame = _exactly(s, size)
    return frame[4:]


def _exactly(s: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise ConnectionError("closed")
        out += chunk
    return out


def _answers(port: int) -> bool:
    """True once ApiVersions v0 answers error 0 and Metadata v1 (no topics) lists at least one broker."""
    try:
        api = _request(port, 18, 0, b"")
        if struct.unpack(">h", api[:2])[0] != 0:
            return False
        meta = _request(port, 3, 1, struct.pack(">i", 0))
        return struct.unpack(">i", meta[:4])[0] > 0
    except (OSError, struct.error):
        return False


class KafkaBroker:
    """One Apache Kafka 4 broker process. `bootstrap` is its PLAINTEXT listener; `started_in_s` the wall time
    from the format step to the first good answer; `kill()` stops it (and removes its directory)."""

    def __init__(self, properties: Optional[Mapping[str, Any]] = None, heap: str = "1g",
                 workdir: Optional[Path] = None, start_timeout: float = 120.0) -> None:
        self.classpath = kafka4_classpath()
        if shutil.which("java") is None:
            raise RuntimeError("java not found: `make java` installs a JDK 17")
        self._own_dir = workdir is None
        self.dir = Path(workdir or tempfile.mkdtemp(prefix="kafka4-"))
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.controller_port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        props = {
            **BASE_PROPERTIES,
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{self.controller_port}",
            "log.dirs": str(self.dir / "data"),
            **{k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in (properties or {}).items()},
        }
        self.properties = props
        config = self.dir / "server.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        self.log_path = self.dir / "broker.log"
        self.proc: Optional[subprocess.Popen] = None
        begin = time.monotonic()
        fmt = subprocess.run(["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-cp", self.classpath,
                              "kafka.tools.StorageTool", "format", "--standalone", "-t", random_cluster_id(),
                              "-c", str(config)], capture_output=True, text=True, timeout=start_timeout)
        if fmt.returncode != 0:
            self._remove_dir()
            raise RuntimeError(f"StorageTool format failed ({fmt.returncode}): {fmt.stdout[-2000:]} {fmt.stderr[-2000:]}")
        self.formatted_in_s = time.monotonic() - begin
        log = open(self.log_path, "wb")
        launched = time.monotonic()
        self.proc = subprocess.Popen(["java", f"-Xmx{heap}", "-Xshare:auto", "-cp", self.classpath, "kafka.Kafka",
                                      str(config)], stdout=log, stderr=subprocess.STDOUT, cwd=self.dir,
                                     start_new_session=True)
        log.close()
        deadline = launched + start_timeout
        while not _answers(self.port):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                tail = self.log_tail()
                self.kill()
                raise RuntimeError(f"Kafka {KAFKA4_VERSION} did not answer within {start_timeout:.0f} s "
                                   f"(exit {self.proc.returncode}): {tail}")
            time.sleep(0.05)
        now = time.monotonic()
        self.answered_in_s = now - launched       # kafka.Kafka's JVM start to the first good answer
        self.started_in_s = now - begin           # format + start

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def kill(self, timeout: float = 30.0) -> None:
        """SIGTERM (a controlled shutdown), SIGKILL after `timeout` s; then the temporary directory goes."""
        if self.proc is not None and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self._remove_dir()

    def _remove_dir(self) -> None:
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
