"""The single-process fleet loop (kafkagroup.spark.fleet.assign_fleet_local: Arrow batches -> one native call
per batch, threads over batches) equals kafkagroup.assign group by group, round after round.

No Spark session: the loop runs the executors' batch code in this process. Each round's assignment
rows are fed back as the next round's owned claims (generation + 1) with members leaving and joining,
so sticky and cooperative-sticky rebalance their own output; groups with bad metadata are reported
per group (metrics.error) while the rest are assigned.
"""
from __future__ import annotations

import random

import pytest

import kafkagroup
from kafkagroup.errors import InvalidGroupError
from kafkagroup.spark.fleet import assign_fleet_local, generate_fleet, group_scenarios
from spark_cases import nested_table, random_group

STRATEGIES = kafkagroup.strategies()


def expected(groups, strategy):
    """{group_id: (sorted rows, metrics)} from kafkagroup.assign; None for a group it refuses."""
    out = {}
    for group in groups:
        try:
            r = kafkagroup.assign(strategy, group["topics"], group["members"], strict=False)
        except InvalidGroupError:
            out[group["group_id"]] = None
            continue
        rows = sorted((m, tp.topic, tp.partition) for m, tps in r.assignment.items() for tp in tps)
        out[group["group_id"]] = (rows, r.metrics)
    return out


def loop_result(assignments, metrics, strategy):
    rows: dict = {}
    for r in assignments.to_pylist():
        rows.setdefault(r["group_id"], []).append((r["member_id"], r["topic"], r["partition"]))
    out = {}
    for m in metrics.to_pylist():
        assert m["strategy"] == strategy
        if m["error"] is not None:
            assert m["group_id"] not in rows
            out[m["group_id"]] = None
            continue
        # The metrics table writes an unknown lower bound as null (a Spark sum must not add -1s); Metrics says -1.
        values = {name: m[name] for name in kafkagroup.Metrics.__dataclass_fields__}
        if values["moved_lower_bound"] is None:
            values["moved_lower_bound"] = -1
        metric = kafkagroup.Metrics(**values)
        out[m["group_id"]] = (sorted(rows.get(m["group_id"], [])), metric)
    return out


def feed_back(rng, groups, assignments):
    """Next round: each member owns what it was given, some members leave, one may join."""
    owned: dict = {}
    for r in assignments.to_pylist():
        owned.setdefault((r["group_id"], r["member_id"]), []).append((r["topic"], r["partition"]))
    out = []
    for group in groups:
        members = {}
        for member, spec in group["members"].items():
            if rng.random() < 0.15:
                continue
            members[member] = {**spec, "owned": owned.get((group["group_id"], member), []),
                               "generation": spec.get("generation", 0) + 1}
        if rng.random() < 0.5:
            members[f"joiner-{rng.randrange(10**6)}"] = {"topics": list(group["topics"])}
        out.append({**group, "members": members})
    return out


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_fleet_loop_equals_assign_per_group_over_rounds(strategy):
    rng = random.Random(f"loop-{strategy}")
    groups = [random_group(rng, f"g{i:03d}") for i in range(80)]
    groups[17]["topics"] = {**groups[17]["topics"], "bad-topic": -1}     # refused by both paths
    topic = next(iter(groups[23]["topics"]))                              # a member lists a topic twice
    groups[23]["members"]["twice"] = {"topics": [topic, topic]}
    groups[31]["members"].update({"s1": {"topics": [], "instance": "same"}, "s2": {"topics": [], "instance": "same"}})
    for _round in range(3):
        table = nested_table(groups)
        want = expected(groups, strategy)
        results = {}
        for threads, batch_groups in ((1, 1000), (2, 7), (3, 1)):
            assignments, metrics = assign_fleet_local(table, None, strategy, batch_groups=batch_groups, strict=False,
                                                      on_error="record", threads=threads)
            assert loop_result(assignments, metrics, strategy) == want
            results[threads] = assignments
        assert want["g017"] is None
        assert _round > 0 or (want["g023"] is None and want["g031"] is None)   # later rounds may drop the culprits
        groups = feed_back(rng, groups, results[1])


def test_fleet_loop_shared_topics_equals_assign_and_threads_agree():
    fleet = generate_fleet(300, seed=3, members=(2, 12), partitions=(30, 150))
    one = assign_fleet_local(fleet.groups, fleet.topics, "range", batch_groups=64, threads=1)
    two = assign_fleet_local(fleet.groups, fleet.topics, "range", batch_groups=64, threads=2)
    assert one[0].equals(two[0])
    assert one[1].drop_columns(["engine_us"]).equals(two[1].drop_columns(["engine_us"]))
    rows = {(r["group_id"], r["member_id"], r["topic"], r["partition"]) for r in one[0].to_pylist()}
    want = set()
    for gid, topics, members in group_scenarios(fleet.groups, fleet.topics):
        r = kafkagroup.assign("range", topics, members)
        want.update((gid, m, tp.topic, tp.partition) for m, tps in r.assignment.items() for tp in tps)
    assert rows == want


def test_fleet_loop_raise_names_the_group_and_rejects_bad_settings():
    rng = random.Random(1)
    groups = [random_group(rng, f"g{i}") for i in range(5)]
    groups[3]["topics"] = {"t": -2}
    with pytest.raises(InvalidGroupError, match="group 'g3'"):
        assign_fleet_local(nested_table(groups), None, "range", strict=False)
    with pytest.raises(ValueError, match="threads must be >= 1"):
        assign_fleet_local(nested_table(groups), None, "range", threads=0)
    with pytest.raises(ValueError, match="batch_groups must be >= 1"):
        assign_fleet_local(nested_table(groups), None, "range", batch_groups=0)


def test_topic_catalog_finds_rows_as_index_in_does():
    """TopicMeta's native catalog (hashed once) answers as pyarrow's index_in: first row of a repeated
    name, -1 for absent names and for null rows, on sliced arrays and names above U+FFFF; the repeat is
    the shared table's error."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from kafkagroup.spark.arrow_builder import TopicMeta

    table_names = pa.array(["x", "t1", "\U0001f600", "", "t2", "t1", None, "a" * 300] * 3).slice(2, 17)
    meta = TopicMeta.from_arrow(pa.table({"topic": table_names, "partitions": pa.array([1] * 17, pa.int32())}))
    queries = ["zz", "t1", "", "\U0001f600", "a" * 300, "t2", "x", "a" * 299]
    want = pc.fill_null(pc.index_in(pa.array(queries), value_set=table_names, skip_nulls=True), -1).to_pylist()
    assert [meta.catalog().find(q) for q in queries] == want
    assert any("appears twice in the topic metadata" in message for _, message in meta.row_errors)


def test_cli_local_loop_says_how_many_threads(tmp_path, capsys):
    import argparse

    import pyarrow.parquet as pq

    from kafkagroup.spark import cli

    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    args = parser.parse_args(["--example", "12", "--local", "--threads", "2", "--out", str(tmp_path)])
    assert cli.run(args) == 0
    run = capsys.readouterr()
    # the diagnostic on stderr, the result on stdout (issue 25)
    assert "local loop: 12 groups on 2 thread(s)" in run.err and "groups/s) on 2 thread(s)" in run.out
    metrics = pq.read_table(tmp_path / "metrics")
    assert metrics.num_rows == 12
    assert pq.read_table(tmp_path / "assignments").num_rows == sum(metrics.column("assigned").to_pylist())
    with pytest.raises(InvalidGroupError, match="--local assigns"):
        cli.check_arguments(parser.parse_args(["--example", "3", "--local", "--compare", "--out", str(tmp_path)]))


def test_fleet_loop_reuses_a_topic_table_and_never_its_stale_metadata():
    """A topic table is hashed once per table object (TopicMeta.of_table) and reused by later calls; a
    changed table is a new object and is read afresh, round after round, even when a dropped table's id
    is reused; a caller's own TopicMeta gives the same rows."""
    import gc

    import pyarrow as pa

    from kafkagroup.spark import arrow_builder
    from kafkagroup.spark.arrow_builder import TopicMeta

    fleet = generate_fleet(120, seed=11, members=(2, 6), partitions=(10, 40))
    topics = fleet.topics
    assert TopicMeta.of_table(topics) is TopicMeta.of_table(topics)
    meta = TopicMeta.from_arrow(topics)
    assert TopicMeta.of_table(meta) is meta
    by_meta = assign_fleet_local(fleet.groups, meta, "range", threads=1)
    assert assign_fleet_local(fleet.groups, topics, "range", threads=1)[0].equals(by_meta[0])
    rng = random.Random(5)
    for _round in range(4):   # each round: every topic gains or loses partitions, in a new table
        counts = [max(1, c + rng.randrange(-3, 4)) for c in topics.column("partitions").to_pylist()]
        topics = pa.table({"topic": topics.column("topic"), "partitions": pa.array(counts, pa.int32())})
        gc.collect()
        assignments, metrics = assign_fleet_local(fleet.groups, topics, "range", batch_groups=50, threads=2)
        fresh = assign_fleet_local(fleet.groups, TopicMeta.from_arrow(topics), "range", batch_groups=50, threads=1)
        assert assignments.equals(fresh[0])
        want = {gid: sum(counts.values()) for gid, counts, _ in group_scenarios(fleet.groups, topics)}
        assert dict(zip(metrics.column("group_id").to_pylist(), metrics.column("partitions").to_pylist())) == want
    live = arrow_builder._SHARED_META.live_objects()
    assert len(live) <= arrow_builder.SHARED_META_TABLES
    assert all(t is not None for t in live)   # a dropped table's entry is gone with it


def test_fleet_loop_reads_list_view_columns_as_lists():
    """A list_view members column (per-entry offsets and sizes, not n+1 ordered offsets) gives the same rows
    as the same groups as a plain list column: only list and large_list take the offsets fast path."""
    import pyarrow as pa

    fleet = generate_fleet(40, seed=3, members=(2, 5), partitions=(5, 20))
    members = fleet.groups.column("members").combine_chunks()
    order = list(range(len(members)))[::-1]   # the views point into the values in reverse order
    values = pa.concat_arrays([members.values.slice(members.offsets[i].as_py(), len(members[i])) for i in order])
    starts = {i: 0 for i in order}
    position = 0
    for i in order:
        starts[i] = position
        position += len(members[i])
    viewed = pa.ListViewArray.from_arrays(pa.array([starts[i] for i in range(len(members))], pa.int32()),
                                          pa.array([len(members[i]) for i in range(len(members))], pa.int32()),
                                          values)
    as_view = fleet.groups.set_column(fleet.groups.schema.get_field_index("members"), "members", viewed)
    assert as_view.column("members").to_pylist() == fleet.groups.column("members").to_pylist()
    got = assign_fleet_local(as_view, fleet.topics, "range", threads=1)
    want = assign_fleet_local(fleet.groups, fleet.topics, "range", threads=1)
    assert got[0].equals(want[0])
    assert got[1].drop_columns(["engine_us"]).equals(want[1].drop_columns(["engine_us"]))   # engine_us: a timing
