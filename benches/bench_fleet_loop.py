"""The single-process fleet loop (kafkagroup.spark.fleet.assign_fleet_local) on a fleet of small groups.

Fleet: generate_fleet(N, seed=7, members=(2, 12), partitions=(30, 150)) -- at N = 10,000: 55,864
members, 749,219 partitions, 1-20 topics per group, half the groups with uniform subscriptions, all
assigned fresh with range; N = 10,000 and 100,000 (KAFKAGROUP_FLEET_SIZES). Both outputs (assignment
rows and metrics rows) are built as Arrow tables in every timed call.

Rows (printed as ratios in the summary table):
- the loop on every core vs the same loop on one thread (threads over batches);
- the loop on one thread vs one engine call per group (the loop before kafkagroup.batch: the same
  interning and output code, but assign_arrays called group by group).
"""
from __future__ import annotations

import inspect
import os
import time

import numpy as np
import pyarrow as pa
import pytest
from conftest import time_peer

from kafkagroup.engine import assign_arrays
from kafkagroup.spark.fleet import assign_fleet_local, generate_fleet
from kafkagroup.spark import executor
from kafkagroup.spark.arrow_builder import TopicMeta, build_batch

SIZES = [int(n) for n in os.environ.get("KAFKAGROUP_FLEET_SIZES", "10000,100000").split(",")]
SMALL = {"members": (2, 12), "partitions": (30, 150)}
STRATEGY = "range"
_THREADS = "threads" in inspect.signature(assign_fleet_local).parameters   # False before kafkagroup.batch


@pytest.fixture(scope="module", params=SIZES, ids=lambda n: f"{n}groups")
def small_fleet(request):
    return generate_fleet(request.param, seed=7, **SMALL)


def loop(fleet, threads: int | None = None):
    if _THREADS:
        return assign_fleet_local(fleet.groups, fleet.topics, STRATEGY, threads=threads)
    return assign_fleet_local(fleet.groups, fleet.topics, STRATEGY)


def per_group_calls(fleet, batch_groups: int = 1000):
    """The loop as it was: per batch, interning, then one assign_arrays call per group, then the outputs."""
    meta = TopicMeta.from_arrow(fleet.topics)
    options = executor.AssignOptions(STRATEGY)
    assigned, metrics = [], []
    for batch in fleet.groups.to_batches(max_chunksize=batch_groups):
        problems = build_batch(batch, meta)
        owner = np.full(int(problems.part_off[-1]), -1, dtype=np.int32)
        values = {name: np.zeros(problems.num_groups, dtype=np.int64) for name in executor._ENGINE_METRICS}
        engine_us = np.zeros(problems.num_groups)
        for g in range(problems.num_groups):
            r = assign_arrays(STRATEGY, **problems.arrays(g))
            p0 = int(problems.part_off[problems.topic_off[g]])
            owner[p0:p0 + len(r.owner)] = r.owner
            for name in executor._ENGINE_METRICS:
                values[name][g] = getattr(r.metrics, name)
            engine_us[g] = r.engine_us
        plan = executor.BatchPlan(problems=problems, owner=owner, withheld=np.zeros(0, np.int64), metrics=values,
                                  engine_us=engine_us, errors={})
        assigned.extend(executor.assignment_batches_of(plan))
        metrics.append(pa.RecordBatch.from_arrays([problems.group_ids] + executor.metrics_columns(plan, STRATEGY),
                                                  schema=executor.METRICS_ARROW_SCHEMA))
    return (pa.Table.from_batches(assigned, schema=executor.ASSIGNMENT_ARROW_SCHEMA),
            pa.Table.from_batches(metrics, schema=executor.METRICS_ARROW_SCHEMA))


def _note(fleet, seconds: float, cpu: dict[str, list[float]] | None = None) -> str:
    note = (f"{fleet.groups.num_rows:,} groups, {fleet.num_members:,} members, {fleet.num_partitions:,} partitions: "
            f"{fleet.groups.num_rows / seconds:,.0f} groups/s")
    if cpu:   # CPU time of the process (every thread) per group: what the machine's other load does not change
        note += "; CPU per group " + ", ".join(f"{name} {np.median(v) * 1e6 / fleet.groups.num_rows:.1f} us"
                                              for name, v in cpu.items())
    return note


def test_loop_all_cores_vs_one_thread(benchmark, report, small_fleet):
    ones: list[float] = []
    cpu: dict[str, list[float]] = {"all cores": [], "1 thread": []}

    def one_thread():   # untimed setup: alternates with the timed call, same machine state
        start, start_cpu = time.perf_counter(), time.process_time()
        loop(small_fleet, threads=1)
        ones.append((time.perf_counter() - start) * 1000)
        cpu["1 thread"].append(time.process_time() - start_cpu)

    def all_cores():
        start_cpu = time.process_time()
        loop(small_fleet)
        cpu["all cores"].append(time.process_time() - start_cpu)

    benchmark.pedantic(all_cores, setup=one_thread, rounds=5, iterations=1, warmup_rounds=1)
    report.add(f"fleet loop, all cores, {small_fleet.groups.num_rows:,} small groups", benchmark, "loop, 1 thread",
               float(np.median(ones)), 0, _note(small_fleet, benchmark.stats.stats.median, cpu))


def test_loop_one_thread_vs_per_group_calls(benchmark, report, small_fleet):
    benchmark.pedantic(loop, args=(small_fleet, 1), rounds=3, iterations=1, warmup_rounds=1)
    peer = time_peer(lambda: per_group_calls(small_fleet), rounds=3, cap_s=120)
    report.add(f"fleet loop, 1 thread, {small_fleet.groups.num_rows:,} small groups", benchmark,
               "assign_arrays per group", peer, 120, _note(small_fleet, benchmark.stats.stats.median))
