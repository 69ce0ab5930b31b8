"""Static members with the range assignor, one group per real client: the assignment each member's own
callbacks report, DescribeGroups (state, protocol, members with their instance ids, client ids, hosts,
subscriptions and assignments), and the offsets the consumers committed after reading what was produced,
as OffsetFetch returns them -- the same on Apache Kafka 4 and on `kafkagroup serve`."""
from __future__ import annotations

import pytest

from conformance_support import describe_group, fetch_offsets, owned_by, wait_group, wait_settled
from server_support import produce, wait_until

CLIENTS = ("java", "confluent", "kafka-python", "aiokafka")


@pytest.mark.parametrize("client", CLIENTS)
def test_static_members_range_describe_and_commits(conformance, client):
    topics = {"c.data-static": 3, "c.data-static-b": 2}

    def scenario(run):
        group = run.group(client)
        # Records first, keyed: the producer's partitioner is deterministic, so both servers hold the same.
        landed = {}
        for topic in topics:
            landed.update(produce(run.bootstrap, topic, [f"{client}-{topic}-{i}" for i in range(20)], offsets=True))
        end = {}                             # the log end of each partition this scenario wrote to
        for t, p, offset in landed.values():
            end[(t, p)] = max(end.get((t, p), 0), offset + 1)
        wire = run.wire()
        before = fetch_offsets(wire, group, [(t, p) for t, n in topics.items() for p in range(n)])
        consumers = {name: run.start(client, group, topics, name=name, group_instance_id=name, strategy="range")
                     for name in ("a", "b", "c")}
        wait_settled(list(consumers.values()), {(t, p) for t, n in topics.items() for p in range(n)})
        described = wait_group(wire, group, "Stable", members=3)
        wait_until(lambda: set(landed) <= {r[3] for c in consumers.values() for r in c.records()}, 60,
                   "every record produced here to be read")
        wait_until(lambda: all(_committed(consumers.values()).get(tp, -1) >= n for tp, n in end.items()), 60,
                   "the consumers to commit what they read")
        return {
            "before": before,
            "owned": owned_by(consumers),
            "described": described,
            "committed": fetch_offsets(wire, group),
        }

    conformance(scenario, name=client)


def _committed(consumers):
    out = {}
    for c in consumers:
        for tp, offset in c.committed().items():
            out[tp] = max(out.get(tp, -1), offset)
    return out
