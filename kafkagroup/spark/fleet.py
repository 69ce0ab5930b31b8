"""A fleet of consumer groups as Arrow tables: a seeded generator and the single-process loop.

Shared by ``kafkagroup spark-plan --example N``, tests/spark and benches/bench_spark.py. Needs pyarrow
(extra ``kafkagroup[spark]``) but not Spark.

A fleet is two tables:

- ``groups``: one row per group, members nested (:data:`kafkagroup.spark.arrow_builder` layout)::

      group_id | members: [{member_id, topics, owned, generation, rack, instance_id}, ...]

- ``topics``: ``topic, partitions`` shared by all groups (topic names are unique per group here).

:func:`member_rows` flattens ``groups`` to one row per member (the form most users hold), and
:func:`assign_fleet_local` assigns every group in this process, on every core, through the same batch
code the Spark executors run -- the baseline the Spark bench compares against.
"""
from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from kafkagroup.spark.arrow_builder import TopicMeta

log = logging.getLogger("kafkagroup.fleet")

OWNED_TYPE = pa.list_(pa.struct([("topic", pa.string()), ("partition", pa.int32())]))
MEMBER_TYPE = pa.struct([
    ("member_id", pa.string()), ("topics", pa.list_(pa.string())), ("owned", OWNED_TYPE),
    ("generation", pa.int32()), ("rack", pa.string()), ("instance_id", pa.string()),
])
GROUPS_SCHEMA = pa.schema([("group_id", pa.string()), ("members", pa.list_(MEMBER_TYPE))])
MEMBER_ROWS_SCHEMA = pa.schema([("group_id", pa.string())] + [MEMBER_TYPE.field(i) for i in range(MEMBER_TYPE.num_fields)])
TOPICS_SCHEMA = pa.schema([("topic", pa.string()), ("partitions", pa.int32())])


@dataclass(frozen=True)
class Fleet:
    groups: pa.Table   # GROUPS_SCHEMA
    topics: pa.Table   # TOPICS_SCHEMA

    @property
    def num_partitions(self) -> int:
        return int(pc.sum(self.topics.column("partitions")).as_py() or 0)

    @property
    def num_members(self) -> int:
        return int(pc.sum(pc.list_value_length(self.groups.column("members"))).as_py() or 0)


def _log_uniform(rng: np.random.Generator, lo: int, hi: int, n: int) -> np.ndarray:
    return np.rint(np.exp(rng.uniform(math.log(lo), math.log(hi), n))).astype(np.int64)


def _check_generator_args(num_groups: int, **named: Any) -> None:
    """generate_fleet's arguments, checked before any is used as a size or a logarithm's argument."""
    if isinstance(num_groups, bool) or not isinstance(num_groups, (int, np.integer)) or num_groups < 0:
        raise ValueError(f"generate_fleet: num_groups must be an integer >= 0, got {num_groups!r}")
    for name in ("members", "partitions", "topics"):
        value = named[name]
        ok = (isinstance(value, (tuple, list)) and len(value) == 2
              and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value)
              and 1 <= value[0] <= value[1])
        if not ok:
            raise ValueError(f"generate_fleet: {name} must be a range (lo, hi) of integers with 1 <= lo <= hi, "
                             f"got {value!r}")
    for name in ("uniform_fraction", "static_fraction"):
        value = named[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
            raise ValueError(f"generate_fleet: {name} must be a number in 0..1, got {value!r}")


def _strings(prefix: str, numbers: np.ndarray, width: int) -> pa.Array:
    """``prefix + zero-padded number`` for every number, built by pyarrow (no Python loop)."""
    digits = pc.utf8_lpad(pa.array(numbers, pa.int64()).cast(pa.string()), width=width, padding="0")
    return pc.binary_join_element_wise(pa.scalar(prefix), digits, "")


def generate_fleet(num_groups: int, *, seed: int = 0, members: tuple[int, int] = (10, 500),
                   partitions: tuple[int, int] = (100, 20_000), topics: tuple[int, int] = (1, 20),
                   uniform_fraction: float = 0.5, static_fraction: float = 0.0) -> Fleet:
    """A seeded fleet of mixed sizes.

    Per group: member count and partition count log-uniform in the given ranges (so most groups are
    small and a few are large, as in real fleets), 1-20 topics sharing the partitions; with
    probability `uniform_fraction` every member subscribes to every topic of its group, otherwise
    each member takes a random half of them (at least one). A `static_fraction` of members get a
    group.instance.id. No owned partitions: every group is assigned fresh.

    Raises ValueError naming the argument when a range is not ``(lo, hi)`` with ``1 <= lo <= hi`` (a group
    needs at least one member, partition and topic: the ranges are sampled on a log scale) or a fraction
    is outside 0..1.
    """
    _check_generator_args(num_groups, members=members, partitions=partitions, topics=topics,
                          uniform_fraction=uniform_fraction, static_fraction=static_fraction)
    rng = np.random.default_rng(seed)
    member_count = _log_uniform(rng, members[0], members[1], num_groups)
    part_count = _log_uniform(rng, partitions[0], partitions[1], num_groups)
    topic_count = np.minimum(rng.integers(topics[0], topics[1] + 1, num_groups), part_count)
    uniform = rng.random(num_groups) < uniform_fraction

    topic_off = np.zeros(num_groups + 1, dtype=np.int64)
    np.cumsum(topic_count, out=topic_off[1:])
    per_topic = np.empty(int(topic_off[-1]), dtype=np.int64)
    sub_member_parts: list[np.ndarray] = []     # per group: member index (local) of each subscription
    sub_topic_parts: list[np.ndarray] = []      # per group: global topic index of each subscription
    for g in range(num_groups):                 # one iteration per group, numpy inside
        t, m = int(topic_count[g]), int(member_count[g])
        per_topic[topic_off[g]:topic_off[g + 1]] = rng.multinomial(part_count[g] - t, np.full(t, 1.0 / t)) + 1
        if uniform[g]:
            mask = np.ones((m, t), dtype=bool)
        else:
            mask = rng.random((m, t)) < 0.5
            mask[np.arange(m), rng.integers(0, t, m)] = True
        mi, ti = np.nonzero(mask)
        sub_member_parts.append(mi)
        sub_topic_parts.append(ti + topic_off[g])
    group_ids = _strings("group-", np.arange(num_groups), 5)
    topic_group = np.repeat(np.arange(num_groups), topic_count)
    topic_local = np.arange(len(per_topic)) - topic_off[topic_group]
    topic_names = pc.binary_join_element_wise(group_ids.take(pa.array(topic_group)), _strings("events-", topic_local, 2), ".")

    member_off = np.zeros(num_groups + 1, dtype=np.int64)
    np.cumsum(member_count, out=member_off[1:])
    num_members = int(member_off[-1])
    member_group = np.repeat(np.arange(num_groups), member_count)
    member_local = np.arange(num_members) - member_off[member_group]
    # Kafka's member ids are "<client.id>-<uuid>"; a seeded hex suffix keeps them unique and unordered
    suffix = pa.array(rng.integers(0, 2**48, num_members)).cast(pa.string())
    member_ids = pc.binary_join_element_wise(
        pc.binary_join_element_wise(pa.scalar("consumer-"), group_ids.take(pa.array(member_group)), "", ),
        _strings("", member_local, 3), suffix, "-")
    sub_member = np.concatenate([mi + member_off[g] for g, mi in enumerate(sub_member_parts)]) if num_groups else np.zeros(0, np.int64)
    sub_topic = np.concatenate(sub_topic_parts) if num_groups else np.zeros(0, np.int64)
    sub_off = np.zeros(num_members + 1, dtype=np.int64)
    np.cumsum(np.bincount(sub_member, minlength=num_members), out=sub_off[1:])
    topics_list = pa.ListArray.from_arrays(pa.array(sub_off, pa.int32()), topic_names.take(pa.array(sub_topic)))
    static = rng.random(num_members) < static_fraction
    instance = pc.if_else(pa.array(static), pc.binary_join_element_wise(pa.scalar("instance-"), member_ids, ""),
                          pa.scalar(None, pa.string()))
    empty_owned = pa.ListArray.from_arrays(pa.array(np.zeros(num_members + 1, dtype=np.int32)),
                                           pa.array([], OWNED_TYPE.value_type))
    member_struct = pa.StructArray.from_arrays(
        [member_ids, topics_list, empty_owned, pa.nulls(num_members, pa.int32()), pa.nulls(num_members, pa.string()),
         instance], fields=list(MEMBER_TYPE))
    members_list = pa.ListArray.from_arrays(pa.array(member_off, pa.int32()), member_struct)
    groups_table = pa.Table.from_arrays([group_ids, members_list], schema=GROUPS_SCHEMA)
    topics_table = pa.Table.from_arrays([topic_names, pa.array(per_topic, pa.int32())], schema=TOPICS_SCHEMA)
    return Fleet(groups=groups_table, topics=topics_table)


def member_rows(groups: pa.Table) -> pa.Table:
    """One row per member: ``group_id`` plus the member's fields (vectorised flatten)."""
    members = groups.column("members").combine_chunks()
    lengths = np.asarray(pc.fill_null(pc.list_value_length(members), 0))
    flat = members.flatten()
    group_ids = groups.column("group_id").combine_chunks().take(pa.array(np.repeat(np.arange(len(lengths)), lengths)))
    children = flat.flatten()
    names = [flat.type.field(i).name for i in range(flat.type.num_fields)]
    return pa.Table.from_arrays([group_ids] + children, names=["group_id"] + names)


class OutputMemory(NamedTuple):
    """The output rows' memory kept for reuse: bytes kept now (blocks dropped outputs gave back, not yet
    reused) and the limit (bytes)."""

    kept: int
    limit: int


def output_memory(limit: int | None = None) -> OutputMemory:
    """Read, and with `limit` first set, how much memory of dropped outputs this process keeps for reuse.

    The rows :func:`assign_fleet_local` and the Spark executors hand back (~6.5 KB per small group) are
    written into blocks that earlier outputs gave back once their tables were dropped, kept up to `limit`
    bytes per process (1 GiB by default; csrc/kafkagroup/output_memory.hpp). Why: malloc returns blocks
    this large to the OS on free, so every call faulted its whole output in afresh (10,000 small groups:
    ~15,000 page faults, 35-47 ms of kernel CPU per call). Kept blocks count in the process's resident
    memory while no output uses them; a lower limit frees what is kept beyond it at once, 0 keeps nothing.
    An output bigger than the limit (100,000 small groups write 621 MB, under the default; 1,000,000 ten times
    that) is faulted in afresh in part on every call, and dropping it returns what is over the limit to malloc
    (measured at 100,000 groups with the old 256 MiB default: 12-24 ms per dropped output, ~1 ms at 1 GiB, and
    12-37k page faults per later call, ~0 at 1 GiB): raise the limit to keep it all.

    >>> from kafkagroup.spark.fleet import output_memory
    >>> before = output_memory()
    >>> output_memory(1 << 30).limit        # keep up to 1 GiB
    1073741824
    >>> output_memory(0).kept               # keep nothing: what was kept is freed
    0
    >>> output_memory(before.limit).limit == before.limit
    True

    Raises ValueError when `limit` is not an integer in 0 .. 2**63 - 1.
    """
    from kafkagroup import _core

    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 0):
        raise ValueError(f"output_memory: limit must be a number of bytes >= 0 (an int), got {limit!r}")
    if limit is not None and limit >= 1 << 63:   # (the native side takes an int64)
        raise ValueError(f"output_memory: limit must be below 2**63 bytes, got {limit!r}")
    kept, current = _core.output_memory(None if limit is None else int(limit))
    return OutputMemory(kept=int(kept), limit=int(current))


# Groups per batch when the caller does not say. Each batch costs a fixed share: a few dozen numpy /
# pyarrow calls reading the input's buffers and one import per output record batch (all holding the GIL; in
# the loop ~0.4 ms per batch, caches cold after the previous batch's native call), and the native call's
# own set-up. Two batches per thread: tried against shrinking batches (guided self-scheduling, each batch
# the remaining groups over the threads, 8 batches for 10,000 groups on 2 threads instead of 4), which
# were slower: their fixed shares cost more than the imbalance they removed (10,000 small groups, 2
# threads, near-idle cores: 27.7 vs 27.0 ms, 53.8 vs 51.9 ms of CPU). One thread takes batches of
# MAX_AUTO_BATCH_GROUPS at most: with the output memory kept (output_memory()) 1,000-4,000 per
# batch cost the same CPU at 10,000 groups, and 4,000 was faster than 2,500 at 100,000 (572-595 vs 676-760 ms).
MAX_AUTO_BATCH_GROUPS = 4000
MIN_AUTO_BATCH_GROUPS = 250
BATCHES_PER_THREAD = 2
# Parts per thread when one native call plans the fleet on native threads (see assign_fleet_local): nothing holds
# the GIL between parts, so parts can be smaller than the queue's batches, and the threads end closer together;
# each part costs two record batch imports (~60 us each, at the end of the call). 10,000 small groups on 2
# threads, idle thread time per call (load 7-9, chrt -f 10): parts of 2,500 1.9-9.3 ms (two runs of five above
# 8), 1,250 2.0-3.2 ms, 625 3.3-4.2 ms.
PARTS_PER_THREAD = 4
# Groups per part at most. Bigger parts make bigger intermediate arrays (the builder's tables, the engine's
# result) on each thread, which malloc serves afresh more often: at 100,000 small groups on 2 threads (output
# memory kept, 1 GiB), parts of 12,500 faulted 0.5-7.5k pages per call, parts of 3,847 and 2,000 ~0-0.9k. Small
# parts also end the call closer together (the last part's time is the threads' end gap). The imports do not
# grow much: each part's rows are cut at OUTPUT_BATCH_ROWS (262,144; ~3,500 small groups) anyway.
MAX_PART_GROUPS = 2000
# Groups per part at least, where parts shrink toward the end of the call (csrc/kafkagroup/plan_batch.hpp
# part_bounds: each part 1/(2 x cores) of the groups left, between this and the size above): the last parts are
# this small, so the threads end within one of them of each other. Below ~125 small groups a part's fixed cost
# shows (10,000 small groups on one thread, native CPU, minimum of 9 calls: parts of 1,250 49.1 ms, 250 49.9,
# 125 49.3, 50 55.4).
MIN_PART_GROUPS = 100


def auto_batch_groups(num_groups: int, threads: int) -> int:
    """Batch size for `num_groups` groups on `threads` threads (see MAX_AUTO_BATCH_GROUPS).

    When batches are capped at MAX_AUTO_BATCH_GROUPS, their count is rounded up to a multiple of `threads`
    (the batches a little smaller): with a remainder, the last round of batches leaves threads idle while
    the others finish theirs. 100,000 small groups on 2 threads: 25 batches of 4,000, one thread alone for
    most of the last; now 26 batches of 3,847 (the gap between the two threads' last batch ends, same run,
    old and new alternating at load 7-8: 27.5 -> 13.5 ms, medians of 5, of ~340 ms per call)."""
    per_batch = -(-num_groups // (threads * BATCHES_PER_THREAD))
    if per_batch > MAX_AUTO_BATCH_GROUPS and threads > 1:
        batches = -(-num_groups // MAX_AUTO_BATCH_GROUPS)
        batches = -(-batches // threads) * threads
        per_batch = -(-num_groups // batches)
    return max(MIN_AUTO_BATCH_GROUPS, min(MAX_AUTO_BATCH_GROUPS, per_batch))


def iter_batches(groups: pa.Table, batch_groups: int) -> Iterator[pa.RecordBatch]:
    yield from groups.to_batches(max_chunksize=batch_groups)


# The loop's worker threads, kept between calls (starting two threads and handing them the GIL cost
# 1.5-2.5 ms per call on the loaded 2-core VM, against ~27 ms for 10,000 small groups on two idle cores);
# replaced when a call wants more threads. A replaced pool is dropped, never shut down: a concurrent call
# may hold it between _worker_pool() and submit() (a shut-down pool refuses work with a RuntimeError); its
# idle threads end once nothing refers to it (ThreadPoolExecutor wakes them when it is collected).
# After a fork the child forgets the pool and makes a new lock: it has none of its parent's threads, and
# the lock may have been held by one of them at the fork, with nobody left to release it.
_POOL: Any = None
_POOL_LOCK = threading.Lock()


def _forget_pool_after_fork() -> None:
    global _POOL, _POOL_LOCK
    _POOL = None
    _POOL_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool_after_fork)


def _worker_pool(threads: int) -> Any:
    from concurrent.futures import ThreadPoolExecutor

    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL._max_workers < threads:
            _POOL = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="kafkagroup-fleet")
        return _POOL


def _run_queue(batches: list[pa.RecordBatch], threads: int, work: Callable[[Any], Any],
               prepare: Callable[[pa.RecordBatch], Any] | None = None) -> list[Any]:
    """work(prepare(batch)) for every batch on `threads` threads (this one and threads - 1 kept workers) taking
    batches from one queue in order; the results in input order. If batches fail, the first failed one's
    exception is raised (as a loop over the batches would) once every started batch is done; no batch after a
    failed one is started once it has failed.

    `prepare` is the part of a batch that holds the GIL before `work` releases it (the fleet loop: reading the
    input's buffers). The helpers are handed out only once this thread has prepared its first batch: started
    together, the threads would prepare their first batches at the same time and pass the GIL to and fro
    (numpy and pyarrow release it inside many calls; each pass wakes the other thread), and, their batches
    being equal, meet again at every later batch. Started one preparation apart, each prepares while the
    other is in `work`. Measured on 10,000 small groups, 4 batches, 2 threads: the two first preparations
    took 0.8-1.0 ms of wall time each instead of 0.35-0.45 ms, and so did the second pair (lock-step)."""
    from concurrent.futures import wait

    results: list[Any] = [None] * len(batches)
    failed: dict[int, BaseException] = {}
    order = iter(range(len(batches)))
    lock = threading.Lock()

    given_up = False   # the calling thread failed outside a batch: the helpers take no further batch

    def take() -> int | None:
        with lock:
            i = next(order, None)
            if i is None or given_up or (failed and i > min(failed)):
                return None
            return i

    def prepared(i: int) -> tuple[bool, Any]:
        try:
            return True, prepare(batches[i]) if prepare is not None else batches[i]
        except BaseException as e:   # raised by the caller, in input order
            with lock:
                failed[i] = e
            return False, None

    def finish(i: int, batch: Any) -> None:
        try:
            results[i] = work(batch)
        except BaseException as e:   # raised by the caller, in input order
            with lock:
                failed[i] = e

    def worker() -> None:
        while (i := take()) is not None:
            ok, batch = prepared(i)
            if ok:
                finish(i, batch)

    helpers: list[Any] = []
    try:
        first = take()
        if first is not None:
            ok, batch = prepared(first)
            if ok:
                # the calling thread is one of the workers (one thread fewer to wake)
                pool = _worker_pool(threads - 1)
                for _ in range(min(threads, len(batches)) - 1):
                    helpers.append(pool.submit(worker))
                finish(first, batch)
                worker()
    except BaseException:
        # a refused hand-out (RuntimeError at interpreter shutdown) or a KeyboardInterrupt between batches:
        # the helpers already started stop at their next batch and are waited for, then the error is raised
        with lock:
            given_up = True
        raise
    finally:
        wait(helpers)
    for future in helpers:
        future.result()
    if failed:
        raise failed[min(failed)]
    return results


def assign_fleet_local(groups: pa.Table, topics: pa.Table | TopicMeta | None, strategy: str, *, batch_groups: int | None = None,
                       strict: bool = True, on_error: str = "raise", threads: int | None = None
                       ) -> tuple[pa.Table, pa.Table]:
    """Assign every group in this process: (assignments, metrics) Arrow tables, same rows as Spark's.

    Runs the Spark executors' batch code (vectorised interning, then one native call per batch of
    `batch_groups` groups, by default :func:`auto_batch_groups`) on `threads` threads (kept between calls,
    taking batches from one queue in order), by default every
    core this process may use: batches are planned concurrently (the interning, the engine and both
    outputs, written as Arrow record batches, are one native call per batch that releases the GIL; the
    Python around each batch -- reading the input's buffers, importing the outputs -- holds it, so the
    speed-up is a little below the core count). A fleet over one shared topics table is instead one native call
    (per chunk of the table) whose batches -- parts, sized for the cores -- run on native threads (one thread:
    the same parts one after the other)
    (:func:`~kafkagroup.spark.executor.plan_outputs_in_parts`): the GIL is released once, and no thread waits
    for another's Python between batches. Rows come out in input order whatever the thread count.
    This is the single-process baseline of the Spark bench.

    `topics` is the metadata every group shares: a table (``topic, partitions``), decoded and hashed
    once per table object and reused by later calls with the same table
    (:meth:`~kafkagroup.spark.arrow_builder.TopicMeta.of_table`), or a TopicMeta built by the caller.
    None means each group row carries its own ``topic_table``.

    Memory: the rows handed back are written into blocks that earlier outputs gave back, kept for reuse up
    to a limit per process: see :func:`output_memory`, which reads and sets it and says why. (Writing the
    rows into pyarrow's pools instead was tried before and did not win: jemalloc faulted as often, mimalloc
    cost more at 100,000 groups.)
    """
    from kafkagroup.batch import available_cores
    from kafkagroup.spark.arrow_builder import TopicMeta, batch_inputs
    from kafkagroup.spark.executor import (ASSIGNMENT_ARROW_SCHEMA, METRICS_ARROW_SCHEMA, AssignOptions, can_cut,
                                           plan_outputs, plan_outputs_in_parts, plan_outputs_of)

    threads = available_cores() if threads is None else int(threads)
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    if batch_groups is not None and batch_groups < 1:
        raise ValueError(f"batch_groups must be >= 1, got {batch_groups}")
    meta = TopicMeta.of_table(topics) if topics is not None else None
    if meta is not None:
        meta.catalog()   # hashed once, before the threads share it
    options = AssignOptions(strategy=strategy, strict=strict, on_error=on_error)
    part_groups, min_part_groups, cores = batch_groups, None, 1   # batch_groups given: parts of that size
    if batch_groups is None:
        batch_groups = auto_batch_groups(groups.num_rows, threads)
        # sized for the cores, not the threads asked for: one thread plans the same parts as every core
        cores = max(threads, available_cores())
        part_groups = min(MAX_PART_GROUPS, max(MIN_AUTO_BATCH_GROUPS, -(-groups.num_rows // (cores * PARTS_PER_THREAD))))
        min_part_groups = MIN_PART_GROUPS   # the last parts shrink to this (spread over the cores)
    if meta is not None:
        # A shared topics table: the table's own chunks (no copy), each cut into parts of part_groups groups or fewer
        # (shrinking to min_part_groups at the end: _core.plan_parts' part_bounds) planned on native threads in one
        # call (the GIL released once, no handoffs between batches); on one thread the same parts one after the other
        # (the same work: the one-thread call is what the threads scale; measured against the queue's batches of 4,000
        # on one thread, alternated in one process at load 9: 49.1 vs 60.4 ms of CPU at 10,000 small groups, 628 vs
        # 619 ms at 100,000). At 100,000 small groups on 2 threads this measured 7-10% slower than the queue below,
        # with more page faults per call (75k vs 32k), until the output memory's default limit (output_memory()) was
        # raised to 1 GiB: the output (621 MB) was over the old 256 MiB, and how much of the excess malloc gave back
        # to the kernel between calls -- to be faulted in again -- swung with which thread had written which blocks,
        # in either path (12-37k faults per call, the same process measured both ways). With the output kept: parts
        # ~0-0.9k, the queue 1-8.5k.
        chunks = [chunk for chunk in groups.to_batches() if chunk.num_rows]
        inputs = [batch_inputs(chunk, meta, strict=options.strict) for chunk in chunks[:1]]
        if inputs and can_cut(inputs[0]):   # (the chunks share the schema, hence the answer)
            log.info("fleet loop: %d groups in parts of %d groups or fewer on %d native thread(s)", groups.num_rows,
                     part_groups, threads)
            assigned: list[pa.Table] = []
            metrics: list[pa.Table] = []
            for i, chunk in enumerate(chunks):
                rows, parts = plan_outputs_in_parts(inputs[0] if i == 0 else batch_inputs(chunk, meta, strict=options.strict),
                                                    options, threads, part_groups, min_part_groups, cores)
                assigned.append(rows)
                metrics.append(parts)
            return pa.concat_tables(assigned), pa.concat_tables(metrics)
    batches = list(iter_batches(groups, batch_groups))
    # one batch: its groups are spread over the threads inside the native call instead
    engine_threads = threads if len(batches) == 1 else 1
    log.info("fleet loop: %d groups in %d batch(es) on %d thread(s) (%d core(s) available)%s", groups.num_rows,
             len(batches), min(threads, max(len(batches), 1)) if engine_threads == 1 else threads, available_cores(),
             ", threads inside the one native call" if engine_threads > 1 else "")
    if threads == 1 or len(batches) == 1:
        planned = [plan_outputs(batch, meta, options, engine_threads) for batch in batches]
    else:
        planned = _run_queue(batches, threads, lambda inputs: plan_outputs_of(inputs, options),
                             prepare=lambda batch: batch_inputs(batch, meta, strict=options.strict))
    return (pa.Table.from_batches([b for rows, _ in planned for b in rows], schema=ASSIGNMENT_ARROW_SCHEMA),
            pa.Table.from_batches([group_metrics for _, group_metrics in planned], schema=METRICS_ARROW_SCHEMA))


def group_scenarios(groups: pa.Table, topics: pa.Table) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """``(group_id, partitions_per_topic, subscriptions)`` per group: the arguments of ``kafkagroup.assign``.

    Builds Python objects per member and claim: for references and peers, never for the fast path.
    """
    counts = dict(zip(topics.column("topic").to_pylist(), topics.column("partitions").to_pylist()))
    for row in groups.to_pylist():
        subscriptions: dict[str, Any] = {}
        wanted: set[str] = set()
        for m in row["members"] or []:
            spec: dict[str, Any] = {"topics": list(m.get("topics") or [])}
            if m.get("owned"):
                spec["owned"] = [(c["topic"], c["partition"]) for c in m["owned"]]
            if m.get("generation") is not None:
                spec["generation"] = m["generation"]
            if m.get("rack"):
                spec["rack"] = m["rack"]
            if m.get("instance_id"):
                spec["instance"] = m["instance_id"]
            subscriptions[m["member_id"]] = spec
            wanted.update(spec["topics"])
            wanted.update(t for t, _ in spec.get("owned", ()))
        yield row["group_id"], {t: counts[t] for t in wanted if t in counts}, subscriptions
