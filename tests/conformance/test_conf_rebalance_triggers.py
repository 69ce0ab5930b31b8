"""The rebalance triggers a user meets, with real consumers: a member joins, a member leaves (close: LeaveGroup),
a member crashes (SIGKILL: its session expires), a static member restarts with another subscription. After
each step the group settles again; what is compared is what users see then: the group's state and protocol,
how many members, how many partitions each holds (dynamic members get random ids, so not which ones), that
every partition is held once, the subscriptions, and each static member's own partitions.

Spec statements checked here hold as written (§1.4 member removal, §3.5 session expiry, §3.7 static restart)."""
from __future__ import annotations

import pytest

from conformance_support import describe_group, wait_group, wait_settled
from server_support import wait_until

TOPICS = {"c.three": 3, "c.two": 2}


def shape(described):
    """DescribeGroups reduced to what does not depend on generated member ids or join order."""
    members = described["members"]
    return {"state": described["group_state"], "protocol": described["protocol_data"],
            "sizes": sorted(len(m["assigned"] or []) for m in members),
            "held": sorted(tp for m in members for tp in (m["assigned"] or [])),
            "subscriptions": sorted(m["subscribed"] for m in members),
            "static": {m["group_instance_id"]: m["assigned"] for m in members if m["group_instance_id"]}}


@pytest.mark.parametrize("client", ["confluent", "kafka-python"])
def test_join_leave_crash_and_subscription_change(conformance, client):
    def scenario(run):
        group = run.group(client)
        wire = run.wire()
        everything = {(t, p) for t, n in TOPICS.items() for p in range(n)}
        seen = {}
        start = lambda name, topics=tuple(TOPICS), **kw: run.start(  # noqa: E731
            client, group, topics, name=name, strategy="range", commit="none", **kw)
        one, two = start("one"), start("two")
        wait_settled([one, two], everything)
        seen["two_members"] = shape(wait_group(wire, group, "Stable", members=2))
        three = start("three")                                   # joins
        wait_settled([one, two, three], everything)
        seen["joined"] = shape(wait_group(wire, group, "Stable", members=3))
        two.stop()                                               # leaves (LeaveGroup on close)
        wait_settled([one, three], everything)
        seen["left"] = shape(wait_group(wire, group, "Stable", members=2))
        three.kill()                                             # crashes: its session (6 s) expires
        wait_settled([one], everything)
        seen["crashed"] = shape(wait_group(wire, group, "Stable", members=1))
        # A static member on c.three only, then restarted (after a clean stop) on both topics.
        s = start("s", topics=("c.three",), group_instance_id="s")
        wait_settled([one, s], everything)
        seen["static_joined"] = shape(wait_group(wire, group, "Stable", members=2))
        s.kill()                                                 # gone without a word; back within its session
        s2 = start("s2", topics=tuple(TOPICS), group_instance_id="s")
        wait_until(lambda: shape(describe_group(wire, group))["subscriptions"] == [sorted(TOPICS)] * 2, 90,
                   "the restarted static member's new subscription to reach the group")
        wait_settled([one, s2], everything)
        seen["static_resubscribed"] = shape(wait_group(wire, group, "Stable", members=2))
        return seen

    conformance(scenario)
