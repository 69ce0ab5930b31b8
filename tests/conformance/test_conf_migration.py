"""Mixed groups (issue 23), Apache Kafka 4 vs `kafkagroup serve`: a classic group upgraded online by a
consumer-protocol member and downgraded when it leaves, under ``group.consumer.migration.policy``.

* bidirectional (Kafka's default, the session's servers): a classic confluent consumer alone, then a confluent
  ``group.protocol=consumer`` one joins -- both share the group (ConsumerGroupDescribe: one member of each
  type, two partitions each), records produced meanwhile are read once between them; the consumer-protocol
  member leaves -- the group is classic again (DescribeGroups Stable, the classic member owns everything,
  ConsumerGroupDescribe GROUP_ID_NOT_FOUND).  Never two live owners of a partition (the clients' callbacks).
* ``downgrade`` (no upgrade; a second pair of servers): a consumer-protocol join into the non-empty classic group
  is refused (GROUP_ID_NOT_FOUND, "is not a consumer group") and the classic member keeps everything.
* ``upgrade`` (no downgrade; extended set): after the consumer-protocol member leaves, the group stays a
  consumer group; its classic member keeps its share and the rest stays unowned until another member joins
  (Kafka 4.4.0's behaviour, reproduced).

Not compared, on purpose: which partitions each member holds (the target follows member ids, random on both)
and the callbacks' sequence (how many rebalances the classic member goes through depends on when each server
computes its targets)."""
from __future__ import annotations

import time
from collections import Counter
from typing import Any

import pytest

from conformance_support import describe_group, plain, settled, wait_group, wait_settled
from server_support import never_two_owners, produce, wait_until
from server_wire import body

from tests.coordinator.consumer_helpers import needs_server_assignors

pytestmark = needs_server_assignors
HB, CG_DESCRIBE = 68, 69
CONSUMER = {"group_protocol": "consumer"}
TOPIC = "c.migration"          # produced to by the first scenario only (conftest.TOPICS)


def cg_describe(wire, group):
    return wire.request(CG_DESCRIBE, 1, body(CG_DESCRIBE, 1, group_ids=(group,),
                                               include_authorized_operations=False)).groups[0]


def held(m) -> int:
    return sum(len(tp.partitions) for tp in m.assignment.topic_partitions)


def shared_shape(wire, group) -> dict[str, Any]:
    """ConsumerGroupDescribe once both members are reconciled: their types and how many partitions each holds."""
    d = wait_until(lambda: (lambda d: d if d.group_state == "Stable" and len(d.members) == 2
                            and all(m.member_epoch == d.assignment_epoch for m in d.members) else None)(
        cg_describe(wire, group)), 60, f"{group} to be Stable with 2 members")
    return {"state": d.group_state, "members": sorted([m.member_type, held(m)] for m in d.members)}




def ownership_figures(members, partitions: set) -> dict[str, Any]:
    """What a rolling change cost, from the clients' own callbacks (their wall stamps, seconds): from the first
    moment every partition was held to the last event, the partition-seconds with no holder, the longest
    such gap, and how many partitions were handed to a member (moves).  The simulator reports the same three."""
    events = sorted([(e["wall"], m.name, e) for m in members for e in m.events
                     if e["event"] in ("assigned", "revoked", "lost") and "wall" in e], key=lambda x: x[0])
    holder: dict[tuple, str] = {}
    idle_since: dict[tuple, float] = {}
    start = None
    idle = longest = 0.0
    moves = 0
    for at, name, e in events:
        for tp in map(tuple, e["partitions"]):
            if tp not in partitions:
                continue
            if e["event"] == "assigned":
                holder[tp] = name
                moves += start is not None
                if tp in idle_since:
                    gap = at - idle_since.pop(tp)
                    idle, longest = idle + gap, max(longest, gap)
            elif holder.get(tp) == name:
                del holder[tp]
                if start is not None:
                    idle_since[tp] = at
        if start is None and set(holder) >= partitions:
            start = at
    return {"partition-s without a holder": round(idle, 2), "longest gap s": round(longest, 2),
            "partitions moved": moves}


def keys(members) -> Counter:
    return Counter(r[3] for m in members for r in m.records())


def test_upgrade_share_and_downgrade_with_real_clients(conformance):
    def scenario(run):
        g, w = run.group(), run.wire()
        every = {(TOPIC, p) for p in range(4)}
        k = run.start("confluent", g, [TOPIC], name="classic", strategy="cooperative-sticky")
        wait_settled([k], every)
        c = run.start("confluent", g, [TOPIC], name="consumer", **CONSUMER)
        wait_settled([k, c], every)
        out: dict[str, Any] = {"shared": shared_shape(w, g)}
        shared = [f"{g}-s{i}" for i in range(40)]
        produce(run.bootstrap, TOPIC, shared)
        wait_until(lambda: set(shared) <= set(keys([k, c])), 60, "the shared records to be read")
        counts = keys([k, c])
        out["shared records read more than once"] = sorted(key for key in shared if counts[key] != 1)
        out["both read"] = bool(set(shared) & set(keys([k]))) and bool(set(shared) & set(keys([c])))
        c.stop()
        wait_until(lambda: settled([k], every), 60, lambda: f"the classic member to own everything ({k.owned})")
        d = wait_group(w, g, "Stable", 1)
        out["after leave"] = {"DescribeGroups": [d["group_state"], d["protocol_type"], d["protocol_data"],
                                                 [m["assigned"] for m in d["members"]]],
                              "ConsumerGroupDescribe": plain(cg_describe(w, g).error_code)}
        out["never two owners"] = never_two_owners([k, c], stamp="wall")
        return out

    conformance(scenario)


def hb_join(wire, group, member_id, topic):
    return wire.request(HB, 1, body(HB, 1, group_id=group, member_id=member_id, member_epoch=0, instance_id=None,
                                    rack_id=None, rebalance_timeout=30000, subscribed_topic_names=(topic,),
                                    subscribed_topic_regex=None, server_assignor=None, topic_partitions=()))


def test_a_policy_without_upgrade_refuses_a_consumer_protocol_member(conformance_with):
    check = conformance_with({"group.consumer.migration.policy": "downgrade"})

    def scenario(run):
        g, w, topic = run.group(), run.wire(), "c.two"
        every = {(topic, p) for p in range(2)}
        k = run.start("confluent", g, [topic], name="classic")
        wait_settled([k], every)
        refused = hb_join(w, g, "C", topic)
        # an empty consumer-protocol group of another id is created under every policy
        other = hb_join(w, g + ".empty", "D", topic)
        d = wait_group(w, g, "Stable", 1)
        return {"join": [plain(refused.error_code), refused.error_message],
                "join of a new group": plain(other.error_code),
                "classic group": [d["group_state"], d["protocol_type"], [m["assigned"] for m in d["members"]]],
                "classic member": sorted(k.owned)}

    check(scenario)


@pytest.mark.conformance_extended
def test_a_policy_without_downgrade_keeps_a_consumer_group_of_classic_members(conformance_with):
    """Kafka 4.4.0 observed: once the consumer-protocol member has left, the group stays a consumer group; its
    classic member keeps its share and the partitions the other held stay unowned (the group describes
    Assigning: a classic heartbeat compares with the target's epoch and computes no target) until another
    member joins."""
    check = conformance_with({"group.consumer.migration.policy": "upgrade"})

    def scenario(run):
        g, w, topic = run.group(), run.wire(), "c.three"
        every = {(topic, p) for p in range(3)}
        k = run.start("confluent", g, [topic], name="classic", strategy="range")
        wait_settled([k], every)
        c = run.start("confluent", g, [topic], name="consumer", **CONSUMER)
        wait_settled([k, c], every)
        share = k.owned
        c.stop()
        d = wait_until(lambda: (lambda d: d if len(d.members) == 1 else None)(cg_describe(w, g)), 60,
                       f"{g} to keep only its classic member")
        time.sleep(5)                  # ten classic heartbeats: nothing changes
        d = cg_describe(w, g)
        out = {"after leave": [plain(d.error_code), d.group_state, [m.member_type for m in d.members],
                               "classic member kept its share" if k.owned == share else sorted(k.owned)]}
        j = run.start("confluent", g, [topic], name="classic-2", strategy="range")
        wait_settled([k, j], every)
        d = wait_until(lambda: (lambda d: d if d.group_state == "Stable" and len(d.members) == 2 else None)(
            cg_describe(w, g)), 60, f"{g} to be Stable with 2 members")
        out["after a join"] = [d.group_state, sorted([m.member_type, held(m)] for m in d.members)]
        out["never two owners"] = never_two_owners([k, c, j], stamp="wall")
        return out

    check(scenario)


def group_kind(wire, group) -> list[Any]:
    """[kind, state, member types (consumer groups)] as the two describe APIs tell it."""
    d = cg_describe(wire, group)
    if plain(d.error_code) in (0, "NONE"):
        return ["consumer", d.group_state, sorted(m.member_type for m in d.members)]
    return ["classic", describe_group(wire, group)["group_state"]]


@pytest.mark.conformance_extended
def test_crash_of_the_last_consumer_protocol_member_downgrades(conformance):
    """The consumer-protocol member is SIGKILLed: its session (6 s) expires, the group turns classic again and
    the classic member takes everything."""
    def scenario(run):
        g, w, topic = run.group(), run.wire(), "c.three"
        every = {(topic, p) for p in range(3)}
        k = run.start("confluent", g, [topic], name="classic", strategy="cooperative-sticky")
        wait_settled([k], every)
        c = run.start("confluent", g, [topic], name="consumer", **CONSUMER)
        wait_settled([k, c], every)
        out: dict[str, Any] = {"shared": group_kind(w, g)}
        c.kill()
        wait_until(lambda: settled([k], every), 60, lambda: f"the classic member to own everything ({k.owned})")
        wait_group(w, g, "Stable", 1)
        out["after the crash"] = group_kind(w, g)
        return out

    conformance(scenario)


@pytest.mark.conformance_extended
def test_a_static_member_moves_to_the_consumer_protocol_and_back(conformance):
    """(Eager range: librdkafka's cooperative-sticky assignments carry user data, which refuses the upgrade.)
    Static member "a" restarts on the consumer protocol (the classic group is upgraded, the newcomer takes
    over the classic member of its instance at once), then back on the classic protocol (it replaces the
    consumer-protocol member that left with -2: the group is classic again)."""
    def scenario(run):
        g, w, topic = run.group(), run.wire(), "c.three"
        every = {(topic, p) for p in range(3)}
        a = run.start("confluent", g, [topic], name="a", group_instance_id="a", strategy="range")
        wait_settled([a], every)
        b = run.start("confluent", g, [topic], name="b", group_instance_id="b", strategy="range")
        wait_settled([a, b], every)
        out: dict[str, Any] = {"classic": group_kind(w, g)}
        a.stop()
        a2 = run.start("confluent", g, [topic], name="a2", group_instance_id="a", **CONSUMER)
        wait_settled([a2, b], every)
        wait_until(lambda: (lambda d: d.group_state == "Stable" and len(d.members) == 2)(cg_describe(w, g)), 60,
                   f"{g} to be a Stable consumer group of 2")
        out["a on the consumer protocol"] = group_kind(w, g)
        a2.stop()
        a3 = run.start("confluent", g, [topic], name="a3", group_instance_id="a", strategy="range")
        wait_settled([a3, b], every)
        wait_group(w, g, "Stable", 2)
        out["a back on the classic protocol"] = group_kind(w, g)
        out["held"] = sorted([len(a3.owned), len(b.owned)])
        return out

    conformance(scenario)


@pytest.mark.conformance_extended
def test_librdkafka_cooperative_sticky_assignments_refuse_the_upgrade(conformance):
    """librdkafka's cooperative-sticky leader writes user data into the assignments from the second generation
    on; Kafka 4.4 refuses to upgrade such a group (the data would be lost): GROUP_ID_NOT_FOUND, "an unsupported
    custom assignor is in use".  A group of one member at its first generation carries none and upgrades."""
    def scenario(run):
        g, w, topic = run.group(), run.wire(), "c.three"
        every = {(topic, p) for p in range(3)}
        a = run.start("confluent", g, [topic], name="a", strategy="cooperative-sticky")
        wait_settled([a], every)
        b = run.start("confluent", g, [topic], name="b", strategy="cooperative-sticky")
        wait_settled([a, b], every)
        refused = hb_join(w, g, "C", topic)
        return {"join": [plain(refused.error_code), refused.error_message], "group": group_kind(w, g),
                "held": sorted([len(a.owned), len(b.owned)])}

    conformance(scenario)


@pytest.mark.conformance_extended
def test_rolling_upgrade_and_downgrade_of_a_confluent_and_kafka_python_group(conformance):
    """A classic group of a confluent and a kafka-python consumer (range) is rolled member by member to
    group.protocol=consumer (confluent, then Java), then back to classic (confluent, kafka-python).  At every
    stage the members share every partition; every record produced along the way is read; never two owners."""
    def scenario(run):
        g, w, topic = run.group(), run.wire(), "c.migration"
        every = {(topic, p) for p in range(4)}
        produced: list[str] = []
        members: list[Any] = []
        out: dict[str, Any] = {}

        def stage(name: str, live: list[Any]) -> None:
            wait_settled(live, every)
            keys_now = [f"{g}-{name}-{i}" for i in range(8)]
            produce(run.bootstrap, topic, keys_now)
            produced.extend(keys_now)
            wait_until(lambda: set(keys_now) <= set(keys(members)), 60, f"the records of stage {name} to be read")
            # the state once the members have acknowledged their epochs: a snapshot taken right after the
            # partitions settle may still say Reconciling on either server (timing, not behaviour)
            out[name] = wait_until(lambda: (lambda k: k if k[1] == "Stable" else None)(group_kind(w, g)), 60,
                                   lambda: f"{g} to be Stable after stage {name} ({group_kind(w, g)})")

        k1 = run.start("confluent", g, [topic], name="k1", strategy="range")
        k2 = run.start("kafka-python", g, [topic], name="k2", strategy="range")
        members += [k1, k2]
        stage("classic", [k1, k2])
        k1.stop()
        c1 = run.start("confluent", g, [topic], name="c1", **CONSUMER)
        members.append(c1)
        stage("k1 -> confluent consumer protocol", [c1, k2])
        k2.stop()
        c2 = run.start("java", g, [topic], name="c2", **CONSUMER)
        members.append(c2)
        stage("k2 -> java consumer protocol", [c1, c2])
        c1.stop()
        k3 = run.start("confluent", g, [topic], name="k3", strategy="range")
        members.append(k3)
        stage("c1 -> confluent classic", [k3, c2])
        c2.stop()
        k4 = run.start("kafka-python", g, [topic], name="k4", strategy="range")
        members.append(k4)
        stage("c2 -> kafka-python classic", [k3, k4])
        out["every record read"] = set(produced) <= set(keys(members))
        out["never two owners"] = never_two_owners(members, stamp="wall")
        run.figures.update(ownership_figures(members, every))
        return out

    conformance(scenario)
