"""Durable group metadata and offsets in SQLite (the coordinator's ``__consumer_offsets``).

What is written, and when (as Kafka appends to ``__consumer_offsets``):

* group metadata -- when the leader's SyncGroup completes a generation, when a join phase ends with no
  members (Empty), when a static member is replaced in a Stable group; a group row is deleted (Kafka's
  tombstone) when the group is deleted or expires.  Like Kafka's ``GroupMetadataValue`` a member row keeps
  only the metadata of the *selected* protocol, plus its assignment.
* offsets -- one transaction per OffsetCommit request, before the response is sent.

Every write is one SQLite transaction: it either commits entirely or leaves nothing behind.  A failed
write raises :class:`~kafkagroup.coordinator.errors.StoreWriteError` carrying a Kafka append error; the
coordinator maps it to response codes (§2.9, §2.6).  ``inject_failure`` makes the next write(s) fail
*after* their statements ran, just before COMMIT, so tests see the rollback.

Durability: a file database runs in WAL mode with ``synchronous=FULL`` by default, so an acknowledged
write survives a process or OS crash (pass ``synchronous="NORMAL"`` to trade OS-crash durability for
speed).  ``":memory:"`` is for tests and simulations and must be given explicitly (there is no default
path: a forgotten one would silently lose acknowledged commits on restart).  The connection is used from one thread (the coordinator's).

Limits: the offsets-topic partition of a group is stored with its rows to load one partition at a time;
it assumes ``offsets.topic.num.partitions`` does not change for an existing database (Kafka cannot
change it either).
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from typing import Iterable, Literal

from kafkagroup.coordinator.errors import ErrorCode, StoreWriteError
from kafkagroup.coordinator.group import OffsetAndMetadata
from kafkagroup.structs import TopicPartition

__all__ = ["GroupStore", "GroupRecord", "MemberRecord", "PartitionSnapshot"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS groups (
    group_id        TEXT PRIMARY KEY,
    partition       INTEGER NOT NULL,
    protocol_type   TEXT,
    generation_id   INTEGER NOT NULL,
    protocol_name   TEXT,
    leader_id       TEXT,
    state_timestamp INTEGER
);
CREATE INDEX IF NOT EXISTS groups_by_partition ON groups(partition);
CREATE TABLE IF NOT EXISTS members (
    group_id             TEXT NOT NULL,
    position             INTEGER NOT NULL,
    member_id            TEXT NOT NULL,
    group_instance_id    TEXT,
    client_id            TEXT NOT NULL,
    client_host          TEXT NOT NULL,
    rebalance_timeout_ms INTEGER NOT NULL,
    session_timeout_ms   INTEGER NOT NULL,
    subscription         BLOB NOT NULL,
    assignment           BLOB NOT NULL,
    PRIMARY KEY (group_id, position)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS offsets (
    group_id         TEXT NOT NULL,
    topic            TEXT NOT NULL,
    partition_index  INTEGER NOT NULL,
    partition        INTEGER NOT NULL,
    committed_offset INTEGER NOT NULL,
    leader_epoch     INTEGER NOT NULL,
    metadata         TEXT NOT NULL,
    commit_timestamp INTEGER NOT NULL,
    expire_timestamp INTEGER,
    PRIMARY KEY (group_id, topic, partition_index)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS offsets_by_partition ON offsets(partition);
"""


@dataclass(slots=True)
class MemberRecord:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes          # metadata of the selected protocol
    assignment: bytes


@dataclass(slots=True)
class GroupRecord:
    group_id: str
    partition: int
    protocol_type: str | None
    generation_id: int
    protocol_name: str | None
    leader_id: str | None
    state_timestamp: int | None
    members: list[MemberRecord] = field(default_factory=list)


@dataclass(slots=True)
class PartitionSnapshot:
    """Everything stored for one offsets-topic partition."""

    groups: dict[str, GroupRecord]
    offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]]


WriteKind = Literal["group", "offsets", "any"]


class GroupStore:
    """SQLite-backed store of group metadata and committed offsets, opened by path (``":memory:"`` ok)."""

    def __init__(self, path: str, *, synchronous: str = "FULL") -> None:
        if synchronous.upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"synchronous must be OFF, NORMAL, FULL or EXTRA, not {synchronous!r}")
        self.path = path
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        if path != ":memory:":
            self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(f"PRAGMA synchronous={synchronous.upper()}")
        self._db.executescript(_SCHEMA)
        self._failures: list[tuple[WriteKind, ErrorCode]] = []

    # ------------------------------------------------------------ failure injection

    def inject_failure(self, code: ErrorCode | int, *, kind: WriteKind = "any", times: int = 1) -> None:
        """Make the next ``times`` writes of ``kind`` fail with Kafka append error ``code`` (rolled back)."""
        for _ in range(times):
            self._failures.append((kind, ErrorCode(code)))

    def clear_failures(self) -> None:
        self._failures.clear()

    def _take_failure(self, kind: WriteKind) -> ErrorCode | None:
        for i, (target, code) in enumerate(self._failures):
            if target == "any" or target == kind:
                del self._failures[i]
                return code
        return None

    def _transaction(self, kind: WriteKind, statements: Iterable[tuple[str, object]]) -> None:
        """Run (sql, params | list of params) pairs in one transaction; all or nothing."""
        db = self._db
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                for sql, params in statements:
                    if isinstance(params, list):
                        db.executemany(sql, params)
                    else:
                        db.execute(sql, params)  # type: ignore[arg-type]
                injected = self._take_failure(kind)
                if injected is not None:
                    raise StoreWriteError(injected, f"injected {kind} write failure {injected.name}")
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:  # sqlite may already have rolled back (e.g. SQLITE_FULL)
                    db.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:  # disk full, I/O error, locked database ...
            raise StoreWriteError(ErrorCode.KAFKA_STORAGE_ERROR, f"sqlite {kind} write failed: {exc}") from exc

    # ---------------------------------------------------------------------- writes

    def store_group(self, record: GroupRecord) -> None:
        """Replace the stored metadata (and member list) of one group."""
        members = [(record.group_id, i, m.member_id, m.group_instance_id, m.client_id, m.client_host,
                    m.rebalance_timeout_ms, m.session_timeout_ms, m.subscription, m.assignment)
                   for i, m in enumerate(record.members)]
        self._transaction("group", [
            ("INSERT OR REPLACE INTO groups VALUES (?, ?, ?, ?, ?, ?, ?)",
             (record.group_id, record.partition, record.protocol_type, record.generation_id,
              record.protocol_name, record.leader_id, record.state_timestamp)),
            ("DELETE FROM members WHERE group_id = ?", (record.group_id,)),
            ("INSERT INTO members VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", members),
        ])

    def delete_group(self, group_id: str) -> None:
        """Remove a group's metadata and all its offsets (Kafka's tombstones)."""
        self._transaction("group", [
            ("DELETE FROM groups WHERE group_id = ?", (group_id,)),
            ("DELETE FROM members WHERE group_id = ?", (group_id,)),
            ("DELETE FROM offsets WHERE group_id = ?", (group_id,)),
        ])

    def store_offsets(self, group_id: str, partition: int,
                      offsets: list[tuple[TopicPartition, OffsetAndMetadata]]) -> None:
        """Upsert the committed offsets of one OffsetCommit request, atomically."""
        rows = [(group_id, tp[0], tp[1], partition, o.committed_offset, o.leader_epoch, o.metadata,
                 o.commit_timestamp, o.expire_timestamp) for tp, o in offsets]
        self._transaction("offsets", [
            ("INSERT OR REPLACE INTO offsets VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows),
        ])

    def delete_offsets(self, group_id: str, partitions: Iterable[TopicPartition],
                       *, delete_group: bool = False) -> None:
        """Remove offsets (expiry); with ``delete_group`` also the group row, in the same transaction."""
        statements: list[tuple[str, object]] = [
            ("DELETE FROM offsets WHERE group_id = ? AND topic = ? AND partition_index = ?",
             [(group_id, tp[0], tp[1]) for tp in partitions]),
        ]
        if delete_group:
            statements.append(("DELETE FROM groups WHERE group_id = ?", (group_id,)))
            statements.append(("DELETE FROM members WHERE group_id = ?", (group_id,)))
        self._transaction("offsets", statements)

    # ----------------------------------------------------------------------- reads

    def load_partition(self, partition: int) -> PartitionSnapshot:
        """Every group and offset stored for one offsets-topic partition (members in stored order)."""
        db = self._db
        groups: dict[str, GroupRecord] = {}
        for row in db.execute("SELECT group_id, partition, protocol_type, generation_id, protocol_name, "
                              "leader_id, state_timestamp FROM groups WHERE partition = ?", (partition,)):
            groups[row[0]] = GroupRecord(*row)
        if groups:
            for row in db.execute(
                    "SELECT m.group_id, m.member_id, m.group_instance_id, m.client_id, m.client_host, "
                    "m.rebalance_timeout_ms, m.session_timeout_ms, m.subscription, m.assignment "
                    "FROM members m JOIN groups g ON g.group_id = m.group_id "
                    "WHERE g.partition = ? ORDER BY m.group_id, m.position", (partition,)):
                groups[row[0]].members.append(MemberRecord(row[1], row[2], row[3], row[4], row[5], row[6],
                                                           bytes(row[7]), bytes(row[8])))
        offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        for row in db.execute("SELECT group_id, topic, partition_index, committed_offset, leader_epoch, metadata, "
                              "commit_timestamp, expire_timestamp FROM offsets WHERE partition = ?", (partition,)):
            offsets.setdefault(row[0], {})[TopicPartition(row[1], row[2])] = OffsetAndMetadata(
                row[3], row[4], row[5], row[6], row[7])
        return PartitionSnapshot(groups, offsets)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "GroupStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
