"""A shared topic table on its way to Spark's executors: one broadcast per content, decoded once per worker.

Why: a fleet's shared topic table can hold a million names (the 100,000-group bench fleet: 1.05M rows,
30 MB). Broadcasting it anew on every ``assign_groups`` call made every Python worker unpickle, decode
and hash it again on every call (0.5-0.9 s per worker at 1M names on local[2], more when cores are
contended). Here the table is named by a digest of its content (SHA-256 of its Arrow IPC stream,
~20 ms for 30 MB): the driver keeps the broadcast of the last SHARED_BROADCASTS contents, and each
worker keeps the decoded and hashed :class:`TopicMeta` of the last WORKER_TABLES digests
(executor.resolve_meta), so a repeated call with the same topics ships and hashes nothing new.

Staleness: nothing is keyed on a mutable object. A pyarrow table is immutable, so its digest is kept
while the object lives (weakly keyed; :mod:`kafkagroup.spark.per_object` -- a caller must not write into
numpy memory a table wraps without a copy); a Spark DataFrame is collected on every call (its source may
change) and a pandas frame or a mapping converted on every call, then digested: changed content is a
new digest, hence a new broadcast and a fresh decoding on every worker. A digest differs for equal
content in another layout (chunking, column types): that costs a new broadcast, never a wrong answer.

Memory: each kept broadcast pins its table in the driver's block manager (and its pickled file) while
it is kept; SparkContext.stop() or a new context drops them (entries are per context).
"""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from kafkagroup.spark.per_object import PerObjectCache

SHARED_BROADCASTS = 2   # topic-table contents whose broadcast the driver keeps
WORKER_TABLES = 2       # digests whose decoded TopicMeta each Python worker keeps (executor.resolve_meta);
                        # each holds its decoded names and their native hash index while kept
_TABLE_DIGESTS_KEPT = 8  # pyarrow table objects whose digest the driver remembers (weakly)


@dataclass(frozen=True)
class SharedTopics:
    """What the executors receive: the table's content digest and a broadcast of the table.

    A worker that already decoded `digest` never reads the broadcast."""

    digest: str
    broadcast: Any   # pyspark.Broadcast[pa.Table]


def table_digest(table: pa.Table) -> str:
    """SHA-256 of `table`'s Arrow IPC stream (schema and every value; slices are written as their rows)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return hashlib.sha256(sink.getvalue()).hexdigest()


_LOCK = threading.Lock()
_DIGESTS: PerObjectCache[str] = PerObjectCache(_TABLE_DIGESTS_KEPT)   # per pyarrow table object, weakly
_BROADCASTS: OrderedDict[str, tuple[Any, SharedTopics, bool]] = OrderedDict()  # digest -> (context, shared, checked)


def digest_of(table: pa.Table) -> str:
    """table_digest, computed once per table object (Arrow tables are immutable)."""
    return _DIGESTS.get(table, table_digest)


def share(spark_context: Any, table: pa.Table, check: Any = None) -> SharedTopics:
    """The broadcast of `table`'s content in `spark_context`: reused when the same content was shared
    before in this context (and still kept), else a new one.

    `check`, if given, is called with the table before its content is first shared (or first shared
    with a check): it raises for bad metadata, and a content that passed is not checked again."""
    digest = digest_of(table)
    with _LOCK:
        entry = _BROADCASTS.get(digest)
        if entry is not None and (entry[0] is not spark_context or spark_context._jsc is None):
            del _BROADCASTS[digest]   # another (or a stopped) context: its broadcast is gone
            entry = None
        if entry is not None:
            _BROADCASTS.move_to_end(digest)
    if entry is not None and (entry[2] or check is None):
        return entry[1]
    if check is not None:
        check(table)
    shared = entry[1] if entry is not None else SharedTopics(digest, spark_context.broadcast(table))
    with _LOCK:
        _BROADCASTS[digest] = (spark_context, shared, check is not None or (entry is not None and entry[2]))
        _BROADCASTS.move_to_end(digest)
        for stale in [d for d, (sc, _, _) in _BROADCASTS.items() if sc is not spark_context]:
            del _BROADCASTS[stale]
        while len(_BROADCASTS) > SHARED_BROADCASTS:
            _BROADCASTS.popitem(last=False)
    return shared
