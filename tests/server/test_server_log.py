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


def compressed(raw: bytes, codec: int, *, xerial: bool = False) -> bytes:
    """``raw`` (one uncompressed v2 batch) with its records compressed by ``codec`` as producers write them
    (snappy: raw, as librdkafka writes it, or in Java's xerial framing), attributes and CRC32C updated."""
    import struct
    import zlib

    import cramjam
    from crc32c import crc32c

    records = raw[61:]
    if codec == 1:
        packed = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
        body = packed.compress(records) + packed.flush()
    elif codec == 2:
        block = bytes(cramjam.snappy.compress_raw(records))
        body = (b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + struct.pack(">i", len(block)) + block) if xerial \
            else block
    elif codec == 3:
        body = bytes(cramjam.lz4.compress(records))
    else:
        body = bytes(cramjam.zstd.compress(records))
    batch = bytearray(raw[:61] + body)
    struct.pack_into(">i", batch, 8, len(batch) - 12)
    struct.pack_into(">h", batch, 21, (struct.unpack_from(">h", batch, 21)[0] & ~0x07) | codec)
    struct.pack_into(">I", batch, 17, crc32c(bytes(batch[21:])))
    return bytes(batch)


CODECS = {"none": (0, False), "gzip": (1, False), "snappy": (2, False), "snappy-xerial": (2, True),
          "lz4": (3, False), "zstd": (4, False)}


@pytest.mark.parametrize("seed", range(4))
def test_offsets_for_times_match_a_record_scan(seed):
    """ListOffsets by timestamp and MAX_TIMESTAMP against a scan of every record (timestamps not monotonic, as
    producers may send them), batches compressed with every codec: the answer is the record's own offset and
    timestamp, inside compressed batches too (issue 20, item 3: before, a compressed batch answered its base
    offset and max timestamp)."""
    rng = random.Random(seed)
    log = PartitionLog(1 << 30)
    records: list[tuple[int, int]] = []                   # (offset, timestamp) of every record
    for _ in range(30):
        stamps = [rng.randint(0, 1000) for _ in range(rng.randint(1, 6))]
        raw = record_batch([b"v" * rng.randint(0, 300) for _ in stamps])
        raw = _with_timestamps(raw, stamps)
        codec, xerial = CODECS[rng.choice(sorted(CODECS))]
        batch = compressed(raw, codec, xerial=xerial) if codec else raw
        base = log.append(split_batches(batch))
        records += [(base + i, ts) for i, ts in enumerate(stamps)]

    for target in range(0, 1002, 7):
        first = next(((o, ts) for o, ts in records if ts >= target), (-1, -1))
        assert log.offset_for_timestamp(target) == first, target
    top = max(ts for _, ts in records)
    assert log.max_timestamp() == next(r for r in records if r[1] == top)


def _with_timestamps(raw: bytes, stamps: list[int]) -> bytes:
    """kafka-python's builder, with each record's own timestamp (record_batch numbers them from a base)."""
    from kafka.record.default_records import DefaultRecordBatchBuilder
    from kafka.record.memory_records import MemoryRecords
    values = [r.value for r in MemoryRecords(raw).next_batch()]
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                        producer_epoch=-1, base_sequence=-1, batch_size=1 << 24)
    for i, (value, ts) in enumerate(zip(values, stamps)):
        builder.append(i, timestamp=ts, key=None, value=value, headers=[])
    return bytes(builder.build())


@pytest.mark.parametrize("codec", sorted(CODECS))
def test_a_compressed_batch_of_100_records_answers_the_record(codec):
    """The issue's case: 100 records with timestamps T0, T0+1000, ... in one batch: T0+50000 is offset 50
    and MAX_TIMESTAMP is offset 99, whatever the codec; the batch still reads back as the client wrote it."""
    t0 = 1_700_000_000_000
    number, xerial = CODECS[codec]
    raw = _with_timestamps(record_batch([b"r%d" % i for i in range(100)]), [t0 + 1000 * i for i in range(100)])
    batch = compressed(raw, number, xerial=xerial) if number else raw
    log = PartitionLog(1 << 30)
    log.append(split_batches(record_batch([b"before"])))              # offset 0: the batch starts at 1
    log.append(split_batches(batch))
    assert log.offset_for_timestamp(t0 + 50_000) == (51, t0 + 50_000)
    assert log.offset_for_timestamp(t0 + 49_999) == (51, t0 + 50_000)
    assert log.max_timestamp() == (100, t0 + 99_000)
    stored = log.read(1, 1 << 30, True)                              # as sent, base offset 1 and epoch 0 set
    assert stored == (1).to_bytes(8, "big") + batch[8:12] + bytes(4) + batch[16:]


def test_a_compressed_batch_that_does_not_decompress_answers_the_batch():
    """Bytes that are not of the batch's codec (the client's CRC is intact; serve does not decompress at
    produce time): the lookup falls back to the batch's base offset and max timestamp, and says nothing else."""
    import struct
    from crc32c import crc32c
    raw = bytearray(compressed(record_batch([b"a", b"b"]), 4))
    raw[61:65] = b"\x00\x00\x00\x00"                                   # break the zstd frame magic
    struct.pack_into(">I", raw, 17, crc32c(bytes(raw[21:])))
    log = PartitionLog(1 << 30)
    log.append(split_batches(bytes(raw)))
    assert log.offset_for_timestamp(0) == (0, 1_700_000_000_001)
