"""``kafkagroup serve`` as a user runs it: first stdout line, signals, exit code, the store across restarts,
and mistakes answered without a traceback."""
from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from server_wire import KafkaWire
from test_server_groups import commit, fetch_offsets

ROOT = Path(__file__).resolve().parents[2]


def start(*args: str) -> tuple[subprocess.Popen, tuple[str, int]]:
    proc = subprocess.Popen([sys.executable, "-m", "kafkagroup.cli", "serve", "--listen", "127.0.0.1:0", *args],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    match = re.fullmatch(r"kafkagroup serve: listening on (127\.0\.0\.1):(\d+)\n", line)
    if not match:
        proc.kill()                                   # never leave a server behind
        _, err = proc.communicate(timeout=30)
        raise AssertionError(f"first line {line!r}; stderr: {err[-2000:]}")
    return proc, (match.group(1), int(match.group(2)))


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_store_survives_a_restart_and_signals_exit_zero(tmp_path, sig):
    store = str(tmp_path / "groups.sqlite")
    proc, address = start("--store", store, "--topic", "orders:3", "--config", "group.initial.rebalance.delay.ms=0")
    try:
        wire = KafkaWire(address)
        assert commit(wire, 9, "g", {("orders", 2): 1234}).topics[0].partitions[0].error_code == 0
        wire.close()
    finally:
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err

    proc, address = start("--store", store)
    try:
        wire = KafkaWire(address)
        assert fetch_offsets(wire, 8, "g", [("orders", 2)])[("orders", 2)][0] == 1234
        wire.close()
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=30)
    assert proc.returncode == 0


@pytest.mark.parametrize("args,message", [
    (["--listen", "nohost"], "is not HOST:PORT"),
    (["--topic", "orders"], "expected NAME:PARTITIONS"),
    (["--topic", "orders:x"], "is not a number"),
    (["--topic", "bad/name:3"], "illegal topic name"),
    (["--config", "no.such.key=1"], "unknown coordinator config"),
    (["--config", "num.partitions=zero"], "num.partitions must be an integer"),
    (["--config", "socket.request.max.bytes=0"], "at least 1"),
    (["--store", "/nonexistent-dir/x/groups.sqlite"], "kafkagroup serve:"),
])
def test_mistakes_are_one_line_errors(args, message):
    cmd = [sys.executable, "-m", "kafkagroup.cli", "serve", "--listen", "127.0.0.1:0", *args]
    if args[0] == "--listen":
        cmd = [sys.executable, "-m", "kafkagroup.cli", "serve", *args]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_help_names_every_config_key():
    done = subprocess.run([sys.executable, "-m", "kafkagroup.cli", "serve", "--help"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    for key in ("--listen", "--store", "--topic", "--config", "group.initial.rebalance.delay.ms",
                "group.min.session.timeout.ms", "group.max.session.timeout.ms", "num.partitions",
                "socket.request.max.bytes", "offsets.retention.minutes", "log.retention.bytes", "IN MEMORY"):
        assert key in done.stdout, key
