"""How the fleet loop hands out its batches (kafkagroup.spark.fleet._run_queue): one queue in input order whose
first failed batch's error is raised, no batch started after a failure; worker threads kept between calls,
still usable when a concurrent call replaces the kept pool, waited for when the queue gives up, and a child
forked at any moment can run the loop.
The rows themselves are the same on any thread count (tests/spark/test_spark_fleet_loop.py,
tools/engine_digest.py's fleet line)."""
from __future__ import annotations

import random
import threading

import pyarrow as pa
import pytest

from kafkagroup import _core
from kafkagroup.batch import available_cores
from kafkagroup.spark import fleet
from kafkagroup.spark.fleet import assign_fleet_local, generate_fleet
from spark_cases import nested_table, random_group


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


def test_worker_threads_are_kept_between_calls(monkeypatch):
    # A fresh pool (an earlier call in this process may have kept a larger one, whose threads would count),
    # then the threads of the pool the calls used: one kept thread for 2 threads, the same on the second call.
    # Per-group topic tables: a fleet with one shared table is cut into parts on native threads instead
    # (test_shared_topics_take_native_threads_not_the_pool).
    monkeypatch.setattr(fleet, "_POOL", None)
    rng = random.Random(2)
    small = nested_table([random_group(rng, f"g{i}", max_members=4) for i in range(200)])
    assign_fleet_local(small, None, "range", threads=2, batch_groups=50)
    pool = fleet._POOL
    first = {t.ident for t in pool._threads}
    assign_fleet_local(small, None, "range", threads=2, batch_groups=50)
    again = {t.ident for t in fleet._POOL._threads}
    assert fleet._POOL is pool and again == first and len(first) == 1   # and the calling thread


def test_shared_topics_take_native_threads_not_the_pool(monkeypatch):
    # One shared topic table, one round of batches: cut into parts planned on native threads in one call
    # (_core.plan_parts), so no batch goes through the kept pool; the rows are those of one thread.
    monkeypatch.setattr(fleet, "_POOL", None)
    calls = []
    real = _core.plan_parts
    monkeypatch.setattr(_core, "plan_parts", lambda *args: calls.append(args[-3:]) or real(*args))
    small = generate_fleet(1200, seed=2, members=(2, 4), partitions=(10, 20))
    two = assign_fleet_local(small.groups, small.topics, "range", threads=2)
    cores = max(2, available_cores())   # parts are sized for the cores, whatever the thread count
    part = max(fleet.MIN_AUTO_BATCH_GROUPS, -(-1200 // (cores * fleet.PARTS_PER_THREAD)))
    assert fleet._POOL is None and calls == [(part, fleet.MIN_PART_GROUPS, cores)]
    # one thread: the same parts, one after the other (the same work as on two), in the same record batches
    one = assign_fleet_local(small.groups, small.topics, "range", threads=1)
    assert fleet._POOL is None and calls == [(part, fleet.MIN_PART_GROUPS, cores)] * 2
    assert one[0].equals(two[0]) and one[1].drop_columns(["engine_us"]).equals(two[1].drop_columns(["engine_us"]))
    assert [len(c) for c in one[0].column(0).chunks] == [len(c) for c in two[0].column(0).chunks]
    assert [len(c) for c in one[1].column(0).chunks] == [len(c) for c in two[1].column(0).chunks]
    # past one round of batches (2 per thread of 100 groups: 400 < 1,200) too: equal parts of the batch size asked
    # for (the queue took these before the output memory's default limit was raised; fleet.assign_fleet_local)
    parted = assign_fleet_local(small.groups, small.topics, "range", threads=2, batch_groups=100)
    assert fleet._POOL is None and calls[2:] == [(100, None, 1)] and parted[0].equals(one[0])
    assert [len(c) for c in parted[1].column(0).chunks] == [100] * 12


def test_parts_are_capped_at_max_part_groups(monkeypatch):
    # A fleet big enough for parts over the cap (100,000 small groups: 12,500 per part on 2 threads, which
    # faulted more pages than parts of 2,000; fleet.MAX_PART_GROUPS) is cut at the cap: here the cap lowered.
    monkeypatch.setattr(fleet, "MAX_PART_GROUPS", 100)
    calls = []
    real = _core.plan_parts
    monkeypatch.setattr(_core, "plan_parts", lambda *args: calls.append(args[-3]) or real(*args))
    small = generate_fleet(1200, seed=2, members=(2, 4), partitions=(10, 20))
    capped = assign_fleet_local(small.groups, small.topics, "range", threads=2)
    assert calls == [100]
    one = assign_fleet_local(small.groups, small.topics, "range", threads=1)
    assert capped[0].equals(one[0])


def test_a_pool_handed_out_stays_usable_when_another_call_wants_more_threads():
    # _run_queue takes the kept pool, then submits to it; a concurrent call asking for more threads in
    # between replaces the kept pool. The pool already handed out must still take work (it was shut down:
    # "cannot schedule new futures after shutdown", raised out of the first call).
    pool = fleet._worker_pool(1)
    fleet._worker_pool(pool._max_workers + 2)   # another caller, more threads
    assert pool.submit(lambda: 7).result() == 7


def test_concurrent_calls_with_growing_thread_counts_all_succeed():
    # The race above as the loop meets it: one thread calls with 3 threads while another asks for more
    # and more (each a new kept pool). Every call returns its results.
    errors: list[BaseException] = []
    stop = threading.Event()

    def steady() -> None:
        while not stop.is_set():
            try:
                assert fleet._run_queue(list(range(6)), 3, lambda b: b) == list(range(6))
            except BaseException as e:   # noqa: BLE001 -- reported by the test thread
                errors.append(e)
                return

    other = threading.Thread(target=steady)
    other.start()
    try:
        for k in range(3, 20):
            assert fleet._run_queue(list(range(k)), k, lambda b: b) == list(range(k))
            if errors:
                break
    finally:
        stop.set()
        other.join()
    assert not errors, errors[0]


def test_no_batch_starts_after_the_queue_gave_up_on_a_failed_hand_out(monkeypatch):
    # If handing work to a kept thread fails (RuntimeError at interpreter shutdown; before the fix above, a
    # replaced pool), the helper already started must stop at its next batch and be waited for: the call's
    # error is the last thing that happens, not a thread working through the queue behind it.
    from concurrent.futures import ThreadPoolExecutor

    real = ThreadPoolExecutor(max_workers=1)
    in_first, go = threading.Event(), threading.Event()
    started: list[int] = []
    helper: list = []

    class SecondSubmitFails:
        def submit(self, fn):
            if helper:
                in_first.wait()   # the helper is inside its first batch
                go.set()          # and may go on as the hand-out fails
                raise RuntimeError("cannot schedule new futures after interpreter shutdown")
            helper.append(real.submit(fn))
            return helper[0]

    caller = threading.current_thread()

    def work(b: int) -> int:
        started.append(b)
        if threading.current_thread() is not caller and not in_first.is_set():   # the helper's first batch
            in_first.set()
            go.wait()
        return b

    monkeypatch.setattr(fleet, "_worker_pool", lambda threads: SecondSubmitFails())
    with pytest.raises(RuntimeError, match="interpreter shutdown"):
        fleet._run_queue(list(range(200)), 3, work)
    helper_done_at_return = helper[0].done()
    real.shutdown(wait=True)
    assert helper_done_at_return, "the call returned with its helper still taking batches"
    assert len(started) < 200


def test_a_child_forked_while_another_thread_takes_the_pool_can_call_the_loop():
    # A fork while another thread holds the pool's lock (inside _worker_pool) copies the lock held, with
    # no thread left in the child to release it: the child's first call on threads hung for ever.
    import os
    import signal

    if not hasattr(os, "fork"):
        pytest.skip("no fork")
    held, release = threading.Event(), threading.Event()

    def holder() -> None:
        with fleet._POOL_LOCK:
            held.set()
            release.wait()

    t = threading.Thread(target=holder)
    t.start()
    held.wait()
    try:
        pid = os.fork()
        if pid == 0:   # the child: one call on 2 threads, killed by the alarm if it hangs
            signal.alarm(10)
            try:
                ok = fleet._run_queue(list(range(8)), 2, lambda b: b * 2) == [b * 2 for b in range(8)]
            except BaseException:   # noqa: BLE001 -- the status says it
                ok = False
            os._exit(0 if ok else 1)
    finally:
        release.set()
        t.join()
    _, status = os.waitpid(pid, 0)
    assert status == 0, f"the child's call failed or hung (wait status {status})"


def test_helpers_are_handed_out_once_the_caller_prepared_its_first_batch(monkeypatch):
    # The part of a batch that holds the GIL (prepare) runs on the calling thread for the first batch before
    # any helper is handed work: started together, the threads prepare at the same time, pass the GIL to and
    # fro, and stay in lock-step (issue 26: 25 -> 3 voluntary context switches per 2-thread call at 10,000
    # small groups). Each batch's work gets its own prepare's result, on the thread that prepared it.
    from concurrent.futures import ThreadPoolExecutor

    events: list[tuple[str, int | None, str]] = []
    lock = threading.Lock()
    real = ThreadPoolExecutor(max_workers=2)

    class Recording:
        def submit(self, fn):
            with lock:
                events.append(("hand out", None, threading.current_thread().name))
            return real.submit(fn)

    def prepare(b: int) -> tuple[int, str]:
        with lock:
            events.append(("prepare", b, threading.current_thread().name))
        return b, threading.current_thread().name

    def work(prepared: tuple[int, str]) -> int:
        b, thread = prepared
        assert thread == threading.current_thread().name
        return b * 3

    monkeypatch.setattr(fleet, "_worker_pool", lambda threads: Recording())
    try:
        assert fleet._run_queue(list(range(12)), 3, work, prepare=prepare) == [b * 3 for b in range(12)]
    finally:
        real.shutdown(wait=True)
    caller = threading.current_thread().name
    assert events[:2] == [("prepare", 0, caller), ("hand out", None, caller)]
    assert sum(kind == "hand out" for kind, _, _ in events) == 2
    assert sorted(b for kind, b, _ in events if kind == "prepare") == list(range(12))


@pytest.mark.parametrize("threads", [2, 3, 4])
def test_capped_batches_come_in_whole_rounds_of_threads(threads):
    # A remainder batch leaves the other threads idle while it runs (100,000 small groups on 2 threads: 25
    # batches of 4,000 -- one thread alone for most of a batch at the end -- now 26 of 3,847).
    for num_groups in (100_000, 16_001, 40_000, 1_000_003):
        per_batch = fleet.auto_batch_groups(num_groups, threads)
        batches = -(-num_groups // per_batch)
        assert per_batch <= fleet.MAX_AUTO_BATCH_GROUPS
        assert batches % threads == 0, (num_groups, per_batch, batches)
        assert batches < -(-num_groups // fleet.MAX_AUTO_BATCH_GROUPS) + threads   # no more than one round more
    assert fleet.auto_batch_groups(100_000, 1) == fleet.MAX_AUTO_BATCH_GROUPS   # one thread: as large as allowed
    assert fleet.auto_batch_groups(10_000, 2) == 2_500                          # uncapped: two per thread, as before
