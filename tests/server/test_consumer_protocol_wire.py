"""ConsumerGroupHeartbeat / ConsumerGroupDescribe and the KIP-848 side of OffsetCommit, OffsetFetch,
DescribeGroups v6 and ListGroups v5 over the wire, with raw kio requests: bad input gets the error code and
message Kafka 4.4.0 answers (each expectation below was observed on a one-node Kafka 4.4.0 broker with the
same requests), and the group keeps working afterwards.

Where serve differs from the broker, on purpose or not yet:
* Kafka computes target assignments off the request path, so right after a join its group may describe as
  Assigning; serve computes the target in the heartbeat (Stable at once);
* an invalid regex is refused with the same code and prefix; the reason after the colon is RE2's wording,
  not RE2/J's.
"""
from __future__ import annotations

import uuid
from typing import Any, Iterator

import pytest

from server_wire import KafkaWire, ServerThread, body, nested

from tests.coordinator.consumer_helpers import needs_server_assignors

pytestmark = needs_server_assignors
HB, DESCRIBE = 68, 69


@pytest.fixture
def wire() -> Iterator[KafkaWire]:
    server = ServerThread(topics={"t": 3}, config={"group.initial.rebalance.delay.ms": 0})
    try:
        with KafkaWire(server.address) as w:
            yield w
    finally:
        server.stop()


def hb(w: KafkaWire, version: int = 1, **fields: Any) -> Any:
    defaults = dict(instance_id=None, rack_id=None, rebalance_timeout=-1, subscribed_topic_names=None,
                    subscribed_topic_regex=None, server_assignor=None, topic_partitions=None)
    return w.request(HB, version, body(HB, version, **{**defaults, **fields}))


def join(w: KafkaWire, group: str, member: str, version: int = 1, **fields: Any) -> Any:
    return hb(w, version, group_id=group, member_id=member, member_epoch=0, rebalance_timeout=30000,
              **{"subscribed_topic_names": ("t",), "topic_partitions": (), **fields})


def commit(w: KafkaWire, group: str, member: str, epoch: int, version: int = 9) -> int:
    r = w.request(8, version, body(8, version, group_id=group, generation_id_or_member_epoch=epoch, member_id=member,
                                   group_instance_id=None, retention_time=-1, topics=(nested(
                                       8, version, "OffsetCommitRequestTopic", name="t", partitions=(nested(
                                           8, version, "OffsetCommitRequestPartition", partition_index=0,
                                           committed_offset=1, committed_leader_epoch=-1,
                                           committed_metadata=""),)),)))
    return int(r.topics[0].partitions[0].error_code)


def fetch(w: KafkaWire, group: str, member: str | None, epoch: int) -> Any:
    r = w.request(9, 9, body(9, 9, groups=(nested(9, 9, "OffsetFetchRequestGroup", group_id=group, member_id=member,
                                                  member_epoch=epoch, topics=None),), require_stable=False))
    return r.groups[0]


def test_join_heartbeat_and_bad_epochs(wire):
    g, m = "g", str(uuid.uuid4())
    r = join(wire, g, m)
    assert int(r.error_code) == 0 and r.member_id == m and r.heartbeat_interval.total_seconds() == 5
    assert [sorted(tp.partitions) for tp in r.assignment.topic_partitions] == [[0, 1, 2]]
    epoch = r.member_epoch
    ahead = hb(wire, group_id=g, member_id=m, member_epoch=epoch + 5, topic_partitions=())
    assert int(ahead.error_code) == 110 and ahead.error_message == (
        f"The consumer group member has a greater member epoch ({epoch + 5}) than the one known by the group "
        f"coordinator ({epoch}). The member must abandon all its partitions and rejoin.")
    ok = hb(wire, group_id=g, member_id=m, member_epoch=epoch, topic_partitions=None)
    assert (int(ok.error_code), ok.member_epoch, ok.assignment) == (0, epoch, None)     # nothing changed
    # the join's response lost: the member repeats it with epoch 0 and gets its assignment again
    again = join(wire, g, m)
    assert int(again.error_code) == 0 and [sorted(tp.partitions) for tp in again.assignment.topic_partitions] == \
        [[0, 1, 2]]


@pytest.mark.parametrize("fields, code, message", [
    (dict(group_id="g", member_id="nobody-x", member_epoch=1), 25, "Member nobody-x is not a member of group g."),
    (dict(group_id="none", member_id="x", member_epoch=1), 69, "Consumer group none not found."),
    (dict(group_id="g", member_id="m", member_epoch=-3), 42, "MemberEpoch is invalid."),
    (dict(group_id="g", member_id="m4", member_epoch=-2, instance_id="nope"), 25, "Instance id nope is unknown."),
    (dict(group_id="g", member_id="nobody", member_epoch=-1), 25, "Member nobody is not a member of group g."),
    (dict(group_id="none", member_id="nobody", member_epoch=-1), 69, "Group none not found."),
    (dict(group_id="g", member_id="m6", member_epoch=0, subscribed_topic_names=("t",), topic_partitions=()), 42,
     "RebalanceTimeoutMs must be provided in first request."),
    (dict(group_id="g", member_id="", member_epoch=0, rebalance_timeout=30000, subscribed_topic_names=("t",),
          topic_partitions=()), 42, "MemberId can't be empty."),
    (dict(group_id="g", member_id="m5", member_epoch=0, rebalance_timeout=30000, subscribed_topic_names=("t",),
          server_assignor="sticky", topic_partitions=()), 112,
     "ServerAssignor sticky is not supported. Supported assignors: uniform, range."),
    (dict(group_id="g", member_id="m3", member_epoch=0, rebalance_timeout=30000, subscribed_topic_regex="t(",
          topic_partitions=()), 128, "SubscribedTopicRegex `t(` is not a valid regular expression: "),
])
def test_bad_heartbeats_get_kafkas_answer_and_the_group_keeps_working(wire, fields, code, message):
    m = str(uuid.uuid4())
    assert int(join(wire, "g", m).error_code) == 0
    r = hb(wire, **fields)
    assert int(r.error_code) == code and r.error_message.startswith(message), (r.error_code, r.error_message)
    d = wire.request(DESCRIBE, 1, body(DESCRIBE, 1, group_ids=("g",), include_authorized_operations=False)).groups[0]
    assert [x.member_id for x in d.members] == [m] and d.group_state == "Stable"
    assert int(hb(wire, group_id="g", member_id=m, member_epoch=d.group_epoch, topic_partitions=None).error_code) == 0


def test_empty_subscription_and_server_generated_member_id_v0(wire):
    r = join(wire, "g", "e", subscribed_topic_names=())
    assert int(r.error_code) == 0 and list(r.assignment.topic_partitions) == []
    v0 = join(wire, "g", "", version=0)
    assert int(v0.error_code) == 0 and v0.member_id            # v0: the coordinator names the member


def test_static_membership_answers(wire):
    a = join(wire, "g", "sa", instance_id="inst")
    dup = join(wire, "g", "sb", instance_id="inst")
    assert int(dup.error_code) == 111 and dup.error_message == (
        "Static member sb with instance id inst cannot join the group because the instance id is owned by sa member.")
    other = hb(wire, group_id="g", member_id="sb", member_epoch=-2, instance_id="inst")
    assert int(other.error_code) == 82 and other.error_message == \
        "Static member sb with instance id inst was fenced by member sa."
    left = hb(wire, group_id="g", member_id="sa", member_epoch=-2, instance_id="inst")
    assert (int(left.error_code), left.member_epoch) == (0, -2)
    back = join(wire, "g", "sc", instance_id="inst")
    assert int(back.error_code) == 0 and [sorted(tp.partitions) for tp in back.assignment.topic_partitions] == \
        [[0, 1, 2]]
    old = hb(wire, group_id="g", member_id="sa", member_epoch=a.member_epoch, instance_id="inst",
             topic_partitions=())
    assert int(old.error_code) == 82


def test_commits_fetches_describe_and_list_of_a_consumer_group(wire):
    r = join(wire, "g", "m")
    epoch = r.member_epoch
    assert commit(wire, "g", "m", epoch) == 0
    assert commit(wire, "g", "m", epoch - 1) == 113             # STALE_MEMBER_EPOCH
    assert commit(wire, "g", "nobody", 1) == 25
    assert commit(wire, "g", "", -1) == 25                      # an admin commit to a group with members
    assert commit(wire, "g", "m", epoch, version=8) == 35       # a KIP-848 member needs OffsetCommit v9+
    assert int(fetch(wire, "g", "m", epoch + 3).error_code) == 113
    assert int(fetch(wire, "g", "nobody", 1).error_code) == 25
    assert int(fetch(wire, "none", "nobody", 1).error_code) == 0
    got = fetch(wire, "g", "m", epoch)
    assert [(t.name, [(p.partition_index, p.committed_offset) for p in t.partitions]) for t in got.topics] == \
        [("t", [(0, 1)])]
    v5 = wire.request(15, 5, body(15, 5, groups=("g",), include_authorized_operations=False)).groups[0]
    assert (int(v5.error_code), v5.group_state) == (0, "Dead")
    v6 = wire.request(15, 6, body(15, 6, groups=("g", "none"), include_authorized_operations=False)).groups
    assert [(int(x.error_code), x.error_message, x.group_state) for x in v6] == [
        (69, "Group g is not a classic group.", "Dead"), (69, "Group none not found.", "Dead")]
    listed = wire.request(16, 5, body(16, 5, states_filter=(), types_filter=("consumer",))).groups
    assert [(x.group_id, x.protocol_type, x.group_state, x.group_type) for x in listed] == \
        [("g", "consumer", "Stable", "consumer")]
    assert list(wire.request(16, 5, body(16, 5, states_filter=(), types_filter=("classic",))).groups) == []
    d = wire.request(DESCRIBE, 1, body(DESCRIBE, 1, group_ids=("g", "none"),
                                       include_authorized_operations=False)).groups
    assert (int(d[0].error_code), d[0].assignor_name, d[0].members[0].member_type) == (0, "uniform", 1)
    assert [(tp.topic_name, list(tp.partitions)) for tp in d[0].members[0].assignment.topic_partitions] == \
        [("t", [0, 1, 2])]
    assert (int(d[1].error_code), d[1].error_message) == (69, "Group none not found.")
    jg = wire.request(11, 9, body(11, 9, group_id="g", session_timeout=10000, rebalance_timeout=10000, member_id="",
                                  group_instance_id=None, protocol_type="consumer", reason=None, protocols=(
                                      nested(11, 9, "JoinGroupRequestProtocol", name="range", metadata=b""),)))
    assert int(jg.error_code) == 79          # Kafka 4.4 lets a classic member in (mixed groups: issue 23)
