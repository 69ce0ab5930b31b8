"""kafkagroup's own classic member (GroupMember, eager and cooperative) inside a mixed group (issue 23), on one
ManualClock with the real coordinator: a classic group of GroupMembers is upgraded by a consumer-protocol
member, shares the partitions with it (the coordinator assigns the classic members through SyncGroup, their
leader's assignor is not asked), and takes everything back when it leaves (downgrade: a classic group again,
with a leader).  The members' own callbacks feed a tracker that fails at once if a partition is assigned
while another member holds it."""
from __future__ import annotations

import pytest

from kafkagroup.client import ClusterMetadata, GroupMember
from kafkagroup.coordinator import GroupCoordinator, ManualClock
from kafkagroup.coordinator.group import GroupState
from kafkagroup.messages.topics import StaticTopics

from tests.coordinator.consumer_helpers import Member, needs_server_assignors

pytestmark = needs_server_assignors
TOPIC, PARTITIONS = "t", 6
MEMBER = {"session.timeout.ms": 10_000, "heartbeat.interval.ms": 1_000, "max.poll.interval.ms": 30_000}


class Owners:
    """Who holds each partition, from the members' callbacks (and the consumer-protocol member's assignment)."""

    def __init__(self) -> None:
        self.holder: dict[int, str] = {}

    def assign(self, name: str, partitions) -> None:
        for p in partitions:
            assert self.holder.get(p, name) == name, f"partition {p} assigned to {name} while {self.holder[p]} holds it"
            self.holder[p] = name

    def release(self, name: str, partitions) -> None:
        for p in partitions:
            if self.holder.get(p) == name:
                del self.holder[p]

    def of(self, name: str) -> set[int]:
        return {p for p, n in self.holder.items() if n == name}


def classic(coord, clock, cluster, owners: Owners, name: str, strategy: str) -> GroupMember:
    m = GroupMember(coord, clock=clock, cluster=cluster, topics=[TOPIC], name=name,
                    config={**MEMBER, "group.id": "g", "partition.assignment.strategy": strategy},
                    on_assign=lambda ps: owners.assign(name, [tp.partition for tp in ps]),
                    on_revoke=lambda ps: owners.release(name, [tp.partition for tp in ps]),
                    on_lost=lambda ps: owners.release(name, [tp.partition for tp in ps]))
    m.start()
    return m


class ConsumerProtocolMember:
    """A consumer-protocol member that heartbeats every interval and reports what it was told (a client's
    reconciliation: it releases before it heartbeats, so the tracker sees releases first)."""

    def __init__(self, coord, owners: Owners, name: str = "C") -> None:
        self.m = Member(coord, "g", name, topics=[TOPIC])
        self.owners, self.name = owners, name
        self.alive = True

    def beat(self) -> None:
        if not self.alive:
            return
        before = self.m.partitions(TOPIC)
        self.m.heartbeat()
        after = self.m.partitions(TOPIC)
        self.owners.release(self.name, before - after)
        self.owners.assign(self.name, after - before)

    def leave(self) -> None:
        self.owners.release(self.name, self.m.partitions(TOPIC))
        self.m.owned = {}
        self.m.leave()
        self.alive = False


def run(clock, c: ConsumerProtocolMember | None, ms: int) -> None:
    for _ in range(ms // 500):
        clock.advance(500)
        if c is not None:
            c.beat()


@pytest.mark.parametrize("strategy", ["range", "cooperative-sticky"])
def test_group_members_are_upgraded_share_with_a_consumer_protocol_member_and_take_everything_back(strategy):
    clock = ManualClock()
    coord = GroupCoordinator({"group.initial.rebalance.delay.ms": 0, "group.consumer.assignment.interval.ms": 0,
                              "group.consumer.heartbeat.interval.ms": 500,
                              "group.consumer.min.heartbeat.interval.ms": 500},
                             clock=clock, store=":memory:", topics=StaticTopics({TOPIC: PARTITIONS}),
                             enable_offset_expiration=False)
    cluster = ClusterMetadata({TOPIC: PARTITIONS})
    owners = Owners()
    a = classic(coord, clock, cluster, owners, "a", strategy)
    b = classic(coord, clock, cluster, owners, "b", strategy)
    run(clock, None, 5_000)
    assert sorted(owners.holder) == list(range(PARTITIONS)) and coord.group("g").state is GroupState.STABLE

    c = ConsumerProtocolMember(coord, owners)
    c.beat()
    assert coord.consumer_group("g") is not None                      # upgraded
    run(clock, c, 20_000)
    assert sorted(owners.holder) == list(range(PARTITIONS))
    assert sorted(len(owners.of(n)) for n in ("a", "b", "C")) == [2, 2, 2]
    assert {a.member_id, b.member_id} <= set(coord.consumer_group("g").members)

    c.leave()                                                          # downgrade: classic again, rebalancing
    group = coord.group("g")
    assert coord.consumer_group("g") is None and group is not None
    run(clock, None, 20_000)
    assert group.state is GroupState.STABLE
    assert sorted(owners.holder) == list(range(PARTITIONS))
    assert sorted(len(owners.of(n)) for n in ("a", "b")) == [3, 3]
    assert {m.member_id for m in (a, b)} == set(group.members) and group.leader_id in group.members
    a.close()
    b.close()
