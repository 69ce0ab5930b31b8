"""Apache Kafka's own assignors (the kafka-clients jar) as a bench peer: one long-lived JVM running
``java/AssignorDriver.java`` (compiled once per jar set into a cache directory), fed groups over a pipe.

The driver times ``assignor.assign(cluster, group)`` itself with System.nanoTime after warm-up calls, so
JVM start-up, JIT warm-up and the pipe are not in the figure. The jars are found in ``--java-jars DIR``,
else ``$KAFKAGROUP_KAFKA_JARS``, else ``<repo>/build/kafka-jars`` (``make kafka-jars`` extracts them);
without jars or a JDK, :func:`find_jars` / :class:`JavaAssignors` raise :class:`JavaUnavailable` with the
reason, which the bench shows in its report.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
import tempfile
import threading
import zipfile
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from kafkagroup.bench.idle import wait_idle
from kafkagroup.model import CompactGroup

STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky")
_SOURCE = "AssignorDriver.java"


class JavaTimeout(RuntimeError):
    """A request ran past its time limit (the driver was restarted)."""


class JavaUnavailable(RuntimeError):
    """No kafka-clients jar or no JDK: the Java peer cannot run (the message says why)."""


def find_jars(directory: str | os.PathLike[str] | None = None) -> list[Path]:
    """The jar files of the Java peer: `directory`, $KAFKAGROUP_KAFKA_JARS, or <repo>/build/kafka-jars."""
    candidates = [Path(directory)] if directory else []
    if not directory and os.environ.get("KAFKAGROUP_KAFKA_JARS"):
        candidates.append(Path(os.environ["KAFKAGROUP_KAFKA_JARS"]))
    if not directory:
        candidates.append(Path(__file__).resolve().parents[2] / "build" / "kafka-jars")
    for folder in candidates:
        jars = sorted(folder.glob("*.jar")) if folder.is_dir() else []
        if any(j.name.startswith("kafka-clients") for j in jars):
            return jars
    raise JavaUnavailable(f"not available (no kafka-clients jar in {', '.join(map(str, candidates))}; "
                          "run make kafka-jars)")


def _compile(jars: list[Path], source_name: str = _SOURCE) -> Path:
    """Compile a driver of java/ once per (source, jars) into ~/.cache/kafkagroup/bench-java/<hash>/."""
    for tool in ("java", "javac"):
        if shutil.which(tool) is None:
            raise JavaUnavailable(f"not available ({tool} not found; install a JDK >= 11)")
    source = resources.files("kafkagroup.bench").joinpath("java", source_name).read_bytes()
    key = hashlib.sha256(source + "\0".join(str(j) for j in jars).encode()).hexdigest()[:16]
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "kafkagroup" / "bench-java" / key
    if not (cache / source_name.replace(".java", ".class")).exists():
        cache.mkdir(parents=True, exist_ok=True)
        src = cache / source_name
        src.write_bytes(source)
        done = subprocess.run(["javac", "-nowarn", "-cp", os.pathsep.join(map(str, jars)), "-d", str(cache), str(src)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            raise JavaUnavailable(f"not available (javac failed: {done.stderr.strip()[:500]})")
    return cache


def _version(jars: list[Path]) -> str:
    """kafka-clients' version from the kafka/kafka-version.properties it carries ("" if unreadable)."""
    clients = next(j for j in jars if j.name.startswith("kafka-clients"))
    try:
        with zipfile.ZipFile(clients) as jar:
            text = jar.read("kafka/kafka-version.properties").decode()
    except (OSError, KeyError, zipfile.BadZipFile):
        return ""
    return next((line.split("=", 1)[1].strip() for line in text.splitlines() if line.startswith("version=")), "")


@dataclass
class JavaResult:
    assignment: list[np.ndarray]   # per member (request order): global partition ids, ascending
    times_ms: list[float]          # assign() per timed round


def _str(value: str) -> bytes:
    raw = value.encode()
    return struct.pack(">i", len(raw)) + raw


def _ints(values: np.ndarray) -> bytes:
    return np.asarray(values, dtype=">i4").tobytes()


class JavaAssignors:
    """The driver process; use as a context manager. One group at a time (the pipe is not shared)."""

    def __init__(self, jars_dir: str | os.PathLike[str] | None = None) -> None:
        self.jars = find_jars(jars_dir)
        classes = _compile(self.jars)
        self.name = f"Java kafka-clients {_version(self.jars)}".rstrip()
        self._classpath = os.pathsep.join([str(classes), *map(str, self.jars)])
        self._log = tempfile.TemporaryFile()  # the JVM's stderr (SLF4J notice, crashes): shown if it dies
        self._start()

    def _start(self) -> None:
        self._proc = subprocess.Popen(["java", "-Xss16m", "-XX:+UseParallelGC", "-cp", self._classpath, "AssignorDriver"],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._log)

    def __enter__(self) -> JavaAssignors:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def settle(self) -> float:
        """Wait until the JVM is idle (its JIT and collector done with the last call: kafkagroup.bench.idle);
        the seconds waited."""
        return wait_idle(self._proc.pid)

    def close(self) -> None:
        if self._proc.poll() is None:
            try:
                self._proc.stdin.write(_str(""))
                self._proc.stdin.close()
                self._proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self._proc.kill()
                self._proc.wait()

    def assign(self, strategy: str, group: CompactGroup, *, instance_ids: list[str | None] | None = None,
               warmup: int = 1, rounds: int = 1, budget_ms: int = 2000,
               timeout_s: float | None = None) -> JavaResult:
        """Run Java's `strategy` on `group` (rack ids of the compact arrays: 0 = none, names from
        group.racks or ``rack<i>``). Warm-up and timed calls stop early once they have used `budget_ms`
        (at least one timed call). Past `timeout_s` for the whole request the JVM is killed and started
        again, and :class:`JavaTimeout` is raised."""
        if strategy not in STRATEGIES:
            raise ValueError(f"unknown strategy {strategy!r}; Java has {', '.join(STRATEGIES)}")
        m = len(group.members)
        parts = [_str(strategy), struct.pack(">iiii", warmup, rounds, budget_ms, len(group.topics))]
        parts += [_str(t) for t in group.topics]
        parts.append(_ints(group.partition_count))
        has_racks = group.replica_offsets is not None or group.member_rack is not None
        rack_count = 0
        if has_racks:
            highest = max(int(np.max(group.member_rack, initial=0)) if group.member_rack is not None else 0,
                          int(np.max(group.replica_racks, initial=0)) if group.replica_racks is not None else 0)
            names = [(group.racks[i] if i < len(group.racks) and group.racks[i] else f"rack{i}")
                     for i in range(1, highest + 1)]
            rack_count = len(names)
            parts.append(struct.pack(">i", rack_count))
            parts += [_str(n) for n in names]
            if rack_count:
                total = int(group.partition_count.sum())
                if group.replica_offsets is not None:
                    offsets, racks = group.replica_offsets, group.replica_racks
                else:  # members have racks, partitions carry none
                    offsets, racks = np.zeros(total + 1, dtype=np.int64), np.zeros(0, dtype=np.int32)
                parts += [_ints(offsets), _ints(np.asarray(racks) - 1)]
        else:
            parts.append(struct.pack(">i", 0))
        parts.append(struct.pack(">i", m))
        for i, member in enumerate(group.members):
            instance = (instance_ids[i] if instance_ids else None) or ""
            rack = int(group.member_rack[i]) - 1 if group.member_rack is not None and rack_count else -1
            gen = int(group.generation[i]) if group.generation is not None else -1
            subs = group.sub_topics[group.sub_offsets[i]:group.sub_offsets[i + 1]]
            owned = (group.owned_partitions[group.owned_offsets[i]:group.owned_offsets[i + 1]]
                     if group.owned_offsets is not None else np.zeros(0, dtype=np.int32))
            if len(owned) == 0 and gen >= 0 and group.owned_offsets is None:
                gen = -1
            parts += [_str(member), _str(instance), struct.pack(">iii", rack, gen, len(subs)), _ints(subs),
                      struct.pack(">i", len(owned)), _ints(owned)]
        stdin = self._proc.stdin
        proc = self._proc
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            proc.kill()

        watchdog = threading.Timer(timeout_s, expire) if timeout_s else None
        if watchdog:
            watchdog.start()
        try:
            stdin.write(b"".join(parts))
            stdin.flush()
            (status,) = struct.unpack(">i", self._read(4))
            if status != 0:
                (length,) = struct.unpack(">i", self._read(4))
                raise RuntimeError(f"Java {strategy} failed: {self._read(length).decode()}")
            (count,) = struct.unpack(">i", self._read(4))
            times = list(struct.unpack(f">{count}d", self._read(8 * count)))
            assignment = []
            for _ in range(m):
                (n,) = struct.unpack(">i", self._read(4))
                assignment.append(np.frombuffer(self._read(4 * n), dtype=">i4").astype(np.int64))
        except (BrokenPipeError, EOFError) as e:
            if expired.is_set():
                proc.wait()
                for pipe in (proc.stdin, proc.stdout):
                    try:
                        pipe.close()
                    except OSError:
                        pass
                self._start()
                raise JavaTimeout(f"Java {strategy} did not answer within {timeout_s:g} s") from None
            self._log.seek(0)
            tail = self._log.read().decode(errors="replace")[-800:]
            raise RuntimeError(f"the Java driver died (exit code {self._proc.poll()}): {tail}") from e
        finally:
            if watchdog:
                watchdog.cancel()
        return JavaResult(assignment, times)

    def _read(self, n: int) -> bytes:
        data = self._proc.stdout.read(n)
        if len(data) != n:
            raise EOFError("short read from the Java driver")
        return data
