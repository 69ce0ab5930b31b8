"""Shared helpers and fixtures of the member-client tests (imported by conftest.py and the tests: a module
named conftest would collide with other test folders' conftest modules in rootdir import mode).

:class:`ScriptedTransport` plays the role of Kafka's ``MockClient`` in ``ConsumerCoordinatorTest``: it keeps
every request the member sends and lets the test answer it with a chosen response.  :class:`Recorder` is a
rebalance listener counting callbacks (``MockRebalanceListener``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import pytest

from kafkagroup.client import ClusterMetadata, GroupMember
from kafkagroup.messages.clock import ManualClock
from kafkagroup.messages.error_codes import ErrorCode
from kafkagroup.messages.api import (
    HeartbeatResponse,
    JoinGroupResponse,
    JoinGroupResponseMember,
    SyncGroupResponse,
)
from kafkagroup.protocol import Assignment, Subscription, encode_assignment, encode_subscription
from kafkagroup.structs import TopicPartition


@dataclass
class Sent:
    api: str
    request: Any
    on_response: Callable[[Any], None]
    answered: bool = False


class ScriptedTransport:
    """Records requests; ``answer(api, response)`` answers the oldest unanswered request of that API."""

    def __init__(self) -> None:
        self.sent: list[Sent] = []

    def _add(self, api: str, request: Any, cb: Callable[[Any], None]) -> None:
        self.sent.append(Sent(api, request, cb))

    def join_group(self, request, on_response):
        self._add("join_group", request, on_response)

    def sync_group(self, request, on_response):
        self._add("sync_group", request, on_response)

    def heartbeat(self, request, on_response):
        self._add("heartbeat", request, on_response)

    def leave_group(self, request, on_response):
        self._add("leave_group", request, on_response)

    def offset_commit(self, request, on_response):
        self._add("offset_commit", request, on_response)

    def pending(self, api: str) -> list[Sent]:
        return [s for s in self.sent if s.api == api and not s.answered]

    def requests(self, api: str) -> list[Any]:
        return [s.request for s in self.sent if s.api == api]

    def answer(self, api: str, response: Any) -> Any:
        pending = self.pending(api)
        assert pending, f"no unanswered {api} request (sent: {[s.api for s in self.sent]})"
        sent = pending[0]
        sent.answered = True
        sent.on_response(response)
        return sent.request


@dataclass
class Recorder:
    """Counts callbacks and keeps the last partitions of each kind."""

    assigned: list[frozenset] = field(default_factory=list)
    revoked: list[frozenset] = field(default_factory=list)
    lost: list[frozenset] = field(default_factory=list)
    fail_on: set = field(default_factory=set)     # kinds whose callback raises

    def on_partitions_assigned(self, p):
        self.assigned.append(p)
        if "assigned" in self.fail_on:
            raise RuntimeError("assign callback failed")

    def on_partitions_revoked(self, p):
        self.revoked.append(p)
        if "revoked" in self.fail_on:
            raise RuntimeError("revoke callback failed")

    def on_partitions_lost(self, p):
        self.lost.append(p)
        if "lost" in self.fail_on:
            raise RuntimeError("lost callback failed")


def tp(topic: str, p: int) -> TopicPartition:
    return TopicPartition(topic, p)


def subscription_bytes(topics, owned=(), generation=-1, user_data=None, rack=None) -> bytes:
    return encode_subscription(Subscription(list(topics), user_data, list(owned), generation, rack))


def assignment_bytes(partitions) -> bytes:
    return encode_assignment(Assignment(list(partitions)))


def join_ok(generation: int, member_id: str, leader: str, protocol: str, members=()) -> JoinGroupResponse:
    return JoinGroupResponse(
        ErrorCode.NONE, generation_id=generation, protocol_type="consumer", protocol_name=protocol,
        leader=leader, member_id=member_id,
        members=[JoinGroupResponseMember(m, inst, meta) for m, inst, meta in members],
    )


def join_error(code: ErrorCode, member_id: str = "") -> JoinGroupResponse:
    return JoinGroupResponse(ErrorCode(code), member_id=member_id)


def sync_ok(partitions, protocol: str) -> SyncGroupResponse:
    return SyncGroupResponse(ErrorCode.NONE, "consumer", protocol, assignment_bytes(partitions))


def sync_error(code: ErrorCode) -> SyncGroupResponse:
    return SyncGroupResponse(ErrorCode(code))


def heartbeat(code: ErrorCode = ErrorCode.NONE) -> HeartbeatResponse:
    return HeartbeatResponse(ErrorCode(code))


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def scripted(clock):
    """Factory: (member, transport, recorder) for a member on a scripted transport."""

    def make(topics=("test1",), strategy=("range",), partitions=None, pattern=None, **kw):
        transport = ScriptedTransport()
        recorder = Recorder()
        cluster = kw.pop("cluster", None) or ClusterMetadata(partitions or {"test1": 1, "test2": 1})
        member = GroupMember(
            transport, clock=clock, cluster=cluster,
            topics=None if pattern else list(topics), pattern=pattern,
            config={"group.id": "test-group", "partition.assignment.strategy": list(strategy),
                    "session.timeout.ms": 10_000, "heartbeat.interval.ms": 5_000,
                    "max.poll.interval.ms": 60_000},
            listener=recorder, **kw,
        )
        return member, transport, recorder

    return make


class MockAssignor:
    """Kafka's ``MockPartitionAssignor``: a plug-in with chosen protocols whose result the test prepares."""

    name = "mock"

    def __init__(self, protocols, name: str = "mock") -> None:
        self.protocols = list(protocols)
        self.name = name
        self.prepared: dict[str, list[TopicPartition]] | None = None
        self.calls: list[dict] = []
        self.on_assignment_calls: list[tuple] = []

    def supported_protocols(self):
        return self.protocols

    def subscription_user_data(self, topics):
        return None

    def on_assignment(self, assignment, generation):
        self.on_assignment_calls.append((tuple(assignment.partitions), generation))

    def assign(self, cluster, members, *, group_instance_ids=None):
        from kafkagroup.protocol import Assignment as A

        self.calls.append({"cluster": dict(cluster), "members": dict(members)})
        if self.prepared is None:
            raise AssertionError("MockAssignor.assign called without a prepared result")
        return {m: A(self.prepared.get(m, [])) for m in members}


def recording_member(coordinator, clock: ManualClock, cluster: ClusterMetadata, events: list, name: str, *,
                     heartbeat_ms: int) -> GroupMember:
    """A started cooperative-sticky member of group "g" on topic "t" (session 6 s) whose callbacks append
    (time, name, "assigned" | "revoked" | "lost", partitions) to ``events``."""
    def record(what: str):
        return lambda p: events.append((clock.now_ms(), name, what, frozenset(p)))
    m = GroupMember(coordinator, clock=clock, cluster=cluster, topics=["t"], name=name, client_id=name,
                    config={"group.id": "g", "partition.assignment.strategy": ["cooperative-sticky"],
                            "session.timeout.ms": 6000, "heartbeat.interval.ms": heartbeat_ms},
                    on_assign=record("assigned"), on_revoke=record("revoked"), on_lost=record("lost"))
    m.start()
    return m


@pytest.fixture(params=["EAGER", "COOPERATIVE"])
def protocol(request) -> str:
    return request.param
