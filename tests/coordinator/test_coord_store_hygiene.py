"""Opening a store path: only a kafkagroup store is opened; a new one is private to its owner (issue 24).

An empty file (a truncated store, a mistyped path touched by another tool) used to open silently as a new,
empty store: every committed offset gone, no warning.  Such a file, and an SQLite database that is not a
store, are refused naming the path; a new store and its -wal/-shm files are created 0600.
"""
from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from kafkagroup.coordinator.errors import StoreError
from kafkagroup.coordinator.store import GroupStore
from kafkagroup.coordinator.group import OffsetAndMetadata
from kafkagroup.structs import TopicPartition

REPO = Path(__file__).resolve().parents[2]


def test_an_empty_file_is_refused_naming_it(tmp_path):
    path = tmp_path / "groups.sqlite"
    path.write_bytes(b"")
    with pytest.raises(StoreError, match="empty") as info:
        GroupStore(str(path))
    assert str(path) in str(info.value)
    assert path.read_bytes() == b""                       # untouched


def test_a_database_that_is_not_a_store_is_refused(tmp_path):
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE invoices (id INTEGER)")
    with pytest.raises(StoreError, match="not a kafkagroup store.*invoices") as info:
        GroupStore(str(path))
    assert str(path) in str(info.value)
    with sqlite3.connect(path) as db:                     # nothing was added to it
        assert [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")] == ["invoices"]


def test_a_new_store_is_private_and_reopens(tmp_path):
    path = tmp_path / "groups.sqlite"
    old = os.umask(0o022)
    try:
        with GroupStore(str(path)) as store:
            store.store_offsets("g", 0, [(TopicPartition("t", 0), OffsetAndMetadata(42, -1, "", 1, None))])
            for name in (path, Path(str(path) + "-wal"), Path(str(path) + "-shm")):
                if name.exists():
                    assert stat.S_IMODE(name.stat().st_mode) == 0o600, name
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    with GroupStore(str(path)) as store:                  # its own file opens again
        assert store.load_partition(0).offsets["g"][TopicPartition("t", 0)].committed_offset == 42


def test_serve_refuses_an_empty_store_without_a_traceback(tmp_path):
    path = tmp_path / "groups.sqlite"
    path.write_bytes(b"")
    done = subprocess.run([sys.executable, "-m", "kafkagroup.cli", "serve", "--listen", "127.0.0.1:0",
                           "--store", str(path)], capture_output=True, text=True, timeout=60, cwd=REPO,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.returncode == 2
    assert str(path) in done.stderr and "not a kafkagroup store" in done.stderr
    assert "Traceback" not in done.stderr
