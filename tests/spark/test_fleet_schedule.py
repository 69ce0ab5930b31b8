"""How the fleet loop cuts and hands out its batches (kafkagroup.spark.fleet.batch_sizes, _run_queue): shrinking
batches on several threads, equal ones on one thread or when the caller names a size; one queue in input order
whose first failed batch's error is raised; worker threads kept between calls. The rows themselves are the
same for any cut (tests/spark/test_spark_fleet_loop.py, tools/engine_digest.py's fleet line)."""
from __future__ import annotations

import threading

import pyarrow as pa
import pytest

from kafkagroup.spark import fleet
from kafkagroup.spark.fleet import (MAX_AUTO_BATCH_GROUPS, MIN_AUTO_BATCH_GROUPS, assign_fleet_local, batch_sizes,
                                    generate_fleet, iter_batches)


@pytest.mark.parametrize("groups", [0, 1, 249, 250, 251, 999, 10_000, 100_000, 123_457])
@pytest.mark.parametrize("threads", [2, 3, 4, 16])
def test_shrinking_batches_on_several_threads(groups, threads):
    sizes = batch_sizes(groups, threads)
    assert sum(sizes) == groups and all(s > 0 for s in sizes)
    assert sizes == sorted(sizes, reverse=True)
    assert all(s <= MAX_AUTO_BATCH_GROUPS for s in sizes)
    assert all(s >= MIN_AUTO_BATCH_GROUPS for s in sizes[:-1])
    # each batch is at most the remaining groups over the threads (or the minimum): the last ones are small
    remaining = groups
    for s in sizes:
        assert s <= max(MIN_AUTO_BATCH_GROUPS, -(-remaining // threads))
        remaining -= s


def test_equal_batches_on_one_thread_or_when_named():
    assert batch_sizes(10_000, 1) == [4000, 4000, 2000]
    assert batch_sizes(1000, 4, batch_groups=300) == [300, 300, 300, 100]
    assert batch_sizes(10_000, 2) == [4000, 3000, 1500, 750, 375, 250, 125]


def test_batches_follow_the_sizes_across_table_chunks():
    table = pa.table({"n": list(range(10))})
    chunked = pa.Table.from_batches(table.to_batches(max_chunksize=4))
    got = [b.column("n").to_pylist() for b in iter_batches(chunked, [5, 3, 2])]
    assert got == [[0, 1, 2, 3], [4], [5, 6, 7], [8, 9]]   # a batch spanning two chunks comes out as two


def test_queue_keeps_input_order_and_raises_the_first_failed_batch():
    batches = list(range(40))
    assert fleet._run_queue(batches, 3, lambda b: b * b) == [b * b for b in batches]

    started: list[int] = []
    lock = threading.Lock()

    def work(b):
        with lock:
            started.append(b)
        if b in (5, 9, 30):
            raise ValueError(f"batch {b}")
        return b

    with pytest.raises(ValueError, match="batch 5"):
        fleet._run_queue(batches, 2, work)
    assert 30 not in started   # after a failure, later batches are not started (9 may have been, in flight)


def _without_first_member_id(groups: pa.Table, bad: list[int]) -> pa.Table:
    """`groups` with the first member of each group in `bad` given a null member id (the group's error)."""
    members = groups.column("members").combine_chunks()
    flat = members.flatten()
    member_ids = flat.field("member_id").to_pylist()
    offsets = members.offsets.to_pylist()
    for g in bad:
        member_ids[offsets[g]] = None
    fields = [flat.type.field(i) for i in range(flat.type.num_fields)]
    children = [pa.array(member_ids, pa.string()) if f.name == "member_id" else flat.field(f.name) for f in fields]
    nested = pa.ListArray.from_arrays(members.offsets, pa.StructArray.from_arrays(children, fields=fields))
    return groups.set_column(1, "members", nested)


def test_loop_on_threads_raises_the_first_bad_group_in_input_order():
    fleet_ = generate_fleet(3000, seed=5, members=(2, 6), partitions=(10, 40))
    groups = _without_first_member_id(fleet_.groups, [1200, 2900])
    first = repr(fleet_.groups.column("group_id")[1200].as_py())
    for threads in (1, 2):
        with pytest.raises(Exception, match=first):
            assign_fleet_local(groups, fleet_.topics, "range", threads=threads)


def test_worker_threads_are_kept_between_calls():
    small = generate_fleet(1200, seed=2, members=(2, 4), partitions=(10, 20))
    assign_fleet_local(small.groups, small.topics, "range", threads=2)
    first = {t.ident for t in threading.enumerate() if t.name.startswith("kafkagroup-fleet")}
    assign_fleet_local(small.groups, small.topics, "range", threads=2)
    again = {t.ident for t in threading.enumerate() if t.name.startswith("kafkagroup-fleet")}
    assert first and again == first and len(first) <= 2
