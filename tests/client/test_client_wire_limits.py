"""A member never sends what Kafka's wire format cannot carry, and never gets stuck when it cannot encode.

Kafka's behaviour restated:
* ``ConsumerConfig`` (clients/.../consumer/ConsumerConfig.java): session.timeout.ms, heartbeat.interval.ms,
  max.poll.interval.ms (``atLeast(1)``) and default.api.timeout.ms are ``Type.INT``; retry.backoff.ms and
  metadata.max.age.ms are ``Type.LONG`` (``atLeast(0)``).  ``ConfigDef.parseType`` throws ConfigException
  ("Not a number of type INT") for a value outside int32, so the consumer's constructor fails.
* group.id / client.id / client.rack are ``Type.STRING``; the generated request classes refuse a string of more
  than 0x7fff UTF-8 bytes ("field is too long to be serialized").  kafkagroup refuses such values (and lone
  surrogates) at construction -- earlier than Java, see kafkagroup/client/config.py.
* ``KafkaConsumer.subscribe(Collection)`` throws IllegalArgumentException for a null or blank topic ("Topic
  collection to subscribe to cannot contain null or empty topic"); it does not run ``Topic.validate``.
"""
from __future__ import annotations

import pytest

from client_support import MockAssignor, ScriptedTransport, join_ok, sync_ok, tp
from kafkagroup.client import ClusterMetadata, GroupMember, MemberConfig, MemberState, RebalanceProtocol
from kafkagroup.coordinator import GroupCoordinator, ManualClock
from kafkagroup.errors import InvalidGroupError, ProtocolError

LONE = "\ud800"
TOO_LONG = "é" * 16_384          # 32,768 UTF-8 bytes
LONGEST = "a" * 32_767
I32, I64 = 2**31, 2**63
T1P = tp("test1", 0)


# ----------------------------------------------------------------------------------------------- config
@pytest.mark.parametrize("key, value, match", [
    ("group.id", "g" + LONE, r"group.id 'g\\ud800' is not encodable as UTF-8 \(lone surrogate U\+D800"),
    ("group.id", TOO_LONG, r"group.id 'éé.*\(16384 chars\) is 32768 UTF-8 bytes, over Kafka's STRING limit"),
    ("client.id", LONE, r"client.id '\\ud800' is not encodable"),
    ("client.id", "c" * 40_000, r"client.id .* is 40000 UTF-8 bytes"),
    ("client.rack", "r" + LONE, r"client.rack 'r\\ud800' is not encodable"),
    ("client.rack", TOO_LONG, r"client.rack .* is 32768 UTF-8 bytes"),
    ("client.rack", 7, r"client.rack must be a string or None"),
    ("client.id", None, r"client.id must be a string"),
    ("session.timeout.ms", I32, r"session.timeout.ms = 2147483648 is not a 32-bit integer .*type INT"),
    ("heartbeat.interval.ms", I32, r"heartbeat.interval.ms = 2147483648 is not a 32-bit integer"),
    ("max.poll.interval.ms", I32, r"max.poll.interval.ms = 2147483648 is not a 32-bit integer"),
    ("default.api.timeout.ms", I32, r"default.api.timeout.ms = 2147483648 is not a 32-bit integer"),
    ("retry.backoff.ms", I64, r"retry.backoff.ms = 9223372036854775808 is not a 64-bit integer .*type LONG"),
    ("metadata.max.age.ms", I64, r"metadata.max.age.ms = 9223372036854775808 is not a 64-bit integer"),
    ("max.poll.interval.ms", 0, r"max.poll.interval.ms must be at least 1, got 0"),
    ("default.api.timeout.ms", -1, r"default.api.timeout.ms must be at least 0"),
    ("session.timeout.ms", "45000", r"session.timeout.ms must be an int"),
])
def test_config_refuses_values_the_wire_cannot_carry(key: str, value: object, match: str) -> None:
    config = {"group.id": "g", key: value}
    with pytest.raises(InvalidGroupError, match=match):
        MemberConfig.from_kafka(config)
    with pytest.raises(InvalidGroupError, match=match):   # the same through GroupMember, before anything is sent
        GroupMember(ScriptedTransport(), clock=ManualClock(), cluster=ClusterMetadata({"t": 1}), topics=["t"],
                    config=config)


def test_config_accepts_the_largest_values() -> None:
    config = MemberConfig.from_kafka({
        "group.id": LONGEST, "client.id": "é" * 16_383 + "x", "client.rack": "😀" * 8_191 + "abc",
        "session.timeout.ms": I32 - 1, "heartbeat.interval.ms": I32 - 2, "max.poll.interval.ms": I32 - 1,
        "default.api.timeout.ms": I32 - 1, "retry.backoff.ms": I64 - 1, "metadata.max.age.ms": I64 - 1,
    })
    assert config.session_timeout_ms == I32 - 1 and config.retry_backoff_ms == I64 - 1
    assert MemberConfig.from_kafka({"group.id": "g", "max.poll.interval.ms": 1}).max_poll_interval_ms == 1


def test_member_with_int32_max_timeouts_joins_a_real_coordinator() -> None:
    """The largest INT values are valid JoinGroup fields: the coordinator accepts them (no INVALID_REQUEST)."""
    clock = ManualClock()
    coordinator = GroupCoordinator({"group.max.session.timeout.ms": I32 - 1}, clock=clock, store=":memory:",
                                   group_initial_rebalance_delay_ms=0)
    member = GroupMember(coordinator, clock=clock, cluster=ClusterMetadata({"t": 2}), topics=["t"],
                         config={"group.id": "g", "session.timeout.ms": I32 - 1,
                                 "max.poll.interval.ms": I32 - 1, "client.id": "é" * 100})
    member.start()
    clock.advance(0)
    assert member.state is MemberState.STABLE and member.assignment == {tp("t", 0), tp("t", 1)}
    assert member.errors == []


# ---------------------------------------------------------------------------------------- subscription
@pytest.mark.parametrize("topics, match", [
    (["ok", "t" + LONE], r"cannot subscribe to topic 't\\ud800': the name is not encodable as UTF-8"),
    ([TOO_LONG], r"cannot subscribe to topic 'éé.*: the name is 32768 UTF-8 bytes"),
    (["ok", "  "], r"Topic collection to subscribe to cannot contain null or empty topic: '  '"),
    (["ok", ""], r"cannot contain null or empty topic"),
    (["ok", None], r"cannot contain null or empty topic: None"),
    ("orders", r"subscribe takes a collection of topic names, got the single str 'orders'"),
])
def test_subscribe_refuses_topics_the_subscription_cannot_carry(scripted, topics, match) -> None:
    member, transport, _ = scripted(topics=["test1"])
    member.poll()
    with pytest.raises(InvalidGroupError, match=match):
        member.subscribe(topics)
    assert member.subscription == {"test1"}                       # unchanged
    with pytest.raises(InvalidGroupError, match=match):          # the constructor's topics= too
        GroupMember(ScriptedTransport(), clock=ManualClock(), cluster=ClusterMetadata({"t": 1}), topics=topics,
                    config={"group.id": "g"})


def test_subscribe_accepts_the_longest_name_and_names_topic_validate_refuses(scripted) -> None:
    member, transport, _ = scripted(topics=[LONGEST, "has space", "ü"])
    member.poll()
    assert len(transport.pending("join_group")) == 1


def test_cluster_refuses_topic_names_no_broker_could_hold() -> None:
    with pytest.raises(InvalidGroupError, match=r"topic name 't\\ud800' is not encodable"):
        ClusterMetadata({"t" + LONE: 1})
    cluster = ClusterMetadata({"ok": 1})
    with pytest.raises(InvalidGroupError, match=r"is 32768 UTF-8 bytes"):
        cluster.set_partitions(TOO_LONG, 1)


# ------------------------------------------------------------ an encoding failure during the rebalance
class FlakyUserData(MockAssignor):
    """A plug-in assignor whose subscription user data is a str (not bytes) until fixed."""

    def __init__(self) -> None:
        super().__init__([RebalanceProtocol.EAGER], name="flaky")
        self.broken = True

    def subscription_user_data(self, topics):
        return "not bytes" if self.broken else b"\x01"


def test_encoding_failure_surfaces_from_poll_and_nothing_is_sent(scripted, clock) -> None:
    plugin = FlakyUserData()
    member, transport, _ = scripted(strategy=[plugin])
    with pytest.raises(ProtocolError, match=r"user_data must be bytes or None, got str 'not bytes'"):
        member.poll()
    assert member.state is MemberState.UNJOINED and member.stats["joins_sent"] == 0
    assert transport.sent == [] and member.rejoin_pending and member.alive
    clock.advance(60_000)                 # auto-poll does not retry the same failing inputs on a timer
    assert transport.sent == [] and len(member.errors) == 1
    with pytest.raises(ProtocolError):    # each explicit poll tries again and raises again (Java's poll loop)
        member.poll()
    assert transport.sent == [] and len(member.errors) == 2
    plugin.broken = False
    member.poll()
    join = transport.pending("join_group")
    assert len(join) == 1 and member.state is MemberState.PREPARING_REBALANCE
    transport.answer("join_group", join_ok(1, "m", "other", "flaky"))
    transport.answer("sync_group", sync_ok([T1P], "flaky"))
    assert member.state is MemberState.STABLE and member.assignment == {T1P}


def test_encoding_failure_while_stable_keeps_the_generation_and_closes_cleanly(scripted, clock) -> None:
    plugin = FlakyUserData()
    plugin.broken = False
    member, transport, rec = scripted(strategy=[plugin])
    member.poll()
    transport.answer("join_group", join_ok(3, "m-1", "other", "flaky"))
    transport.answer("sync_group", sync_ok([T1P], "flaky"))
    assert member.state is MemberState.STABLE
    plugin.broken = True
    member.request_rejoin()
    with pytest.raises(ProtocolError, match="user_data"):
        member.poll()
    # no JoinGroup left: the member is still in generation 3 and keeps heartbeating
    assert member.state is MemberState.STABLE and member.generation.generation_id == 3
    assert len(transport.requests("join_group")) == 1
    clock.advance(5_000)
    assert transport.pending("heartbeat")[-1].request.generation_id == 3
    member.close()
    assert member.closed and [r.members[0].member_id for r in transport.requests("leave_group")] == ["m-1"]


def test_subscription_change_retries_a_blocked_join(scripted, clock) -> None:
    """A pattern-free member whose plug-in failed retries when the subscription changes (no explicit poll)."""
    plugin = FlakyUserData()
    member, transport, _ = scripted(strategy=[plugin])
    member.start()
    clock.advance(0)
    assert transport.sent == [] and len(member.errors) == 1
    plugin.broken = False
    member.subscribe(["test1", "test2"])
    clock.advance(0)
    assert len(transport.pending("join_group")) == 1
