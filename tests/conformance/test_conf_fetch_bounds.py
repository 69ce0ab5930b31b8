"""How much one Fetch answers (issue 24), the same as Apache Kafka 4: the request's max_bytes bounds the answer,
each partition's partition_max_bytes (within what is left) bounds that partition, and from v3 on the first
batch of the first partition with data comes back even when it is larger than both (KIP-74); a later
partition gets nothing that does not fit (ReplicaManager.readFromLocalLog).

Compared: the whole batches each partition returns (base offset, size) and its error code, by raw Fetch v12
on a topic of two partitions holding five ~100 kB batches each.  Not compared: a trailing *partial* batch.
Kafka answers a byte range of its log segment cut at the limit, so the last batch may be cut short (clients
drop it and fetch it again); serve answers whole batches only.  Either way the consumer gets the same
records.  (``fetch.max.bytes``, the broker's cap on max_bytes, enters the same rule as ``min(max_bytes,
fetch.max.bytes)``; tests/server/test_server_hostile.py checks it on serve.)
"""
from __future__ import annotations

import struct

from conformance_support import plain
from server_wire import body, nested, record_batch

TOPIC = "c.fetch-bounds"      # 2 partitions
PRODUCE, FETCH = 0, 1
V = 12


def whole_batches(records: bytes | None) -> list[list[int]]:
    """[base offset, size] of every complete batch in a records field (a cut-off last one left out)."""
    out, pos, data = [], 0, records or b""
    while pos + 12 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        if pos + 12 + length > len(data):
            break
        out.append([base, 12 + length])
        pos += 12 + length
    return out


def test_fetch_bounds_match_kafka(conformance):
    def scenario(run):
        wire = run.wire()
        batch = record_batch([b"v" * 100_000])
        for partition in (0, 1):
            for _ in range(5):
                r = wire.request(PRODUCE, 9, body(PRODUCE, 9, transactional_id=None, acks=-1, timeout=10_000,
                                                  topic_data=(nested(PRODUCE, 9, "TopicProduceData", name=TOPIC,
                                                                     partition_data=(nested(
                                                                         PRODUCE, 9, "PartitionProduceData",
                                                                         index=partition, records=batch),)),)))
                assert plain(r.responses[0].partition_responses[0].error_code) == 0

        def fetch(max_bytes, partition_max_bytes, offsets=(0, 0)):
            parts = tuple(nested(FETCH, V, "FetchPartition", partition=p, current_leader_epoch=-1,
                                 fetch_offset=offsets[p], last_fetched_epoch=-1, log_start_offset=-1,
                                 partition_max_bytes=partition_max_bytes) for p in (0, 1))
            answer = wire.request(FETCH, V, body(FETCH, V, replica_id=-1, max_wait=0, min_bytes=0,
                                                 max_bytes=max_bytes, isolation_level=0, session_id=0,
                                                 session_epoch=-1, rack_id="", forgotten_topics_data=(),
                                                 topics=(nested(FETCH, V, "FetchTopic", topic=TOPIC,
                                                                partitions=parts),)))
            return [plain(answer.error_code),
                    [[p.partition_index, plain(p.error_code), p.high_watermark, whole_batches(p.records)]
                     for p in answer.responses[0].partitions]]

        return {
            "everything fits": fetch(10_000_000, 10_000_000),
            "max_bytes: two batches of p0, p1's first does not fit": fetch(300_000, 10_000_000),
            "partition bound of 1.5 batches": fetch(10_000_000, 150_000),
            "partition bound below one batch: only p0's first": fetch(10_000_000, 50_000),
            "max_bytes below one batch: p0's first anyway": fetch(50_000, 10_000_000),
            "p0 at its end: p1's first batch, larger than max_bytes": fetch(50_000, 10_000_000, offsets=(5, 0)),
            "out of range on p0": fetch(10_000_000, 10_000_000, offsets=(99, 0)),
        }

    conformance(scenario)
