"""Durable group metadata and offsets in SQLite (the coordinator's ``__consumer_offsets``).

What is written, and when (as Kafka appends to ``__consumer_offsets``):

* group metadata -- when the leader's SyncGroup completes a generation, when a join phase ends with no
  members (Empty), when a static member is replaced in a Stable group; a group row is deleted (Kafka's
  tombstone) when the group is deleted or expires.  Like Kafka's ``GroupMetadataValue`` a member row keeps
  only the metadata of the *selected* protocol, plus its assignment.
* offsets -- one transaction per OffsetCommit request, before the response is sent; every committed row
  carries the *record offset* of its write (a counter playing the ``__consumer_offsets`` log position, kept
  in the file's ``record_counter`` row and taken inside the write's transaction, so coordinators sharing a
  file never reuse a position), which decides whether a later transaction marker may overwrite it (Kafka
  keeps the most recent record).
* pending transactional offsets -- one transaction per TxnOffsetCommit, keyed by (group, producer id), with
  the producer's epoch; a transaction marker moves them into ``offsets`` (commit) or drops them (abort) in
  one transaction (:meth:`GroupStore.complete_transaction`).  ``producer_epochs`` keeps the latest epoch
  seen per (offsets-topic partition, producer id), as the log's producer state does, to fence zombies.

Every write is one SQLite transaction: it either commits entirely or leaves nothing behind.  A failed
write raises :class:`~kafkagroup.coordinator.errors.StoreWriteError` carrying a Kafka append error; the
coordinator maps it to response codes (§2.9, §2.6).  ``inject_failure`` makes the next write(s) fail
*after* their statements ran, just before COMMIT, so tests see the rollback.

Durability: a file database runs in WAL mode with ``synchronous=FULL`` by default, so an acknowledged
write survives a process or OS crash (pass ``synchronous="NORMAL"`` to trade OS-crash durability for
speed).  Consumer-group membership rows are the exception: they are committed at ``NORMAL`` (they survive a
process crash; an OS crash may lose the last ones, whose members are then fenced and rejoin -- as Kafka,
which does not fsync each append to ``__consumer_offsets`` either).  ``":memory:"`` is for tests and simulations and must be given explicitly (there is no default
path: a forgotten one would silently lose acknowledged commits on restart).  The connection is used from one thread (the coordinator's).

A new store file is created with mode 0600 (owner only: it holds every group's members, client ids and
hosts; SQLite gives its -wal and -shm files the same mode).  A path that exists must already be a
kafkagroup store: an empty file, or an SQLite database without the store's tables, is refused naming the
path (opening it as a new store would silently start from nothing where offsets were expected).

Opening checks the file before anything is read or written (:class:`~kafkagroup.coordinator.errors.StoreError`
naming the file otherwise): the process must be able to write the file and its directory (a read-only
store is refused at once, not at the first commit), the file must be an SQLite database, and ``PRAGMA
integrity_check`` must pass -- a file with damaged pages is refused instead of being loaded partially (a read
stops, or silently skips rows, at a damaged page).  Cost: one pass over the file (about 4 s for a store of
1M offsets, 81 MB, which takes 20 s to load entirely); ``integrity_check="quick"`` runs SQLite's cheaper
``quick_check`` (no index-versus-table comparison), ``"off"`` none.  Limit: SQLite keeps no checksums, so a
corrupted byte *inside* a stored value (an offset's digits) that leaves the page structure valid is not
detected by either check.  A read that fails later (the file damaged while open) raises StoreError naming
the file; a failed write is a StoreWriteError (KAFKA_STORAGE_ERROR), answered with Kafka's codes.

* consumer groups (KIP-848) -- one ``consumer_groups`` row (Kafka's ConsumerGroupMetadata: the group epoch; the
  target assignment's epoch; the subscribed topics' ids and partition counts) and one ``consumer_members`` row
  per member (ConsumerGroupMemberMetadata, ConsumerGroupCurrentMemberAssignment and the member's
  ConsumerGroupTargetAssignmentMember), written after each request or timer that changed the group, one
  transaction for all its changes and none when nothing changed (:meth:`GroupStore.store_consumer_group`);
  only the rows that differ are written.  Not stored (as in Kafka, rebuilt at load): timers (sessions
  restart at load), regex matches (resolved again against the topics), the time of the last target.

Schema versions (``PRAGMA user_version``): 0 = the first release (no record offsets, no transactional
tables), 1 = transactional offsets, 2 = this one (consumer-group tables).  An older file is migrated in
place when opened (columns and tables added, rows kept, old rows get record offset 0: older than anything
written afterwards); a file from a newer release is refused with a StoreError (also a ValueError, as
before) rather than misread.

Limits: the offsets-topic partition of a group is stored with its rows to load one partition at a time;
it assumes ``offsets.topic.num.partitions`` does not change for an existing database (Kafka cannot
change it either).
"""
from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field
from typing import Callable, Iterable, Literal, TypeVar

from kafkagroup.messages.error_codes import ErrorCode
from kafkagroup.coordinator.errors import NewerSchemaError, StoreError, StoreWriteError
from kafkagroup.coordinator.group import OffsetAndMetadata
from kafkagroup.structs import TopicPartition

__all__ = ["GroupStore", "GroupRecord", "MemberRecord", "ConsumerGroupRecord", "ConsumerMemberRecord",
           "PartitionSnapshot", "PendingOffsets", "SCHEMA_VERSION"]

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
    record_offset    INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (group_id, topic, partition_index)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS offsets_by_partition ON offsets(partition);
"""

# added by schema version 1 (also created on a fresh file)
_SCHEMA_V1 = """
CREATE TABLE IF NOT EXISTS pending_txn_offsets (
    group_id         TEXT NOT NULL,
    producer_id      INTEGER NOT NULL,
    topic            TEXT NOT NULL,
    partition_index  INTEGER NOT NULL,
    partition        INTEGER NOT NULL,
    committed_offset INTEGER NOT NULL,
    leader_epoch     INTEGER NOT NULL,
    metadata         TEXT NOT NULL,
    commit_timestamp INTEGER NOT NULL,
    record_offset    INTEGER NOT NULL,
    PRIMARY KEY (group_id, producer_id, topic, partition_index)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS pending_by_producer ON pending_txn_offsets(partition, producer_id);
CREATE TABLE IF NOT EXISTS producer_epochs (
    partition      INTEGER NOT NULL,
    producer_id    INTEGER NOT NULL,
    producer_epoch INTEGER NOT NULL,
    PRIMARY KEY (partition, producer_id)
) WITHOUT ROWID;
"""

# added by schema version 2: consumer groups (KIP-848), Kafka's ConsumerGroup* records in one row per group and
# one per member (see ConsumerGroupRecord / ConsumerMemberRecord)
_SCHEMA_V2 = """
CREATE TABLE IF NOT EXISTS consumer_groups (
    group_id              TEXT PRIMARY KEY,
    partition             INTEGER NOT NULL,
    group_epoch           INTEGER NOT NULL,
    assignment_epoch      INTEGER NOT NULL,
    subscription_metadata TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS consumer_groups_by_partition ON consumer_groups(partition);
CREATE TABLE IF NOT EXISTS consumer_members (
    group_id                   TEXT NOT NULL,
    member_id                  TEXT NOT NULL,
    instance_id                TEXT,
    rack_id                    TEXT,
    client_id                  TEXT NOT NULL,
    client_host                TEXT NOT NULL,
    rebalance_timeout_ms       INTEGER NOT NULL,
    subscribed_topic_names     TEXT NOT NULL,
    subscribed_topic_regex     TEXT,
    server_assignor            TEXT,
    classic_session_timeout_ms INTEGER,
    classic_protocols          TEXT,
    state                      TEXT NOT NULL,
    member_epoch               INTEGER NOT NULL,
    previous_member_epoch      INTEGER NOT NULL,
    assigned                   TEXT NOT NULL,
    pending_revocation         TEXT NOT NULL,
    target                     TEXT,
    PRIMARY KEY (group_id, member_id)
) WITHOUT ROWID;
"""
SCHEMA_VERSION = 2

_OFFSET_COLUMNS = ("group_id, topic, partition_index, partition, committed_offset, leader_epoch, metadata, "
                   "commit_timestamp, expire_timestamp, record_offset")
_UPSERT_OFFSET = f"INSERT OR REPLACE INTO offsets ({_OFFSET_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"


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
class ConsumerMemberRecord:
    """One consumer-group member as stored (Kafka's ConsumerGroupMemberMetadata, ConsumerGroupCurrentMemberAssignment
    and ConsumerGroupTargetAssignmentMember in one row).  The columns are plain values: names, partitions by
    topic id and classic protocols are JSON text made by the consumer group's own codec
    (:mod:`~kafkagroup.coordinator.consumer.records`); this module stores them without reading them."""

    member_id: str
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    subscribed_topic_names: str
    subscribed_topic_regex: str | None
    server_assignor: str | None
    classic_session_timeout_ms: int | None
    classic_protocols: str | None
    state: str
    member_epoch: int
    previous_member_epoch: int
    assigned: str
    pending_revocation: str
    target: str | None

    def row(self) -> tuple:
        return tuple(getattr(self, f) for f in self.__slots__)   # type: ignore[attr-defined]


@dataclass(slots=True)
class ConsumerGroupRecord:
    """One consumer group as stored (Kafka's ConsumerGroupMetadata -- the group epoch --, the target assignment's
    epoch and the subscribed topics' metadata) with its members."""

    group_id: str
    partition: int
    group_epoch: int
    assignment_epoch: int
    subscription_metadata: str
    members: list[ConsumerMemberRecord] = field(default_factory=list)


# group id -> producer id -> partition -> pending transactional offset
PendingOffsets = dict[str, dict[int, dict[TopicPartition, OffsetAndMetadata]]]


@dataclass(slots=True)
class PartitionSnapshot:
    """Everything stored for one offsets-topic partition."""

    groups: dict[str, GroupRecord]
    offsets: dict[str, dict[TopicPartition, OffsetAndMetadata]]
    pending: PendingOffsets = field(default_factory=dict)
    consumer_groups: dict[str, ConsumerGroupRecord] = field(default_factory=dict)


WriteKind = Literal["group", "offsets", "any"]
T = TypeVar("T")


def _raise_epoch(partition: int, producer_id: int, producer_epoch: int) -> tuple[str, object]:
    """Statement keeping the highest epoch written by a producer to a partition."""
    return ("INSERT INTO producer_epochs (partition, producer_id, producer_epoch) VALUES (?, ?, ?) "
            "ON CONFLICT (partition, producer_id) DO UPDATE SET producer_epoch = "
            "max(producer_epoch, excluded.producer_epoch)", (partition, producer_id, producer_epoch))


def _delete_consumer_rows(group_id: str) -> list[tuple[str, object]]:
    return [("DELETE FROM consumer_groups WHERE group_id = ?", (group_id,)),
            ("DELETE FROM consumer_members WHERE group_id = ?", (group_id,))]


_INTEGRITY_PRAGMAS = {"full": "integrity_check", "quick": "quick_check"}


def _sqlite_reason(exc: sqlite3.Error) -> str:
    text = str(exc)
    if "readonly" in text or "read-only" in text:
        return f"the file or its directory is not writable ({text}); the coordinator writes every commit there"
    if "not a database" in text:
        return f"not an SQLite database ({text})"
    if "unable to open" in text:
        return f"{text} (does the path exist, and may this process read and write it and its directory?)"
    if "malformed" in text or "corrupt" in text:
        return f"the file is damaged ({text})"
    return text


_STORE_TABLES = frozenset({"groups", "members", "offsets"})   # in every schema version


def _create_private(path: str) -> bool:
    """Create ``path`` empty with mode 0600 if nothing is there (SQLite then makes it a database); True if
    created.  An existing empty file is refused: it is not a store, and SQLite would take it as a new one."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        if os.path.isfile(path) and os.path.getsize(path) == 0:
            raise StoreError(path, "the file is empty, not a kafkagroup store; refusing to start a new store "
                                   "over it (remove it, or name a path where no file exists)") from None
        return False
    except OSError:
        return False    # left to SQLite's open, whose error names the cause
    os.close(fd)
    return True


def _refuse_read_only(path: str) -> None:
    """The coordinator writes every acknowledged commit to the file, and SQLite writes its -wal / -shm files
    next to it: refuse a file or directory this process cannot write, at open rather than at the first commit."""
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise StoreError(path, "the file is read-only; the coordinator writes every acknowledged commit to it")
    if os.path.isdir(directory) and not os.access(directory, os.W_OK | os.X_OK):
        raise StoreError(path, f"its directory {directory} is not writable (SQLite keeps its -wal and -shm "
                               "files next to the database)")


def _remove_created(path: str, created: bool) -> None:
    """Undo :func:`_create_private` when the open fails after it (no empty file left behind)."""
    if created:
        for leftover in (path, path + "-wal", path + "-shm"):
            try:
                os.unlink(leftover)
            except OSError:
                pass


class GroupStore:
    """SQLite-backed store of group metadata and committed offsets, opened by path (``":memory:"`` ok).

    ``integrity_check``: "full" (default), "quick" or "off" -- what is verified at open (module docstring).
    """

    def __init__(self, path: str, *, synchronous: str = "FULL",
                 integrity_check: Literal["full", "quick", "off"] = "full") -> None:
        if synchronous.upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"synchronous must be OFF, NORMAL, FULL or EXTRA, not {synchronous!r}")
        if integrity_check not in ("full", "quick", "off"):
            raise ValueError(f"integrity_check must be 'full', 'quick' or 'off', not {integrity_check!r}")
        self.path = path
        self._synchronous = synchronous.upper()
        # consumer-group membership (written at every heartbeat that changes something) is committed without an
        # fsync of its own: it survives the process (SIGKILL) but an OS crash or power loss may take the last
        # ones (the next FULL commit syncs them); a member whose epoch was lost is fenced and rejoins.  Kafka does
        # not fsync its log at each append either (log.flush.interval.messages is unbounded by default).
        self._membership_synchronous = "NORMAL" if self._synchronous in ("FULL", "EXTRA") else None
        self._failures: list[tuple[WriteKind, ErrorCode]] = []
        # group id -> member rows as this connection last committed them (store_group writes only changes)
        self._member_rows: dict[str, list[tuple]] = {}
        # consumer group id -> (group row, member id -> member row) as last committed here (same purpose)
        self._consumer_rows: dict[str, tuple[tuple, dict[str, tuple]]] = {}
        self._data_version: int | None = None
        created = False
        if path != ":memory:":
            _refuse_read_only(path)
            created = _create_private(path)
        try:
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            _remove_created(path, created)
            raise StoreError(path, f"cannot open: {_sqlite_reason(exc)}") from exc
        try:
            if path != ":memory:":
                if integrity_check != "off":
                    self._check_integrity(_INTEGRITY_PRAGMAS[integrity_check])
                if not created:
                    self._check_is_store()
                self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute(f"PRAGMA synchronous={synchronous.upper()}")
            self._open_schema()
            self._open_record_counter()
        except sqlite3.Error as exc:
            self._db.close()
            _remove_created(path, created)
            raise StoreError(path, f"cannot open: {_sqlite_reason(exc)}") from exc
        except BaseException:
            self._db.close()
            _remove_created(path, created)
            raise

    def _check_is_store(self) -> None:
        """An existing file must hold the store's tables (any schema version)."""
        tables = {row[0] for row in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not _STORE_TABLES <= tables:
            found = ", ".join(sorted(tables)[:8]) or "none"
            raise StoreError(self.path, f"the file is an SQLite database but not a kafkagroup store (tables: "
                                        f"{found}); refusing to write into it")

    def _check_integrity(self, pragma: str) -> None:
        """Refuse a damaged file before anything is read from it (at most 10 problems are listed)."""
        rows = [" ".join(row[0].split()) for row in self._db.execute(f"PRAGMA {pragma}(10)")]
        if rows != ["ok"]:
            raise StoreError(self.path, f"the file is damaged, refusing to load it (SQLite {pragma}: "
                                        f"{'; '.join(rows)}); restore it from a backup or move it aside")

    def _open_record_counter(self) -> None:
        """The next record offset (log position) lives in the file, not in this object, and is taken inside
        each offset write's transaction (:meth:`_take_record_offset`): coordinators sharing one file (a
        partition moving between them) then never hand out the same or an older position.  Created on first
        open above every record offset stored (files written before the counter existed)."""
        db = self._db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute("CREATE TABLE IF NOT EXISTS record_counter "
                       "(id INTEGER PRIMARY KEY CHECK (id = 0), next INTEGER NOT NULL)")
            db.execute("INSERT OR IGNORE INTO record_counter VALUES (0, 1 + max("
                       "coalesce((SELECT max(record_offset) FROM offsets), 0), "
                       "coalesce((SELECT max(record_offset) FROM pending_txn_offsets), 0)))")
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    def _open_schema(self) -> None:
        """Create the tables of a new file, or migrate an older one in place (see the module docstring)."""
        db = self._db
        (version,) = db.execute("PRAGMA user_version").fetchone()
        if version > SCHEMA_VERSION:
            raise NewerSchemaError(self.path, f"store schema version {version} is newer than this release "
                                              f"understands ({SCHEMA_VERSION})")
        if version == SCHEMA_VERSION:
            return
        db.execute("BEGIN IMMEDIATE")
        try:
            for statement in (_SCHEMA + _SCHEMA_V1 + _SCHEMA_V2).split(";"):
                if statement.strip():
                    db.execute(statement)
            columns = {row[1] for row in db.execute("PRAGMA table_info(offsets)")}
            if "record_offset" not in columns:   # a version-0 file
                db.execute("ALTER TABLE offsets ADD COLUMN record_offset INTEGER NOT NULL DEFAULT 0")
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise

    @property
    def schema_version(self) -> int:
        return int(self._db.execute("PRAGMA user_version").fetchone()[0])

    @staticmethod
    def _take_record_offset(db: sqlite3.Connection, offsets: list[tuple[TopicPartition, OffsetAndMetadata]]
                            ) -> int:
        """Inside a write transaction: the record offset of this write, stamped on each of ``offsets`` (a
        rolled-back write leaves no gap: the counter rolls back with it)."""
        (n,) = db.execute("UPDATE record_counter SET next = next + 1 WHERE id = 0 RETURNING next - 1").fetchone()
        for _, o in offsets:
            o.record_offset = n
        return int(n)

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

    def _transaction(self, kind: WriteKind, statements: Iterable[tuple[str, object]],
                     body: Callable[[sqlite3.Connection], T] | None = None, *,
                     synchronous: str | None = None) -> T | None:
        """Run (sql, params | list of params) pairs, then ``body(db)`` if given, in one transaction; all or
        nothing.  Returns what ``body`` returned.  ``synchronous``: this transaction's SQLite synchronous level
        (the store's otherwise)."""
        if synchronous is not None and synchronous != self._synchronous:
            self._db.execute(f"PRAGMA synchronous={synchronous}")
            try:
                return self._transaction(kind, statements, body)
            finally:
                self._db.execute(f"PRAGMA synchronous={self._synchronous}")
        db = self._db
        result = None
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                for sql, params in statements:
                    if isinstance(params, list):
                        db.executemany(sql, params)
                    else:
                        db.execute(sql, params)  # type: ignore[arg-type]
                if body is not None:
                    result = body(db)
                injected = self._take_failure(kind)
                if injected is not None:
                    raise StoreWriteError(injected, f"injected {kind} write failure {injected.name}")
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:  # sqlite may already have rolled back (e.g. SQLITE_FULL)
                    db.execute("ROLLBACK")
                raise
        except sqlite3.Error as exc:  # disk full, I/O error, locked database ...
            raise StoreWriteError(ErrorCode.KAFKA_STORAGE_ERROR,
                                  f"group store {self.path}: sqlite {kind} write failed: {exc}") from exc
        return result

    # ---------------------------------------------------------------------- writes

    def store_group(self, record: GroupRecord) -> None:
        """Replace the stored metadata (and member list) of one group, in one transaction.

        What the file holds afterwards is exactly ``record``.  Only the member rows that differ from the
        ones this connection last committed for the group are written (a static member's restart changes
        one row of 1,000: the write costs O(changed rows) in SQLite, O(members) only to compare).  The
        rows last committed are trusted only while no other connection has committed to the file since
        (``PRAGMA data_version``); otherwise, and after a failed write, the whole member list is rewritten.
        """
        group_id = record.group_id
        rows = [(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                 m.session_timeout_ms, m.subscription, m.assignment) for m in record.members]
        statements: list[tuple[str, object]] = [
            ("INSERT OR REPLACE INTO groups VALUES (?, ?, ?, ?, ?, ?, ?)",
             (group_id, record.partition, record.protocol_type, record.generation_id,
              record.protocol_name, record.leader_id, record.state_timestamp))]
        previous = self._committed_members(group_id)
        if previous is None:
            statements.append(("DELETE FROM members WHERE group_id = ?", (group_id,)))
            changed = [(group_id, i, *row) for i, row in enumerate(rows)]
        else:
            changed = [(group_id, i, *row) for i, row in enumerate(rows) if i >= len(previous) or previous[i] != row]
            if len(previous) > len(rows):
                statements.append(("DELETE FROM members WHERE group_id = ? AND position >= ?", (group_id, len(rows))))
        if changed:
            statements.append(("INSERT OR REPLACE INTO members VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", changed))
        statements += _delete_consumer_rows(group_id)       # the id names one group (a downgrade's record)
        self._consumer_rows.pop(group_id, None)
        self._member_rows.pop(group_id, None)   # unknown until the transaction has committed
        self._transaction("group", statements)
        self._member_rows[group_id] = rows

    def _committed_members(self, group_id: str) -> list[tuple] | None:
        """The member rows this connection last committed for the group, if the file cannot have changed since."""
        if not self._cache_valid():
            return None
        return self._member_rows.get(group_id)

    def _cache_valid(self) -> bool:
        """False (and every remembered row forgotten) when another connection committed to the file since."""
        (version,) = self._db.execute("PRAGMA data_version").fetchone()
        if version != self._data_version:
            self._member_rows.clear()
            self._consumer_rows.clear()
            self._data_version = version
            return False
        return True

    # ------------------------------------------------------------ consumer groups (KIP-848)

    def consumer_group_known(self, group_id: str) -> bool:
        """Whether this connection knows what the file holds for the consumer group (it committed the group's
        rows and nobody else wrote since): then :meth:`store_consumer_group` may be given only the members that
        may have changed; otherwise it must be given all of them (``complete``)."""
        return self._cache_valid() and group_id in self._consumer_rows

    def store_consumer_group(self, record: ConsumerGroupRecord, removed: Iterable[str] = (), *,
                             complete: bool) -> bool:
        """Write a consumer group's changes in one transaction; False when nothing differed (no transaction).

        ``record.members``: the members that may have changed (every member when ``complete``, which is needed
        unless :meth:`consumer_group_known` said True just before); ``removed``: member ids gone since.  Only rows that differ from the ones last committed here are written.  A
        ``complete`` write replaces everything stored for the id, the classic group's rows included (the id
        names one group: an upgraded classic group's record goes in the same transaction)."""
        group_id = record.group_id
        group_row = (record.partition, record.group_epoch, record.assignment_epoch, record.subscription_metadata)
        known = None if complete else self._consumer_rows.get(group_id)
        if not complete and known is None:
            raise ValueError(f"consumer group {group_id}: rows not known here, a complete write is needed")
        statements: list[tuple[str, object]] = []
        if known is None:
            statements += [(f"DELETE FROM {table} WHERE group_id = ?", (group_id,))
                           for table in ("consumer_members", "groups", "members")]
            self._member_rows.pop(group_id, None)
            old_group, old_members = None, {}
        else:
            old_group, old_members = known
        members = dict(old_members)
        changed = []
        for m in record.members:
            row = m.row()
            if old_members.get(m.member_id) != row:
                changed.append((group_id, *row))
            members[m.member_id] = row
        gone = [(group_id, mid) for mid in removed if members.pop(mid, None) is not None]
        if group_row != old_group:
            statements.append(("INSERT OR REPLACE INTO consumer_groups VALUES (?, ?, ?, ?, ?)", (group_id, *group_row)))
        if gone:
            statements.append(("DELETE FROM consumer_members WHERE group_id = ? AND member_id = ?", gone))
        if changed:
            statements.append((f"INSERT OR REPLACE INTO consumer_members VALUES ({', '.join('?' * 18)})", changed))
        if not statements:
            return False
        self._consumer_rows.pop(group_id, None)     # unknown until the transaction has committed
        self._transaction("group", statements, synchronous=self._membership_synchronous)
        self._consumer_rows[group_id] = (group_row, members)
        return True

    def delete_consumer_group(self, group_id: str) -> None:
        """Remove a consumer group's rows (its offsets stay): the id became a classic group."""
        self._consumer_rows.pop(group_id, None)
        self._transaction("group", _delete_consumer_rows(group_id))

    def delete_group(self, group_id: str) -> None:
        """Remove a group's metadata and all its offsets, pending transactional ones included (Kafka's
        tombstones)."""
        self._member_rows.pop(group_id, None)
        self._consumer_rows.pop(group_id, None)
        self._transaction("group", [
            ("DELETE FROM groups WHERE group_id = ?", (group_id,)),
            ("DELETE FROM members WHERE group_id = ?", (group_id,)),
            ("DELETE FROM offsets WHERE group_id = ?", (group_id,)),
            ("DELETE FROM pending_txn_offsets WHERE group_id = ?", (group_id,)),
            *_delete_consumer_rows(group_id),
        ])

    def store_offsets(self, group_id: str, partition: int,
                      offsets: list[tuple[TopicPartition, OffsetAndMetadata]]) -> None:
        """Upsert the committed offsets of one OffsetCommit request, atomically, as one record offset (stamped
        on each OffsetAndMetadata)."""
        def write(db: sqlite3.Connection) -> None:
            n = self._take_record_offset(db, offsets)
            db.executemany(_UPSERT_OFFSET, [(group_id, tp[0], tp[1], partition, o.committed_offset, o.leader_epoch,
                                             o.metadata, o.commit_timestamp, o.expire_timestamp, n)
                                            for tp, o in offsets])

        self._transaction("offsets", [], write)

    def store_pending_offsets(self, group_id: str, partition: int, producer_id: int, producer_epoch: int,
                              offsets: list[tuple[TopicPartition, OffsetAndMetadata]]) -> None:
        """Upsert the pending offsets of one TxnOffsetCommit and raise the producer's epoch, atomically."""
        def write(db: sqlite3.Connection) -> None:
            n = self._take_record_offset(db, offsets)
            db.executemany(
                "INSERT OR REPLACE INTO pending_txn_offsets (group_id, producer_id, topic, partition_index, partition, "
                "committed_offset, leader_epoch, metadata, commit_timestamp, record_offset) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(group_id, producer_id, tp[0], tp[1], partition, o.committed_offset, o.leader_epoch, o.metadata,
                  o.commit_timestamp, n) for tp, o in offsets])

        self._transaction("offsets", [_raise_epoch(partition, producer_id, producer_epoch)], write)

    def complete_transaction(self, partition: int, producer_id: int, producer_epoch: int,
                             commit: bool) -> list[tuple[str, TopicPartition, OffsetAndMetadata]]:
        """Apply a transaction marker to one offsets-topic partition, atomically: on commit every pending
        offset of ``producer_id`` whose record is newer than the committed one becomes committed (Kafka keeps
        the most recent record of a partition); on abort they are dropped.  Either way the producer's
        pending rows are gone afterwards and its epoch is raised.  Returns the (group, partition, offset)
        rows that became committed."""
        def apply(db: sqlite3.Connection) -> list[tuple[str, TopicPartition, OffsetAndMetadata]]:
            winners: list[tuple[str, TopicPartition, OffsetAndMetadata]] = []
            if commit:
                for row in db.execute(
                        "SELECT p.group_id, p.topic, p.partition_index, p.committed_offset, p.leader_epoch, "
                        "p.metadata, p.commit_timestamp, p.record_offset FROM pending_txn_offsets p "
                        "LEFT JOIN offsets o ON o.group_id = p.group_id AND o.topic = p.topic "
                        "AND o.partition_index = p.partition_index "
                        "WHERE p.partition = ? AND p.producer_id = ? "
                        "AND (o.record_offset IS NULL OR o.record_offset < p.record_offset)",
                        (partition, producer_id)).fetchall():
                    winners.append((row[0], TopicPartition(row[1], row[2]),
                                    OffsetAndMetadata(row[3], row[4], row[5], row[6], None, row[7])))
                db.executemany(_UPSERT_OFFSET, [
                    (g, tp[0], tp[1], partition, o.committed_offset, o.leader_epoch, o.metadata,
                     o.commit_timestamp, None, o.record_offset) for g, tp, o in winners])
            db.execute("DELETE FROM pending_txn_offsets WHERE partition = ? AND producer_id = ?",
                       (partition, producer_id))
            return winners

        return self._transaction("offsets", [_raise_epoch(partition, producer_id, producer_epoch)], apply) or []

    def producer_epoch(self, partition: int, producer_id: int) -> int | None:
        """The latest epoch of ``producer_id`` written to ``partition`` (None if it never wrote there)."""
        row = self._db.execute("SELECT producer_epoch FROM producer_epochs WHERE partition = ? AND producer_id = ?",
                               (partition, producer_id)).fetchone()
        return None if row is None else int(row[0])

    def delete_offsets(self, group_id: str, partitions: Iterable[TopicPartition],
                       *, delete_group: bool = False) -> None:
        """Remove offsets (expiry, OffsetDelete) and every pending transactional offset of those partitions
        (Kafka's offset tombstone clears both); with ``delete_group`` also the group row, in the same
        transaction."""
        keys = [(group_id, tp[0], tp[1]) for tp in partitions]
        statements: list[tuple[str, object]] = [
            ("DELETE FROM offsets WHERE group_id = ? AND topic = ? AND partition_index = ?", keys),
            ("DELETE FROM pending_txn_offsets WHERE group_id = ? AND topic = ? AND partition_index = ?", keys),
        ]
        if delete_group:
            self._member_rows.pop(group_id, None)
            self._consumer_rows.pop(group_id, None)
            statements.append(("DELETE FROM groups WHERE group_id = ?", (group_id,)))
            statements.append(("DELETE FROM members WHERE group_id = ?", (group_id,)))
            statements += _delete_consumer_rows(group_id)
        self._transaction("offsets", statements)

    # ----------------------------------------------------------------------- reads

    def load_partition(self, partition: int) -> PartitionSnapshot:
        """Every group and offset stored for one offsets-topic partition (members in stored order); a read
        that fails (the file damaged while open) raises StoreError naming the file, nothing half-loaded."""
        try:
            return self._read_partition(partition)
        except sqlite3.Error as exc:
            raise StoreError(self.path, f"reading offsets-topic partition {partition} failed: "
                                        f"{_sqlite_reason(exc)}") from exc

    def _read_partition(self, partition: int) -> PartitionSnapshot:
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
                              "commit_timestamp, expire_timestamp, record_offset FROM offsets WHERE partition = ?",
                              (partition,)):
            offsets.setdefault(row[0], {})[TopicPartition(row[1], row[2])] = OffsetAndMetadata(
                row[3], row[4], row[5], row[6], row[7], row[8])
        pending: PendingOffsets = {}
        for row in db.execute("SELECT group_id, producer_id, topic, partition_index, committed_offset, leader_epoch, "
                              "metadata, commit_timestamp, record_offset FROM pending_txn_offsets "
                              "WHERE partition = ?", (partition,)):
            pending.setdefault(row[0], {}).setdefault(row[1], {})[TopicPartition(row[2], row[3])] = (
                OffsetAndMetadata(row[4], row[5], row[6], row[7], None, row[8]))
        self._cache_valid()
        consumer: dict[str, ConsumerGroupRecord] = {}
        for row in db.execute("SELECT group_id, partition, group_epoch, assignment_epoch, subscription_metadata "
                              "FROM consumer_groups WHERE partition = ?", (partition,)):
            consumer[row[0]] = ConsumerGroupRecord(*row)
        if consumer:
            for row in db.execute(
                    "SELECT m.* FROM consumer_members m JOIN consumer_groups g ON g.group_id = m.group_id "
                    "WHERE g.partition = ? ORDER BY m.group_id, m.member_id", (partition,)):
                consumer[row[0]].members.append(ConsumerMemberRecord(*row[1:]))
        for group_id, record in consumer.items():     # what the file holds: later writes send only changes
            self._consumer_rows[group_id] = (
                (record.partition, record.group_epoch, record.assignment_epoch, record.subscription_metadata),
                {m.member_id: m.row() for m in record.members})
        return PartitionSnapshot(groups, offsets, pending, consumer)

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> "GroupStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
