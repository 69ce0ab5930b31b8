"""spark-plan in local mode listens on the loopback address only, with Spark's web UI off (issue 25).

Before, a local spark-plan bound the driver to the machine's external address and opened Spark's UI on
every interface (port 4040). The test starts the session spark-plan starts and reads which addresses
the JVM listens on from /proc (its sockets in LISTEN state), so it judges what the network sees.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from kafkagroup.spark.cli import _session, session_settings

pytestmark = pytest.mark.spark


def _listening_addresses(pid: int) -> list[str]:
    """host:port of every TCP socket process ``pid`` listens on (IPv4 and IPv6)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[len("socket:["):-1])
    found = []
    for table, width in (("tcp", 8), ("tcp6", 32)):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state != "0A" or inode not in inodes:      # 0A = LISTEN
                continue
            host_hex, port_hex = local.split(":")
            raw = bytes.fromhex(host_hex)
            if width == 8:
                host = ".".join(str(b) for b in raw[::-1])
            else:   # four little-endian 32-bit words
                words = [raw[i:i + 4][::-1] for i in range(0, 16, 4)]
                host = b"".join(words).hex()
            found.append(f"{host}:{int(port_hex, 16)}")
    return found


def _is_loopback(address: str) -> bool:
    host = address.rsplit(":", 1)[0]
    return host.startswith("127.") or host in ("0" * 31 + "1", "0" * 20 + "ffff7f000001")


def test_local_settings_bind_to_loopback_and_turn_the_ui_off() -> None:
    settings = session_settings("local[2]")
    assert settings["spark.driver.bindAddress"] == settings["spark.driver.host"] == "127.0.0.1"
    assert settings["spark.ui.enabled"] == "false"
    assert session_settings("local[2]", ui=True)["spark.ui.enabled"] == "true"
    assert session_settings("local[2]", [("spark.ui.enabled", "true")])["spark.ui.enabled"] == "true"
    cluster = session_settings("spark://10.0.0.1:7077")      # executors elsewhere must reach the driver
    assert "spark.driver.bindAddress" not in cluster and "spark.ui.enabled" not in cluster


def test_a_local_session_listens_on_loopback_only() -> None:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark, owned = _session("local[1]")
    try:
        assert owned
        assert spark.sparkContext.uiWebUrl is None          # no UI
        jvm = spark.sparkContext._gateway.proc.pid
        addresses = _listening_addresses(jvm)
        assert addresses, "the driver listens somewhere (its RPC endpoint)"
        assert all(_is_loopback(a) for a in addresses), addresses
    finally:
        spark.stop()
