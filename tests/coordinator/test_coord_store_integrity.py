"""A store file that cannot be trusted is refused at open, with an error naming the file (issue 10, defect 7).

Read-only, not a database, damaged pages: each used to surface as a bare ``sqlite3`` error without the
file's name (or, for damaged pages, to open and load with rows missing or wrong).  Now each is a
:class:`StoreError` (a kafkagroup error and an ``OSError``) naming the file, raised before anything is read
from or written to it.
"""
from __future__ import annotations

import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from kafkagroup.coordinator import GroupCoordinator, ManualClock, OffsetCommitRequest, StoreError
from kafkagroup.coordinator.store import GroupStore
from kafkagroup.errors import KafkaGroupError

REPO = Path(__file__).resolve().parents[2]
PAGE = 4096  # SQLite's default page size, the unit a torn write damages


def real_store(path: Path) -> None:
    """A store as a coordinator leaves it: 200 groups x 40 committed offsets, checkpointed and closed."""
    coord = GroupCoordinator(clock=ManualClock(), store=str(path), enable_offset_expiration=False)
    for g in range(200):
        offsets = {(f"topic-{t}", p): 1_000 + 10 * t + p for t in range(5) for p in range(8)}
        response = coord.offset_commit(OffsetCommitRequest.of(f"group-{g}", offsets))
        assert set(response.errors().values()) == {0}
    coord.shutdown()
    assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size == 0


def test_a_garbage_file_is_refused_naming_it(tmp_path: Path) -> None:
    path = tmp_path / "garbage.db"
    path.write_bytes(random.Random(7).randbytes(3 * PAGE))
    before = path.read_bytes()
    with pytest.raises(StoreError, match=rf"^group store {path}: cannot open: not an SQLite database") as info:
        GroupStore(str(path))
    assert isinstance(info.value, KafkaGroupError) and isinstance(info.value, OSError)
    assert info.value.path == str(path) and path.read_bytes() == before
    with pytest.raises(StoreError, match=str(path)):
        GroupCoordinator(clock=ManualClock(), store=str(path))


def test_a_missing_directory_is_refused_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "no-such-dir" / "g.db"
    with pytest.raises(StoreError, match=rf"^group store {path}: cannot open"):
        GroupStore(str(path))


def damage(data: bytes, pattern: str, seed: int) -> bytes:
    """Overwrite half-pages the way a torn or misdirected write would."""
    rng = random.Random(seed)
    pages = len(data) // PAGE
    out = bytearray(data)
    if pattern == "zeroed":
        targets, fill = [rng.randrange(2, pages)], lambda n: bytes(n)
    elif pattern == "random":
        targets, fill = rng.sample(range(2, pages), 3), rng.randbytes
    else:  # "last": the end of the file, where the newest pages are
        targets, fill = [pages - 1], rng.randbytes
    for page in targets:
        start = page * PAGE + PAGE // 2
        out[start:start + PAGE // 2] = fill(PAGE // 2)
    return bytes(out)


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("good") / "good.db"
    real_store(path)
    return path


@pytest.mark.parametrize("pattern", ["zeroed", "random", "last"])
@pytest.mark.parametrize("seed", range(3))
def test_damaged_pages_are_refused_at_open(tmp_path: Path, good: Path, pattern: str, seed: int) -> None:
    path = tmp_path / "damaged.db"
    path.write_bytes(damage(good.read_bytes(), pattern, seed))
    before = path.read_bytes()
    for check in ("full", "quick"):
        with pytest.raises(StoreError, match=rf"^group store {path}: .*damaged"):
            GroupStore(str(path), integrity_check=check)
    assert path.read_bytes() == before                      # the refusal wrote nothing
    with pytest.raises(StoreError, match=str(path)):
        GroupCoordinator(clock=ManualClock(), store=str(path), enable_offset_expiration=False)
    GroupStore(str(good)).close()                             # the undamaged original opens


def test_a_read_failing_after_open_names_the_file(tmp_path: Path, good: Path) -> None:
    """The file damaged while open (simulated: every statement of the read fails as SQLite reports it)."""
    path = tmp_path / "g.db"
    path.write_bytes(good.read_bytes())
    store = GroupStore(str(path))

    class Damaged:
        def execute(self, *args: object) -> None:
            raise sqlite3.DatabaseError("database disk image is malformed")

    store._db, real = Damaged(), store._db  # type: ignore[assignment]
    with pytest.raises(StoreError, match=rf"^group store {path}: reading offsets-topic partition 3 failed: "
                                         r"the file is damaged \(database disk image is malformed\)"):
        store.load_partition(3)
    real.close()


@pytest.mark.parametrize("what", ["file", "directory"])
def test_a_read_only_store_is_refused_at_open_naming_it(what: str) -> None:
    directory = Path(tempfile.mkdtemp(prefix="kg-store-"))   # under /tmp: reachable by the unprivileged child
    path = directory / "g.db"
    real_store(path)
    if what == "file":
        path.chmod(0o444)
        directory.chmod(0o755)
        expected = f"group store {path}: the file is read-only"
    else:
        path.chmod(0o666)
        directory.chmod(0o555)
        expected = f"group store {path}: its directory {directory} is not writable"
    try:
        if os.geteuid() != 0:
            with pytest.raises(StoreError) as info:
                GroupCoordinator(clock=ManualClock(), store=str(path))
            assert str(info.value).startswith(expected)
            return
        # root writes through file modes: open it as nobody (imports first: the interpreter may be under /root)
        code = textwrap.dedent(f"""
            import os
            from kafkagroup.coordinator import GroupCoordinator, ManualClock, StoreError
            os.setgid(65534); os.setuid(65534)
            try:
                GroupCoordinator(clock=ManualClock(), store={str(path)!r})
            except StoreError as e:
                print(e)
        """)
        done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith(expected), done.stdout
    finally:
        directory.chmod(0o755)
        shutil.rmtree(directory)


def test_a_newer_schema_is_still_a_value_error_and_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "future.db"
    GroupStore(str(path)).close()
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA user_version = 99")
    with pytest.raises(StoreError, match=rf"^group store {path}: store schema version 99 is newer") as info:
        GroupStore(str(path))
    assert isinstance(info.value, ValueError)


def test_integrity_check_choices() -> None:
    with pytest.raises(ValueError, match="integrity_check must be 'full', 'quick' or 'off'"):
        GroupStore(":memory:", integrity_check="yes")  # type: ignore[arg-type]
