"""How long `kafkagroup serve` takes from start to its first answered request, and its resident memory then.

    python tools/serve_start.py [--runs 10] [--python PATH]

Each run starts ``PYTHON -m kafkagroup serve --listen 127.0.0.1:0``, reads the bound port from its first
line, sends an ApiVersions v0 request and waits for the answer; prints the median and min seconds and the
child's VmRSS at that point. Then the same for the in-process test node (kafkagroup.testing.start_server:
start to answer, and start + stop = the kafka_server fixture's cost per test). Run it on a quiet machine.
"""
from __future__ import annotations

import argparse
import resource
import socket
import statistics
import struct
import subprocess
import sys
import time


def api_versions(port: int) -> None:
    client = b"probe"
    body = struct.pack(">hhih", 18, 0, 1, len(client)) + client
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(struct.pack(">i", len(body)) + body)
        size = struct.unpack(">i", s.recv(4, socket.MSG_WAITALL))[0]
        answer = s.recv(size, socket.MSG_WAITALL)
        assert struct.unpack(">i", answer[:4])[0] == 1


def rss_mb(pid: int) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def subprocess_run(python: str) -> tuple[float, float, float]:
    """(wall seconds to the first answer, MB resident then, CPU seconds of the child's whole life)."""
    cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    child = subprocess.Popen([python, "-c", "import sys; from kafkagroup.cli import main; sys.exit(main())",
                              "serve", "--listen", "127.0.0.1:0", "--log-level", "error"],
                             stdout=subprocess.PIPE, text=True)
    port = int(child.stdout.readline().rsplit(":", 1)[1])
    api_versions(port)
    seconds = time.perf_counter() - started
    rss = rss_mb(child.pid)
    child.terminate()
    child.wait()
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    return seconds, rss, cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()
    runs = [subprocess_run(args.python) for _ in range(args.runs)]
    times = [t for t, _, _ in runs]
    print(f"serve subprocess ({args.python}), start -> first answer: median {statistics.median(times):.3f} s, "
          f"min {min(times):.3f} s; RSS {statistics.median(r for _, r, _ in runs):.0f} MB; CPU (start to exit) "
          f"median {statistics.median(c for _, _, c in runs):.3f} s")
    if args.python != sys.executable:
        return
    from kafkagroup.testing import start_server

    start_server().stop()          # imports done once, as in a test session
    first, whole = [], []
    for _ in range(args.runs * 5):
        t0 = time.perf_counter()
        server = start_server()
        api_versions(int(server.bootstrap.rsplit(":", 1)[1]))
        first.append(time.perf_counter() - t0)
        server.stop()
        whole.append(time.perf_counter() - t0)
    print(f"in process, start -> first answer: median {statistics.median(first) * 1000:.1f} ms, "
          f"min {min(first) * 1000:.1f} ms; start + answer + stop (the fixture per test): "
          f"median {statistics.median(whole) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
