"""The in-memory log against an independent model, over long seeded sequences of appends (idempotent
retries among them), reads and byte-bound evictions; batches read back with kafka-python's parser."""
from __future__ import annotations

import random

import pytest
from kafka.record.memory_records import MemoryRecords

from kafkagroup.server.log import BatchError, InMemoryLog, PartitionLog, split_batches
from server_wire import record_batch


def parse(records: bytes) -> list[tuple[int, bytes]]:
    out, mr = [], MemoryRecords(records)
    while mr.has_next():
        batch = mr.next_batch()
        assert batch.validate_crc()
        out += [(r.offset, r.value) for r in batch]
    return out


@pytest.mark.parametrize("seed", range(6))
def test_log_matches_a_model_over_time(seed):
    rng = random.Random(seed)
    bound = rng.choice([400, 2000, 1 << 30])
    log = PartitionLog(bound)
    model: list[tuple[int, bytes, int]] = []        # (offset, value, batch size) of every record ever appended
    sizes: list[tuple[int, int]] = []               # (base offset, batch bytes) of batches, oldest first
    sent: list[tuple[bytes, int]] = []              # idempotent batches sent: (bytes, base offset answered)
    next_seq = 0
    for step in range(300):
        op = rng.random()
        if op < 0.45 or not model:
            n = rng.randint(1, 5)
            values = [b"s%d-%d-%s" % (step, i, b"x" * rng.randint(0, 60)) for i in range(n)]
            idempotent = rng.random() < 0.5
            raw = record_batch(values, producer_id=7 if idempotent else -1, base_sequence=next_seq)
            if idempotent:
                next_seq += n
            base = log.append(split_batches(raw))
            assert base == (model[-1][0] + 1 if model else 0)
            model += [(base + i, v, len(raw)) for i, v in enumerate(values)]
            sizes.append((base, len(raw)))
            if idempotent:
                sent.append((raw, base))
        elif op < 0.55 and sent:
            raw, base = rng.choice(sent[-5:])     # a retry of one of the last five: answered, not appended
            hw = log.high_watermark
            assert log.append(split_batches(raw)) == base
            assert log.high_watermark == hw
        else:
            offset = rng.randint(max(0, log.log_start_offset - 2), log.high_watermark + 2)
            max_bytes = rng.choice([1, 200, 1 << 20])
            if not log.in_range(offset):
                assert offset < log.log_start_offset or offset > log.high_watermark
                continue
            got = parse(log.read(offset, max_bytes, at_least_one=True))
            if offset == log.high_watermark:
                assert got == []
                continue
            expected = [(o, v) for o, v, _ in model if o >= got[0][0]]
            assert got == expected[:len(got)]
            assert got[0][0] <= offset <= got[-1][0]          # starts with the batch holding the offset
        # the bound: the newest batches whose bytes fit (the newest always kept)
        kept, total = 0, 0
        for base, size in reversed(sizes):
            if kept and total + size > bound:
                break
            kept, total = kept + 1, total + size
        assert log.log_start_offset == sizes[-kept][0] and log.size_bytes == total
        assert log.high_watermark == (model[-1][0] + 1 if model else 0)


def test_split_batches_names_what_is_wrong():
    good = record_batch([b"a", b"b"])
    assert len(split_batches(good + good)) == 2
    cases = [(b"", "no record batch"), (good[:40], "truncated"), (good + good[:70], "declares length"),
             (good[:16] + b"\x01" + good[17:], "magic 1"), (good[:-1] + bytes([good[-1] ^ 1]), "CRC32C")]
    for data, needle in cases:
        with pytest.raises(BatchError, match=needle):
            split_batches(data)


def test_topics_and_auto_creation():
    log = InMemoryLog(num_partitions=3)
    assert log.partition("new", 2, create=True) is not None and len(log.topics["new"]) == 3
    assert log.partition("never", 0) is None and "never" not in log.topics
    assert log.partition("bad name", 0, create=True) is None
    assert log.topic_id("new") == InMemoryLog().topic_id("new") != log.topic_id("newer")   # stable across restarts
    first = log.topic_id("new")
    log.delete("new")
    log.create("new", 1)
    assert log.topic_id("new") != first          # a topic created again is a new topic, with a new id (as in Kafka)
    with pytest.raises(ValueError, match="illegal topic name"):
        log.create("..")
    with pytest.raises(ValueError, match="at least 1"):
        log.create("zero", 0)


@pytest.mark.parametrize("seed", range(4))
def test_offsets_for_times_match_a_record_scan(seed):
    """ListOffsets by timestamp and MAX_TIMESTAMP against a scan of every record (timestamps not monotonic,
    as producers may send them); in a compressed batch the batch's base offset and max timestamp stand in."""
    from kafka.record.default_records import DefaultRecordBatchBuilder
    rng = random.Random(seed)
    log = PartitionLog(1 << 30)
    records: list[tuple[int, int, int | None]] = []      # (offset, timestamp, base if its batch is compressed)
    batch_max: dict[int, int] = {}
    for _ in range(30):
        stamps = [rng.randint(0, 1000) for _ in range(rng.randint(1, 6))]
        b = DefaultRecordBatchBuilder(magic=2, compression_type=rng.choice([0, 0, 1]), is_transactional=False,
                                      producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=1 << 24)
        for i, ts in enumerate(stamps):
            b.append(i, timestamp=ts, key=None, value=b"v" * rng.randint(0, 300), headers=[])
        raw = bytes(b.build())
        compressed = raw[22] & 0x07 != 0                 # kafka-python keeps a batch raw if gzip does not shrink it
        base = log.append(split_batches(raw))
        batch_max[base] = max(stamps)
        records += [(base + i, ts, base if compressed else None) for i, ts in enumerate(stamps)]

    def expected(offset: int, ts: int, compressed_base: int | None) -> tuple[int, int]:
        return (offset, ts) if compressed_base is None else (compressed_base, batch_max[compressed_base])

    assert any(c is not None for _, _, c in records) and any(c is None for _, _, c in records)
    for target in range(0, 1002, 7):
        first = next(((o, ts, c) for o, ts, c in records if ts >= target), None)
        assert log.offset_for_timestamp(target) == (expected(*first) if first else (-1, -1)), target
    top = max(ts for _, ts, _ in records)
    assert log.max_timestamp() == expected(*next(r for r in records if r[1] == top))
