"""Heavy and hostile clients against a `kafkagroup serve` process, and what they do to it (issue 24).

A live three-member group heartbeats (raw wire members: each heartbeat's round trip is timed) while other
connections pipeline large Fetch requests (reading their answers, or never reading them), pipeline Metadata
requests for 1,000 topics, and park Fetches then vanish.  The server's RSS is sampled throughout.

    python tests/server/hostile_clients.py --seconds 60                 # this tree
    python tests/server/hostile_clients.py --seconds 60 --root /tmp/old # another checkout's kafkagroup

prints one JSON line: idle and peak RSS, the answer bound, the worst heartbeat latency, members expelled,
requests answered, and whether the server survived.  tests/server/test_server_hostile.py runs it briefly
(``make test``); ``make soak`` runs it for 60 s.  The server gets an address-space cap (``--max-memory``) so
that an unbounded server fails with MemoryError instead of taking the machine.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))

from server_wire import KafkaWire, body, encode_request, nested, record_batch  # noqa: E402

JOIN, SYNC, HEARTBEAT, METADATA, FETCH, PRODUCE = 11, 14, 12, 3, 1, 0
NONE, REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID, MEMBER_ID_REQUIRED = 0, 27, 25, 79
MiB = 1024 * 1024


class Serve:
    """`kafkagroup serve` as a process of the kafkagroup tree at ``root``; every stderr line kept."""

    def __init__(self, *, root: Path = REPO, topics: dict[str, int] | None = None,
                 config: dict[str, Any] | None = None, nofile: int | None = None,
                 max_memory: int | None = None, log_level: str = "info", store: str | None = None) -> None:
        argv = [sys.executable, "-m", "kafkagroup.cli", "serve", "--listen", "127.0.0.1:0", "--log-level", log_level]
        for name, partitions in (topics or {}).items():
            argv += ["--topic", f"{name}:{partitions}"]
        for key, value in (config or {}).items():
            argv += ["--config", f"{key}={value}"]
        if store:
            argv += ["--store", store]

        def limits() -> None:
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
            if max_memory is not None:
                resource.setrlimit(resource.RLIMIT_AS, (max_memory, max_memory))

        self.stderr: list[str] = []
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=root,
                                     env={**os.environ, "PYTHONPATH": str(root)}, preexec_fn=limits)
        threading.Thread(target=self._read_stderr, daemon=True).start()
        line = self._first_line()
        prefix = "kafkagroup serve: listening on "
        if not line.startswith(prefix):
            self.kill()
            raise RuntimeError(f"kafkagroup serve did not start: {line!r} {self.stderr[-10:]}")
        host, port = line[len(prefix):].strip().rsplit(":", 1)
        self.address = (host, int(port))
        threading.Thread(target=lambda: [None for _ in self.proc.stdout], daemon=True).start()  # type: ignore[union-attr]

    def _first_line(self) -> str:
        got: list[str] = []
        reader = threading.Thread(target=lambda: got.append(self.proc.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        reader.start()
        reader.join(60)
        return got[0] if got else ""

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:  # type: ignore[union-attr]
            self.stderr.append(line.rstrip("\n"))

    def alive(self) -> bool:
        return self.proc.poll() is None

    def rss(self) -> int:
        """Resident set size in bytes (0 once the process is gone)."""
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return 0

    def open_fds(self) -> int:
        return len(os.listdir(f"/proc/{self.proc.pid}/fd"))

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


# ------------------------------------------------------------------------------------------------ requests
def frame(api_key: int, version: int, entity: Any, correlation_id: int = 1) -> bytes:
    return encode_request(api_key, version, correlation_id, entity)


def fetch_frame(topic: str, partitions: int | tuple[int, ...], *, max_bytes: int = 2**31 - 1, max_wait_ms: int = 0,
                min_bytes: int = 1, correlation_id: int = 1) -> bytes:
    """A Fetch v11 from offset 0 of ``partitions`` (a count: 0..n-1; or the partition ids)."""
    v = 11
    ids = range(partitions) if isinstance(partitions, int) else partitions
    parts = tuple(nested(FETCH, v, "FetchPartition", partition=p, current_leader_epoch=-1, fetch_offset=0,
                         last_fetched_epoch=-1, log_start_offset=-1, partition_max_bytes=max_bytes)
                  for p in ids)
    return frame(FETCH, v, body(FETCH, v, replica_id=-1, max_wait=max_wait_ms, min_bytes=min_bytes,
                                max_bytes=max_bytes, isolation_level=0, session_id=0, session_epoch=-1,
                                topics=(nested(FETCH, v, "FetchTopic", topic=topic, partitions=parts),),
                                forgotten_topics_data=(), rack_id=""), correlation_id)


def metadata_frame(topics: list[str], correlation_id: int = 1) -> bytes:
    v = 9
    return frame(METADATA, v, body(METADATA, v, topics=tuple(nested(METADATA, v, "MetadataRequestTopic", name=t)
                                                             for t in topics),
                                   allow_auto_topic_creation=True, include_cluster_authorized_operations=False,
                                   include_topic_authorized_operations=False), correlation_id)


def produce(address: tuple[str, int], topic: str, partition: int, total_bytes: int, batch_bytes: int) -> None:
    """Fill a partition with batches of about ``batch_bytes`` (incompressible values)."""
    v = 8
    value = os.urandom(batch_bytes - 200)
    with KafkaWire(address, timeout=60) as wire:
        for _ in range(max(1, total_bytes // batch_bytes)):
            data = nested(PRODUCE, v, "PartitionProduceData", index=partition, records=record_batch([value]))
            r = wire.request(PRODUCE, v, body(PRODUCE, v, transactional_id=None, acks=1, timeout=30_000,
                                               topic_data=(nested(PRODUCE, v, "TopicProduceData", name=topic,
                                                                  partition_data=(data,)),)))
            assert r.responses[0].partition_responses[0].error_code == NONE, r


def read_frames(sock: socket.socket, count: int) -> int:
    """Read ``count`` answers (size-prefixed frames); the bytes read."""
    total = 0
    for _ in range(count):
        (size,) = struct.unpack(">i", _exactly(sock, 4))
        remaining = size
        while remaining:
            chunk = sock.recv(min(remaining, 1 << 20))
            if not chunk:
                raise ConnectionError("closed by the server")
            remaining -= len(chunk)
        total += 4 + size
    return total


def _exactly(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("closed by the server")
        data += chunk
    return data


# ------------------------------------------------------------------------------------------------ the group
class WireMember(threading.Thread):
    """A consumer group member on the raw wire: join, sync, then heartbeat every ``heartbeat_ms`` and time
    each round trip.  ``rejoins`` counts the times the group made it rejoin once ``stable`` was set (a
    member expelled, or a rebalance caused by one)."""

    def __init__(self, address: tuple[str, int], group: str, name: str, session_ms: int, heartbeat_ms: int) -> None:
        super().__init__(daemon=True, name=name)
        self.address, self.group = address, group
        self.session_ms, self.heartbeat_ms = session_ms, heartbeat_ms
        self.stop_event = threading.Event()
        self.generation = -1
        self.member_id = ""
        self.joined = threading.Event()
        self.stable = False
        self.rejoins = 0
        self.errors: list[str] = []
        self.latencies: list[float] = []

    def _join(self, wire: KafkaWire) -> None:
        v = 5
        while True:
            r = wire.request(JOIN, v, body(JOIN, v, group_id=self.group, session_timeout=self.session_ms,
                                           rebalance_timeout=self.session_ms, member_id=self.member_id,
                                           group_instance_id=None, protocol_type="consumer",
                                           protocols=(nested(JOIN, v, "JoinGroupRequestProtocol", name="range",
                                                             metadata=b""),)))
            if r.error_code == MEMBER_ID_REQUIRED:
                self.member_id = r.member_id
                continue
            if r.error_code == UNKNOWN_MEMBER_ID:
                self.member_id = ""
                continue
            assert r.error_code == NONE, r
            self.member_id, self.generation = r.member_id, r.generation_id
            assignments = tuple(nested(SYNC, v, "SyncGroupRequestAssignment", member_id=m.member_id, assignment=b"")
                                for m in r.members)
            s = wire.request(SYNC, v, body(SYNC, v, group_id=self.group, generation_id=self.generation,
                                           member_id=self.member_id, group_instance_id=None,
                                           assignments=assignments))
            if s.error_code == NONE:
                self.joined.set()
                return
            if s.error_code not in (REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID):
                raise AssertionError(s)

    def run(self) -> None:
        try:
            with KafkaWire(self.address, timeout=60) as wire:
                self._join(wire)
                v = 3
                while not self.stop_event.wait(self.heartbeat_ms / 1000):
                    start = time.perf_counter()
                    r = wire.request(HEARTBEAT, v, body(HEARTBEAT, v, group_id=self.group,
                                                        generation_id=self.generation, member_id=self.member_id,
                                                        group_instance_id=None))
                    elapsed = time.perf_counter() - start
                    if self.stable:
                        self.latencies.append(elapsed)
                    if r.error_code != NONE:
                        if self.stable:
                            self.rejoins += 1
                            self.errors.append(f"heartbeat error {r.error_code}")
                        self.joined.clear()
                        if r.error_code == UNKNOWN_MEMBER_ID:
                            self.member_id = ""
                        self._join(wire)
        except Exception as e:   # reported, not raised: the thread's caller reads it
            self.errors.append(f"{type(e).__name__}: {e}")


def live_group(address: tuple[str, int], group: str, members: int = 3, session_ms: int = 10_000,
               heartbeat_ms: int = 200, timeout: float = 60) -> list[WireMember]:
    """Members joined into one stable generation (all heartbeating without error)."""
    group_members = [WireMember(address, group, f"m{i}", session_ms, heartbeat_ms) for i in range(members)]
    for m in group_members:
        m.start()
    deadline = time.monotonic() + timeout
    while True:
        if all(m.joined.is_set() for m in group_members) and len({m.generation for m in group_members}) == 1:
            time.sleep(3 * heartbeat_ms / 1000)
            if all(m.joined.is_set() for m in group_members) and len({m.generation for m in group_members}) == 1:
                break
        if time.monotonic() > deadline or any(m.errors for m in group_members):
            raise RuntimeError(f"the group did not settle: {[(m.generation, m.errors) for m in group_members]}")
        time.sleep(0.05)
    for m in group_members:
        m.stable = True
    return group_members


# ------------------------------------------------------------------------------------------------ the floods
class Flood(threading.Thread):
    """Pipeline ``burst`` copies of ``request`` on one connection, read the answers (or not: ``read=False``,
    a client that never reads), again until stopped."""

    def __init__(self, address: tuple[str, int], request: bytes, burst: int, read: bool = True) -> None:
        super().__init__(daemon=True)
        self.address, self.request, self.burst, self.read = address, request, burst, read
        self.stop_event = threading.Event()
        self.answered = 0
        self.bytes_read = 0
        self.error: str | None = None

    def run(self) -> None:
        try:
            with socket.create_connection(self.address, timeout=120) as sock:
                burst = self.request * self.burst
                while not self.stop_event.is_set():
                    if self.read:
                        sock.sendall(burst)
                        self.bytes_read += read_frames(sock, self.burst)
                        self.answered += self.burst
                    else:
                        sock.settimeout(1.0)
                        try:
                            sock.sendall(burst)
                        except socket.timeout:
                            pass      # the server stopped reading us: what a broker does
        except Exception as e:
            if not self.stop_event.is_set():
                self.error = f"{type(e).__name__}: {e}"


class ParkedFetchChurn(threading.Thread):
    """Open ``batch`` connections that each park a Fetch (long max_wait on an idle partition), then vanish;
    again until stopped."""

    def __init__(self, address: tuple[str, int], topic: str, batch: int) -> None:
        super().__init__(daemon=True)
        self.address, self.topic, self.batch = address, topic, batch
        self.stop_event = threading.Event()
        self.parked = 0

    def run(self) -> None:
        request = fetch_frame(self.topic, 1, max_wait_ms=600_000, min_bytes=1)
        while not self.stop_event.is_set():
            socks = []
            try:
                for _ in range(self.batch):
                    s = socket.create_connection(self.address, timeout=10)
                    s.sendall(request)
                    socks.append(s)
                self.parked += len(socks)
            except OSError:
                pass
            self.stop_event.wait(0.5)
            for s in socks:
                s.close()


def metadata_topics(count: int) -> list[str]:
    return [f"topic-{i:04d}-of-the-metadata-flood" for i in range(count)]


def floods(address: tuple[str, int], seconds: float, fetch_burst: int, metadata_burst: int, parked: int,
           topic_count: int) -> dict[str, Any]:
    """The flooding client (run in a process of its own by :func:`soak`, so that its threads do not delay
    the members' heartbeats inside this interpreter): what it got answered."""
    threads = [Flood(address, fetch_frame("big", 1), fetch_burst),
               Flood(address, fetch_frame("big", 1), fetch_burst, read=False),
               Flood(address, metadata_frame(metadata_topics(topic_count)), metadata_burst),
               ParkedFetchChurn(address, "idle", parked)]
    for t in threads:
        t.start()
    time.sleep(seconds)
    for t in threads:
        t.stop_event.set()
    for t in threads:
        t.join(30)
    return {"fetch_answers": threads[0].answered, "fetch_bytes": threads[0].bytes_read,
            "metadata_answers": threads[2].answered, "parked_fetches": threads[3].parked,
            "flood_errors": [t.error for t in threads if getattr(t, "error", None)]}


def start_flood(address: tuple[str, int], seconds: float, *, fetch_burst: int = 16, metadata_burst: int = 32,
                parked: int = 50, topic_count: int = 1000) -> subprocess.Popen[str]:
    """:func:`floods` in a process of its own (this file with ``--flood``)."""
    return subprocess.Popen([sys.executable, __file__, "--flood", f"{address[0]}:{address[1]}",
                             "--seconds", str(seconds), "--fetch-burst", str(fetch_burst),
                             "--metadata-burst", str(metadata_burst), "--parked", str(parked),
                             "--topics", str(topic_count)], stdout=subprocess.PIPE, text=True)


def finish_flood(flooder: subprocess.Popen[str]) -> dict[str, Any]:
    out, _ = flooder.communicate(timeout=120)
    return json.loads(out) if out.strip() else {"flood_errors": ["the flooding process printed nothing"]}


def prepare(server: Serve, log_mib: int, topic_count: int) -> None:
    """The flood's data: ``log_mib`` in topic big (1 MiB batches), and the Metadata flood's topics."""
    produce(server.address, "big", 0, log_mib * MiB, MiB)
    with KafkaWire(server.address, timeout=120) as wire:     # created once (auto-creation)
        wire.send_raw(metadata_frame(metadata_topics(topic_count)))
        wire.read_frame()


def soak(seconds: float, *, root: Path = REPO, log_mib: int = 64, answer_bound_mib: int = 256,
         max_memory_mib: int = 3072, fetch_burst: int = 16, metadata_burst: int = 32, parked: int = 50,
         topic_count: int = 1000, session_ms: int = 10_000, baseline_seconds: float = 5.0) -> dict[str, Any]:
    """The issue's scenario for ``seconds``; the figures as a dict."""
    config: dict[str, Any] = {"group.initial.rebalance.delay.ms": 0, "num.partitions": 1,
                              "group.min.session.timeout.ms": min(session_ms, 6000),
                              "log.retention.bytes": 2 * log_mib * MiB}
    if (root / "kafkagroup" / "server" / "answer_budget.py").exists():
        config["queued.max.answer.bytes"] = answer_bound_mib * MiB
    server = Serve(root=root, topics={"big": 1, "idle": 1}, config=config, max_memory=max_memory_mib * MiB,
                   log_level="warning")
    result: dict[str, Any] = {"seconds": seconds, "root": str(root), "log_mib": log_mib,
                              "answer_bound_mib": answer_bound_mib}
    members: list[WireMember] = []
    flooder: subprocess.Popen[str] | None = None
    try:
        prepare(server, log_mib, topic_count)
        time.sleep(1.0)
        result["idle_rss_mib"] = round(server.rss() / MiB, 1)
        members = live_group(server.address, "live", session_ms=session_ms)
        # the same heartbeats with no flood first: what this machine's load alone does to them
        time.sleep(baseline_seconds)
        baseline = sorted(x for m in members for x in m.latencies)
        for m in members:
            m.latencies.clear()
        result["no_flood_heartbeats"] = len(baseline)
        result["no_flood_worst_heartbeat_ms"] = round(1000 * baseline[-1], 1) if baseline else None
        result["no_flood_p99_heartbeat_ms"] = round(1000 * baseline[int(0.99 * (len(baseline) - 1))], 1) \
            if baseline else None
        flooder = start_flood(server.address, seconds, fetch_burst=fetch_burst, metadata_burst=metadata_burst,
                              parked=parked, topic_count=topic_count)
        peak = 0
        while flooder.poll() is None and server.alive():
            peak = max(peak, server.rss())
            time.sleep(0.2)
        result["peak_rss_mib"] = round(peak / MiB, 1)
        result.update(finish_flood(flooder))
    finally:
        if flooder is not None and flooder.poll() is None:
            flooder.kill()
            flooder.wait(10)
        for m in members:
            m.stop_event.set()
        for m in members:
            m.join(30)
        result["server_alive"] = server.alive()
        result["server_exit"] = None if server.alive() else server.proc.returncode
        server.stop()
    latencies = [x for m in members for x in m.latencies]
    result["heartbeats"] = len(latencies)
    result["worst_heartbeat_ms"] = round(1000 * max(latencies), 1) if latencies else None
    ordered = sorted(latencies)
    for name, q in (("median", 0.5), ("p99", 0.99)):
        result[f"{name}_heartbeat_ms"] = round(1000 * ordered[int(q * (len(ordered) - 1))], 1) if ordered else None
    result["heartbeats_over_100ms"] = sum(x > 0.1 for x in latencies)
    result["load_average"] = os.getloadavg()[0]
    result["rejoins"] = sum(m.rejoins for m in members)
    result["member_errors"] = [e for m in members for e in m.errors]
    result["memory_errors"] = sum("MemoryError" in line for line in server.stderr)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--root", type=Path, default=REPO, help="the kafkagroup tree whose server runs")
    parser.add_argument("--log-mib", type=int, default=64)
    parser.add_argument("--answer-bound-mib", type=int, default=256)
    parser.add_argument("--max-memory-mib", type=int, default=3072)
    parser.add_argument("--fetch-burst", type=int, default=16)
    parser.add_argument("--metadata-burst", type=int, default=32)
    parser.add_argument("--parked", type=int, default=50)
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--baseline-seconds", type=float, default=10,
                        help="heartbeats timed with no flood first (the machine's own latency)")
    parser.add_argument("--flood", metavar="HOST:PORT", help="only be the flooding client of a running server")
    args = parser.parse_args()
    if args.flood:
        host, port = args.flood.rsplit(":", 1)
        print(json.dumps(floods((host, int(port)), args.seconds, args.fetch_burst, args.metadata_burst, args.parked,
                                args.topics)))
        return
    result = soak(args.seconds, root=args.root, log_mib=args.log_mib, answer_bound_mib=args.answer_bound_mib,
                  max_memory_mib=args.max_memory_mib, fetch_burst=args.fetch_burst,
                  metadata_burst=args.metadata_burst, parked=args.parked, topic_count=args.topics,
                  baseline_seconds=args.baseline_seconds)
    print(json.dumps(result))
    problems = soak_problems(result)
    for problem in problems:
        print(f"FAILED: {problem}", file=sys.stderr)
    sys.exit(1 if problems else 0)


def soak_problems(result: dict[str, Any]) -> list[str]:
    """What the issue's targets say went wrong in a :func:`soak` (the heartbeat latency is reported, not
    judged: it depends on the machine's load)."""
    problems = []
    if not result.get("server_alive") or result.get("memory_errors"):
        problems.append(f"the server died (exit {result.get('server_exit')}, MemoryError lines "
                        f"{result.get('memory_errors')})")
    if "peak_rss_mib" in result and result["peak_rss_mib"] >= 2 * result["idle_rss_mib"] + result["answer_bound_mib"]:
        problems.append(f"peak RSS {result['peak_rss_mib']} MiB >= 2 x idle {result['idle_rss_mib']} MiB + "
                        f"the answer bound {result['answer_bound_mib']} MiB")
    if result.get("rejoins") or result.get("member_errors"):
        problems.append(f"members expelled or failing: {result.get('rejoins')} rejoins, {result.get('member_errors')}")
    if not result.get("fetch_answers") or not result.get("metadata_answers") or result.get("flood_errors"):
        problems.append(f"floods not answered: {result.get('fetch_answers')} fetches, "
                        f"{result.get('metadata_answers')} metadata, errors {result.get('flood_errors')}")
    return problems


if __name__ == "__main__":
    main()
