"""Mixed groups (issue 23) against `kafkagroup serve` with real clients nobody here wrote: a classic consumer
(confluent-kafka's librdkafka, kafka-python or aiokafka -- with their own assignor or kafkagroup's drop-in one;
all use JoinGroup/SyncGroup) and a confluent `group.protocol=consumer` consumer in one group.

The classic member starts alone (a classic group); the consumer-protocol member's first heartbeat upgrades the
group and both share the partitions; records produced while they share are each read once between them; when
the consumer-protocol member leaves, the group turns back into a classic group and the classic member owns
everything.  An independent tracker (the clients' own assign/revoke callbacks, replayed in arrival order)
checks that no partition ever has two live owners.  The same scenario runs against Apache Kafka 4.4.0 in
tests/conformance/test_conf_migration.py.
"""
from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from server_support import never_two_owners, produce, thread_server, wait_until
from server_wire import KafkaWire, body

from test_consumer_protocol_clients import CONFIG, SETTLE_S, settled, wait_settled
from tests.coordinator.consumer_helpers import needs_server_assignors

pytestmark = needs_server_assignors
CONSUMER = {"group_protocol": "consumer"}


def describe(address: Any, group: str) -> Any:
    with KafkaWire(address) as wire:
        return wire.request(69, 1, body(69, 1, group_ids=(group,), include_authorized_operations=False)).groups[0]




def keys(members) -> Counter:
    return Counter(r[3] for m in members for r in m.records())


@pytest.mark.parametrize("client,strategy", [
    ("confluent", "range"), ("confluent", "cooperative-sticky"),
    ("kafka-python", "range"), ("kafka-python", "kafkagroup-cooperative-sticky"),
    ("aiokafka", "range"), ("aiokafka", "kafkagroup-range")])
def test_classic_and_consumer_protocol_members_share_a_group_then_the_classic_one_takes_everything(
        consumers, client, strategy):
    srv = thread_server({"t": 4}, CONFIG)
    try:
        every = {("t", p) for p in range(4)}
        k = consumers.start(client, srv.bootstrap, "g", ["t"], name="classic", strategy=strategy)
        wait_settled([k], every)
        c = consumers.start("confluent", srv.bootstrap, "g", ["t"], name="consumer", **CONSUMER)
        wait_settled([k, c], every)
        d = wait_until(lambda: (lambda d: d if d.group_state == "Stable" and len(d.members) == 2 else None)(
            describe(srv.address, "g")), SETTLE_S, "the upgraded group to describe as Stable with 2 members")
        assert sorted(m.member_type for m in d.members) == [0, 1]          # classic, consumer
        assert sorted(sum(len(tp.partitions) for tp in m.assignment.topic_partitions) for m in d.members) == [2, 2]
        shared = [f"s{i}" for i in range(40)]
        produce(srv.bootstrap, "t", shared)
        wait_until(lambda: set(shared) <= set(keys([k, c])), SETTLE_S, "the shared records to be read")
        assert all(keys([k, c])[key] == 1 for key in shared), "a record produced while shared was read twice"
        assert keys([k]) and keys([c])                                     # each read its own share
        c.stop()                                                           # leave: the group is classic again
        wait_until(lambda: settled([k], every), SETTLE_S, lambda: f"the classic member to own everything "
                                                                  f"({sorted(k.owned)})")
        assert describe(srv.address, "g").error_code == 69                 # GROUP_ID_NOT_FOUND: not a consumer group
        after = [f"a{i}" for i in range(10)]
        produce(srv.bootstrap, "t", after)
        wait_until(lambda: set(after) <= set(keys([k])), SETTLE_S, "the classic member to read what follows")
        never_two_owners([k, c], stamp="wall")
    finally:
        srv.stop()
