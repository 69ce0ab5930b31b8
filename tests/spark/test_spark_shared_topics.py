"""A shared topic table is broadcast once per content and decoded once per worker and content
(kafkagroup.spark.shared_topics, executor.resolve_meta); results always follow the table's current
content, whatever form it is given in, round after round."""
from __future__ import annotations

import random

import pandas as pd
import pyarrow as pa
import pytest

from kafkagroup.errors import InvalidGroupError
from kafkagroup.spark import executor, shared_topics
from kafkagroup.spark.arrow_builder import TopicMeta
from kafkagroup.spark.fleet import assign_fleet_local, generate_fleet, member_rows
from kafkagroup.spark.shared_topics import SharedTopics

pytestmark = pytest.mark.spark


def _expected(fleet_groups: pa.Table, table: pa.Table) -> tuple[set, dict]:
    assignments, metrics = assign_fleet_local(fleet_groups, TopicMeta.from_arrow(table), "range", threads=1)
    return ({tuple(r.values()) for r in assignments.to_pylist()},
            dict(zip(metrics.column("group_id").to_pylist(), metrics.column("partitions").to_pylist())))


def _spark_rows(plan) -> tuple[set, dict]:
    return ({tuple(r) for r in plan.assignments.collect()},
            {r["group_id"]: r["partitions"] for r in plan.metrics.select("group_id", "partitions").collect()})


def test_results_follow_a_changing_topic_table_in_every_form(spark):
    """Each round every topic gains or loses partitions; the table is given as a new Arrow table, a dict
    and a pandas frame changed in place (the same objects every round), or a new Spark DataFrame. Every
    call must see the current counts; a repeated call with unchanged content reuses the broadcast."""
    from kafkagroup.spark import assign_groups

    fleet = generate_fleet(60, seed=13, members=(2, 8), partitions=(10, 60))
    groups = spark.createDataFrame(member_rows(fleet.groups))
    names = fleet.topics.column("topic").to_pylist()
    counts = fleet.topics.column("partitions").to_pylist()
    as_dict = dict(zip(names, counts))
    as_pandas = pd.DataFrame({"topic": names, "partitions": pd.Series(counts, dtype="int32")})
    rng = random.Random(17)
    seen_digests = set()
    for round_ in range(8):   # each form twice: the dict and the pandas frame are passed again after a change
        counts = [max(1, c + rng.randrange(-4, 5)) for c in counts]
        table = pa.table({"topic": names, "partitions": pa.array(counts, pa.int32())})
        as_dict.update(zip(names, counts))                       # same object, new content
        as_pandas["partitions"] = pd.Series(counts, dtype="int32")
        expected = _expected(fleet.groups, table)
        form = (table, as_dict, as_pandas, spark.createDataFrame(table.to_pandas()))[round_ % 4]
        plan = assign_groups(groups, form, strategy="range")
        assert _spark_rows(plan) == expected, f"round {round_}, {type(form).__name__}"
        shared = _shared_of(spark, form)
        assert shared.digest not in seen_digests               # new content: a new digest
        seen_digests.add(shared.digest)
        again = assign_groups(groups, form, strategy="range")   # unchanged content: the same broadcast
        assert _shared_of(spark, form) is shared
        assert _spark_rows(again) == expected
    assert len(shared_topics._BROADCASTS) <= shared_topics.SHARED_BROADCASTS


def _shared_of(spark, topics) -> SharedTopics:
    from kafkagroup.spark.api import _share_topics

    return _share_topics(spark, topics, check=False)


def test_same_content_in_another_object_shares_the_broadcast(spark):
    fleet = generate_fleet(20, seed=3, members=(2, 4), partitions=(5, 20))
    copy = pa.table({name: fleet.topics.column(name) for name in fleet.topics.column_names})
    first = _shared_of(spark, fleet.topics)
    assert _shared_of(spark, copy) is first
    frame = spark.createDataFrame(fleet.topics.to_pandas())
    assert _shared_of(spark, frame) is _shared_of(spark, frame)   # collected twice, same content


def test_bad_shared_table_is_refused_on_every_validated_call(spark):
    from kafkagroup.spark import assign_groups

    groups = spark.createDataFrame([("g", "m", ["t"])], "group_id string, member_id string, topics array<string>")
    bad = pa.table({"topic": ["t", "t"], "partitions": pa.array([3, 4], pa.int32())})
    for _ in range(2):
        with pytest.raises(InvalidGroupError, match="appears twice"):
            assign_groups(groups, bad, validate=True)
    with pytest.raises(Exception, match="appears twice"):   # unvalidated: the job's own decoding refuses it
        assign_groups(groups, bad).assignments.collect()


class _Unread:
    """A broadcast stand-in that fails when read: the worker must not need it for a known digest."""

    @property
    def value(self):
        raise AssertionError("broadcast read although its digest was decoded already")


def test_worker_reuses_decoded_meta_by_digest_and_decodes_new_content():
    executor._META_CACHE.clear()
    one = pa.table({"topic": ["a", "b"], "partitions": pa.array([3, 5], pa.int32())})
    two = pa.table({"topic": ["a", "b"], "partitions": pa.array([4, 5], pa.int32())})
    d1, d2 = shared_topics.table_digest(one), shared_topics.table_digest(two)
    assert d1 != d2
    meta = executor.resolve_meta(SharedTopics(d1, one))
    assert executor.resolve_meta(SharedTopics(d1, _Unread())) is meta
    other = executor.resolve_meta(SharedTopics(d2, two))
    assert list(other.count) == [4, 5] and list(meta.count) == [3, 5]
    executor.resolve_meta(SharedTopics("third", one))          # evicts the least recently used (d1)
    assert len(executor._META_CACHE) == shared_topics.WORKER_TABLES and d1 not in executor._META_CACHE
    with pytest.raises(AssertionError):
        executor.resolve_meta(SharedTopics(d1, _Unread()))
