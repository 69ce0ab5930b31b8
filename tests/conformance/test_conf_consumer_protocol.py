"""KIP-848 consumer groups, Apache Kafka 4 vs `kafkagroup serve`: real clients with group.protocol=consumer
(confluent-kafka and the Java 4.4 consumer) joining, scaling in, restarting a static member and choosing the
range assignor; and raw ConsumerGroupHeartbeat / OffsetCommit / OffsetFetch / DescribeGroups v6 / ListGroups v5
requests with bad input.  Observations: error codes, what each client holds, ConsumerGroupDescribe.

Both start a new group at epoch 1, so its first member gets epoch 2 (test_a_new_groups_first_member_gets_epoch_2).
Not compared, on purpose: a group's state right after a change, and the epochs that follow several joins:
Kafka 4.4 batches target computations (group.consumer.assignment.interval.ms, 1 s) and runs them off the
request path, so it may describe Assigning where serve -- which computes the target at the heartbeat that
changes the group (its default interval is 0, see tests/coordinator/test_consumer_time_to_stable.py) -- is
already Reconciling or Stable, and one Kafka target may cover joins serve assigned one by one."""
from __future__ import annotations

from typing import Any

import pytest

from conformance_support import plain, settled, wait_settled
from server_support import wait_until
from server_wire import body, nested

from tests.coordinator.consumer_helpers import needs_server_assignors

pytestmark = needs_server_assignors
HB, CG_DESCRIBE = 68, 69
CONSUMER = {"group_protocol": "consumer"}


def hb(wire, **fields):
    d = dict(instance_id=None, rack_id=None, rebalance_timeout=-1, subscribed_topic_names=None,
             subscribed_topic_regex=None, server_assignor=None, topic_partitions=None)
    version = fields.pop("version", 1)
    return wire.request(HB, version, body(HB, version, **{**d, **fields}))


def cg_describe(wire, group):
    return wire.request(CG_DESCRIBE, 1, body(CG_DESCRIBE, 1, group_ids=(group,),
                                               include_authorized_operations=False)).groups[0]


def wait_stable(wire, group, members):
    return wait_until(lambda: (lambda d: d if d.group_state == "Stable" and len(d.members) == members
                               and all(m.member_epoch == d.assignment_epoch for m in d.members) else None)(
        cg_describe(wire, group)), 60, f"{group} to be Stable with {members} members")


def shape(d, partitions: bool = True) -> dict[str, Any]:
    """A ConsumerGroupDescribe answer without what may differ (ids, absolute epochs); with partitions=False
    only how many each member holds (which member gets which partition follows the random member ids)."""
    def held(m):
        tps = sorted([tp.topic_name, sorted(tp.partitions)] for tp in m.assignment.topic_partitions)
        return tps if partitions else sum(len(p) for _, p in tps)
    return {"state": d.group_state, "assignor": d.assignor_name, "epochs_agree": d.group_epoch == d.assignment_epoch,
            "members": sorted([m.member_type, m.instance_id, held(m)] for m in d.members)}


def test_bad_heartbeats_commits_and_fetches(conformance):
    def scenario(run):
        g, w, out = run.group(), run.wire(), {}
        topic = "c.three"
        join = dict(member_epoch=0, rebalance_timeout=30000, subscribed_topic_names=(topic,), topic_partitions=())
        wait_until(lambda: int(w.request(10, 4, body(10, 4, key_type=0, coordinator_keys=(g, g + ".none")))
                               .coordinators[0].error_code) == 0, 30, "the coordinator")
        a = hb(w, group_id=g, member_id="A", **join)
        out["join"] = plain(a.error_code)
        e = a.member_epoch
        cases = {
            "future epoch": dict(group_id=g, member_id="A", member_epoch=e + 5, topic_partitions=()),
            "unknown member": dict(group_id=g, member_id="nobody", member_epoch=1),
            "unknown group": dict(group_id=g + ".none", member_id="x", member_epoch=1),
            "epoch -3": dict(group_id=g, member_id="A", member_epoch=-3),
            "static leave unknown instance": dict(group_id=g, member_id="X", member_epoch=-2, instance_id="nope"),
            "bad regex": dict(group_id=g, member_id="R", member_epoch=0, rebalance_timeout=30000,
                              subscribed_topic_regex="c(", topic_partitions=()),
            "unsupported assignor": dict(group_id=g, member_id="U", server_assignor="sticky", **join),
            "no rebalance timeout": dict(group_id=g, member_id="N", member_epoch=0, subscribed_topic_names=(topic,),
                                         topic_partitions=()),
            "owned partitions on join": dict(group_id=g, member_id="O", member_epoch=0, rebalance_timeout=30000,
                                             subscribed_topic_names=(topic,), topic_partitions=None),
            "empty member id v1": dict(group_id=g, member_id="", **join),
            "leave unknown member": dict(group_id=g, member_id="nobody", member_epoch=-1),
            "leave unknown group": dict(group_id=g + ".none", member_id="nobody", member_epoch=-1),
        }
        for label, fields in cases.items():
            r = hb(w, **fields)
            out[label] = [plain(r.error_code), r.error_message is not None]
        again = hb(w, group_id=g, member_id="A", member_epoch=e, topic_partitions=None)
        out["A still in"] = [plain(again.error_code), again.member_epoch == e]
        s1 = hb(w, group_id=g, member_id="S1", instance_id="inst", **join)
        out["static"] = [plain(s1.error_code),
                         plain(hb(w, group_id=g, member_id="S2", instance_id="inst", **join).error_code),
                         plain(hb(w, group_id=g, member_id="S2", member_epoch=-2, instance_id="inst").error_code)]
        left = hb(w, group_id=g, member_id="S1", member_epoch=-2, instance_id="inst")
        out["static leave"] = [plain(left.error_code), left.member_epoch]
        out["static back"] = plain(hb(w, group_id=g, member_id="S3", instance_id="inst", **join).error_code)
        out["old static id"] = plain(hb(w, group_id=g, member_id="S1", member_epoch=s1.member_epoch,
                                        instance_id="inst", topic_partitions=()).error_code)

        def commit(member, epoch, version=9):
            r = w.request(8, version, body(8, version, group_id=g, generation_id_or_member_epoch=epoch,
                                           member_id=member, group_instance_id=None, retention_time=-1, topics=(
                nested(8, version, "OffsetCommitRequestTopic", name=topic, partitions=(
                    nested(8, version, "OffsetCommitRequestPartition", partition_index=0, committed_offset=7,
                           committed_leader_epoch=-1, committed_metadata=""),)),)))
            return plain(r.topics[0].partitions[0].error_code)

        epoch_a = hb(w, group_id=g, member_id="A", member_epoch=e, topic_partitions=None).member_epoch
        out["commits"] = {"current": commit("A", epoch_a), "stale": commit("A", epoch_a - 1),
                          "unknown member": commit("nobody", 1), "admin, group with members": commit("", -1),
                          "v8 by a member": commit("A", epoch_a, 8)}

        def fetch(group, member, epoch):
            r = w.request(9, 9, body(9, 9, groups=(nested(9, 9, "OffsetFetchRequestGroup", group_id=group,
                                                          member_id=member, member_epoch=epoch, topics=None),),
                                     require_stable=False)).groups[0]
            return [plain(r.error_code), sorted([t.name, p.partition_index, p.committed_offset]
                                                for t in r.topics for p in t.partitions)]

        out["fetches"] = {"stale": fetch(g, "A", epoch_a + 3), "unknown member": fetch(g, "nobody", 1),
                          "unknown group": fetch(g + ".none", "nobody", 1), "current": fetch(g, "A", epoch_a),
                          "admin": fetch(g, None, -1)}
        out["DescribeGroups v5"] = [[plain(x.error_code), x.group_state, x.protocol_type] for x in w.request(
            15, 5, body(15, 5, groups=(g,), include_authorized_operations=False)).groups]
        out["DescribeGroups v6"] = [[plain(x.error_code), x.group_state, x.error_message is not None]
                                    for x in w.request(15, 6, body(15, 6, groups=(g, g + ".none"),
                                                                   include_authorized_operations=False)).groups]
        out["ListGroups v5"] = [[x.group_id == g, x.protocol_type, x.group_type] for x in w.request(
            16, 5, body(16, 5, states_filter=(), types_filter=("consumer",))).groups if x.group_id.startswith(g)]
        out["ListGroups v5 classic"] = [x.group_id for x in w.request(
            16, 5, body(16, 5, states_filter=(), types_filter=("classic",))).groups if x.group_id.startswith(g)]
        unknown = cg_describe(w, g + ".none")
        out["ConsumerGroupDescribe unknown"] = [plain(unknown.error_code), unknown.error_message is not None]
        return out

    seen = conformance(scenario)
    assert seen["kafka"]["future epoch"][0] == "FENCED_MEMBER_EPOCH" or seen["kafka"]["future epoch"][0] == 110


def test_a_new_groups_first_member_gets_epoch_2(conformance):
    """Kafka 4.4's ModernGroup starts a group at epoch 1 (assignment epoch 0); the first join bumps it to 2."""
    def scenario(run):
        g, w = run.group(), run.wire()
        wait_until(lambda: int(w.request(10, 4, body(10, 4, key_type=0, coordinator_keys=(g,)))
                               .coordinators[0].error_code) == 0, 30, "the coordinator")
        a = hb(w, group_id=g, member_id="A", member_epoch=0, rebalance_timeout=30000,
               subscribed_topic_names=("c.three",), topic_partitions=())
        d = cg_describe(w, g)
        return {"join": [plain(a.error_code), a.member_epoch],
                "describe": [d.group_state, d.group_epoch, d.assignment_epoch, [m.member_epoch for m in d.members]]}

    seen = conformance(scenario)
    assert seen["serve"]["join"][1] == 2


@pytest.mark.parametrize("clients", [("confluent", "confluent", "java")], ids=["confluent+java"])
def test_join_scale_in_and_describe(conformance, clients):
    def scenario(run):
        g, w, topic = run.group(), run.wire(), "c.three"
        every = {(topic, p) for p in range(3)}
        members = [run.start(c, g, [topic], name=f"{c}-{i}", **CONSUMER) for i, c in enumerate(clients)]
        wait_settled(members, every)
        out = {"held": sorted(len(m.owned) for m in members), "describe": shape(wait_stable(w, g, 3), False)}
        members[-1].stop()
        wait_until(lambda: settled(members[:-1], every), 60, "the others to share every partition")
        out["after leave"] = {"held": sorted(len(m.owned) for m in members[:-1]),
                              "describe": shape(wait_stable(w, g, 2), False)}
        return out

    conformance(scenario)


def test_static_member_restart_moves_nothing(conformance):
    def scenario(run):
        g, w, topic = run.group(), run.wire(), "c.three"
        every = {(topic, p) for p in range(3)}
        a = run.start("confluent", g, [topic], name="a", group_instance_id="a", **CONSUMER)
        wait_settled([a], every)            # a first, then b: which one keeps two partitions is then defined
        b = run.start("confluent", g, [topic], name="b", group_instance_id="b", **CONSUMER)
        wait_settled([a, b], every)
        before = shape(wait_stable(w, g, 2), False)
        held, mark = a.owned, b.mark()
        a.stop()
        left = cg_describe(w, g)
        a2 = run.start("confluent", g, [topic], name="a2", group_instance_id="a", **CONSUMER)
        wait_until(lambda: a2.owned == held, 60, "a2 to get a's partitions back")
        return {"before": before, "left with -2": sorted(m.member_epoch for m in left.members if m.instance_id == "a"),
                "after": shape(wait_stable(w, g, 2), False), "a2 got a's partitions back": True, "b saw": [e["event"] for e in b.since(mark)
                                                                 if e["event"] in ("assigned", "revoked", "lost")]}

    conformance(scenario)


def test_range_assignor_co_partitions(conformance):
    def scenario(run):
        g, w = run.group(), run.wire()
        topics = ["c.three", "c.two"]
        every = {(t, p) for t, n in (("c.three", 3), ("c.two", 2)) for p in range(n)}
        ms = [run.start("confluent", g, topics, name=f"m{i}", group_remote_assignor="range", **CONSUMER)
              for i in range(2)]
        wait_settled(ms, every)
        return {"describe": shape(wait_stable(w, g, 2)), "held": sorted(sorted(m.owned) for m in ms)}

    conformance(scenario)
