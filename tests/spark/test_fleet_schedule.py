"""How the fleet loop hands out its batches (kafkagroup.spark.fleet._run_queue): one queue in input order whose
first failed batch's error is raised, no batch started after a failure; worker threads kept between calls.
The rows themselves are the same on any thread count (tests/spark/test_spark_fleet_loop.py,
tools/engine_digest.py's fleet line)."""
from __future__ import annotations

import threading

import pyarrow as pa
import pytest

from kafkagroup.spark import fleet
from kafkagroup.spark.fleet import assign_fleet_local, generate_fleet


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
    assert first and again == first and len(first) == 1   # and the calling thread
