"""OffsetCommit retention_time_ms (v2-v4): only -1 means "the broker's offsets.retention.minutes".

Kafka's rule, restated: ``OffsetMetadataManager.expireTimestampMs`` (group-coordinator, Java) and
``GroupCoordinatorAdapter.commitOffsets`` (core, Scala coordinator) both map
``retentionTimeMs == OffsetCommitRequest.DEFAULT_RETENTION_TIME`` (-1) to "no expire timestamp" and every other
value to ``expireTimestamp = currentTimeMs + retentionTimeMs`` -- so 0 or -2 give an expiry at or before the
commit and the offset goes at the next retention run.  ``GroupMetadata.removeExpiredOffsets`` / the Java
``OffsetExpirationCondition`` use an explicit expire timestamp when there is one.  kafkagroup saturates the sum
at int64's bounds where Java's long would wrap (see test_coord_request_limits.py).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from coord_harness import E, Harness
from kafkagroup.messages.api import OffsetCommitRequest
from kafkagroup.structs import TopicPartition

T0 = TopicPartition("t", 0)
I64_MIN, I64_MAX = -(2**63), 2**63 - 1
BROKER_RETENTION_MS = 100 * 60_000


def harness(**kw: object) -> Harness:
    h = Harness("S", **{"offsets.retention.minutes": 100}, **kw)  # type: ignore[arg-type]
    h.advance(10_000)   # a commit time well above 0, so "now + retention" is distinguishable from retention
    return h


def test_minus_one_uses_the_broker_retention() -> None:
    h = harness()
    h.commit({("t", 0): 1}, retention_time_ms=-1)
    assert h.group.offsets[T0].expire_timestamp is None
    h.advance(BROKER_RETENTION_MS - 1)
    assert h.coord.expire_offsets() == 0
    h.advance(1)
    assert h.coord.expire_offsets() == 1


@pytest.mark.parametrize("retention", [-2, -10_000, 0])
def test_other_non_positive_retentions_expire_at_the_next_run(retention: int) -> None:
    """Not "broker default": expireTimestamp = now + retention, which is already due."""
    h = harness()
    commit_time = h.now
    h.commit({("t", 0): 1}, retention_time_ms=retention)
    assert h.group.offsets[T0].expire_timestamp == commit_time + retention
    assert h.coord.expire_offsets() == 1
    assert h.fetch([("t", 0)]).offsets()[T0].committed_offset == -1


def test_positive_retention_sets_the_expire_timestamp() -> None:
    h = harness()
    commit_time = h.now
    h.commit({("t", 0): 1}, retention_time_ms=5_000)
    assert h.group.offsets[T0].expire_timestamp == commit_time + 5_000
    h.advance(4_999)
    assert h.coord.expire_offsets() == 0
    h.advance(1)
    assert h.coord.expire_offsets() == 1


def test_int64_extremes_stay_storable_and_reload(tmp_path: Path) -> None:
    """The lowest int64 retention is a valid wire value: its expiry (now + retention) is in range and due at
    once; the highest saturates at int64's maximum (never due).  Both survive a restart as written."""
    path = tmp_path / "retention.sqlite"
    h = harness(store=str(path))
    commit_time = h.now
    h.commit({("low", 0): 1}, retention_time_ms=I64_MIN)
    h.commit({("high", 0): 2}, retention_time_ms=I64_MAX)
    low, high = TopicPartition("low", 0), TopicPartition("high", 0)
    assert h.group.offsets[low].expire_timestamp == commit_time + I64_MIN
    assert h.group.offsets[high].expire_timestamp == I64_MAX
    h.coord.shutdown()
    again = Harness("S", store=str(path), clock=h.clock, **{"offsets.retention.minutes": 100})
    assert again.group.offsets[low].expire_timestamp == commit_time + I64_MIN
    assert again.group.offsets[high].expire_timestamp == I64_MAX
    assert again.coord.expire_offsets() == 1
    assert set(again.group.offsets) == {high}
    again.coord.shutdown()


@pytest.mark.parametrize("version, honoured", [(0, False), (1, False), (2, True), (4, True), (5, False), (9, False)])
def test_retention_time_counts_in_offset_commit_v2_to_v4_only(version: int, honoured: bool) -> None:
    """OffsetCommitRequest.json: RetentionTimeMs "versions": "2-4", "ignorable": true -- a client writing another
    version drops it silently, so the broker's own retention applies."""
    h = harness()
    commit_time = h.now
    errors = h.coord.offset_commit(OffsetCommitRequest.of(h.group_id, {("t", 0): 7}, retention_time_ms=5_000,
                                                          version=version)).errors()
    assert set(errors.values()) == {E.NONE}
    expire = h.group.offsets[T0].expire_timestamp
    assert expire == (commit_time + 5_000 if honoured else None)
