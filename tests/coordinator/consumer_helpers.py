"""Helpers for the consumer-group (KIP-848) coordinator tests: a coordinator on a ManualClock with a
StaticTopics view, and a heartbeat that reports what the member was last told (as a real client does)."""
from __future__ import annotations

import pytest

import kafkagroup
from kafkagroup.coordinator import GroupCoordinator, ManualClock
from kafkagroup.coordinator.consumer.target import SERVER_ASSIGNORS
from kafkagroup.errors import InvalidGroupError
from kafkagroup.messages.consumer_api import ConsumerGroupHeartbeatRequest, TopicPartitions
from kafkagroup.messages.topics import StaticTopics, topic_id_for


def server_assignors_available() -> bool:
    """Whether the engine has the strategies the coordinator computes targets with."""
    try:
        for strategy in SERVER_ASSIGNORS.values():
            kafkagroup.assign(strategy, {"t": 1}, {"m": {"topics": ["t"]}})
    except (InvalidGroupError, ValueError, KeyError):
        return False
    return True


needs_server_assignors = pytest.mark.skipif(
    not server_assignors_available(), reason="the native server-uniform / server-range assignors (issue 21) "
                                             "are not in this build")


class Member:
    """One consumer-protocol client as the coordinator sees it: member id, epoch, owned partitions."""

    def __init__(self, coord: GroupCoordinator, group: str, member_id: str, *, topics: list[str] | None = None,
                 regex: str | None = None, instance: str | None = None, assignor: str | None = None,
                 rebalance_timeout_ms: int = 60_000) -> None:
        self.coord, self.group, self.member_id = coord, group, member_id
        self.topics, self.regex, self.instance, self.assignor = topics, regex, instance, assignor
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.epoch = 0
        self.owned: dict = {}          # topic id -> set of partitions (what the client's callbacks hold)
        self.last = None

    def heartbeat(self, *, epoch: int | None = None, owned: dict | None = None, full: bool = False):
        e = self.epoch if epoch is None else epoch
        first = e == 0
        held = self.owned if owned is None else owned
        req = ConsumerGroupHeartbeatRequest(
            self.group, self.member_id, e, instance_id=self.instance,
            rebalance_timeout_ms=self.rebalance_timeout_ms if first or full else -1,
            subscribed_topic_names=self.topics if first or full else None,
            subscribed_topic_regex=self.regex if first or full else None,
            server_assignor=self.assignor if first or full else None,
            topic_partitions=[] if first else [TopicPartitions(t, sorted(ps)) for t, ps in held.items() if ps])
        resp = self.coord.consumer_group_heartbeat(req)
        self.last = resp
        if resp.error_code == 0:
            self.epoch = resp.member_epoch
            if resp.assignment is not None:
                self.owned = {tp.topic_id: set(tp.partitions) for tp in resp.assignment}
        return resp

    def leave(self, epoch: int = -1):
        return self.coord.consumer_group_heartbeat(ConsumerGroupHeartbeatRequest(
            self.group, self.member_id, epoch, instance_id=self.instance))

    def partitions(self, topic: str) -> set[int]:
        return set(self.owned.get(topic_id_for(topic), ()))


def coordinator(topics: dict[str, int], **config) -> tuple[GroupCoordinator, ManualClock, StaticTopics]:
    """A coordinator computing a target at every group epoch change unless the test sets
    group_consumer_assignment_interval_ms (Kafka's default batches them per second)."""
    config.setdefault("group_consumer_assignment_interval_ms", 0)
    clock = ManualClock()
    view = StaticTopics(topics)
    coord = GroupCoordinator(config, clock=clock, store=":memory:", topics=view, enable_offset_expiration=False)
    return coord, clock, view


def settle(*members: Member, rounds: int = 6) -> None:
    for _ in range(rounds):
        for m in members:
            m.heartbeat()
