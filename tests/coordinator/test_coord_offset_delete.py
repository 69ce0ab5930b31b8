"""OffsetDelete (Kafka API 47, KIP-496) and the version-dependent OffsetCommit answer (spec §8 row 9).

Kafka's own tests restated; each cites its source (GroupCoordinatorTest: Scala coordinator; OffsetMetadataManagerTest:
Java).  Kafka's ``handleDeleteOffsets(groupId, partitions)`` is ``GroupCoordinator.offset_delete`` here.
"""
from __future__ import annotations

from pathlib import Path

from coord_harness import E, RANGE, S, Harness, tie, hs  # noqa: F401 (fixtures)

from kafkagroup.coordinator import (
    DescribeGroupsRequest, OffsetCommitRequest, OffsetDeleteRequest, OffsetDeleteRequestTopic, OffsetFetchRequest,
    TransactionResult, TxnOffsetCommitRequest,
)
from kafkagroup.protocol.consumer_protocol import Subscription, encode_subscription


def delete(h: Harness, partitions, *, group: str | None = None):
    return h.coord.offset_delete(OffsetDeleteRequest.of(h.group_id if group is None else group, partitions))


def offsets(h: Harness, partitions, *, group: str | None = None) -> dict:
    r = h.coord.offset_fetch(OffsetFetchRequest.of(h.group_id if group is None else group, partitions))
    return {tp: p.committed_offset for tp, p in r.offsets().items()}


def consumer_protocols(*topics: str) -> list[tuple[str, bytes]]:
    return [("range", encode_subscription(Subscription(list(topics))))]


def stable_consumer(h: Harness, *topics: str) -> str:
    """One member subscribed to ``topics``, Stable at generation 1 (session long enough for the test)."""
    a, reply = h.two_step_join(protocols=consumer_protocols(*topics) if topics else RANGE, session=60_000)
    h.advance(50)
    assert reply.result().generation_id == 1
    assert h.sync(a, 1, [(a, b"")]).result().error_code == E.NONE
    return a


# ---------------------------------------------------------------------------------- group-level errors

def test_delete_offset_of_non_existing_group(hs: Harness) -> None:
    # GroupCoordinatorTest.testDeleteOffsetOfNonExistingGroup
    r = delete(hs, [("foo", 0)])
    assert (r.error_code, r.topics) == (E.GROUP_ID_NOT_FOUND, [])


def test_delete_offset_of_dead_consumer_group(hs: Harness) -> None:
    # GroupCoordinatorTest.testDeleteOffsetOfDeadConsumerGroup
    from kafkagroup.coordinator import ClassicGroup
    group = ClassicGroup("groupId", now_ms=0, state=S.DEAD)
    group.protocol_type = "consumer"
    hs.coord.add_group(group)
    r = delete(hs, [("foo", 0)])
    assert (r.error_code, r.topics) == (E.GROUP_ID_NOT_FOUND, [])


def test_delete_offset_of_non_empty_non_consumer_group(hs: Harness) -> None:
    # GroupCoordinatorTest.testDeleteOffsetOfNonEmptyNonConsumerGroup; Java ClassicGroup.validateOffsetDelete
    a, reply = hs.two_step_join(protocol_type="connect")
    hs.advance(50)
    reply.result()
    hs.sync(a, 1, [(a, b"")]).result()
    hs.commit({("foo", 0): 1}, member_id=a, generation=1)
    r = delete(hs, [("foo", 0)])
    assert (r.error_code, r.topics) == (E.NON_EMPTY_GROUP, [])
    assert offsets(hs, [("foo", 0)]) == {("foo", 0): 1}


def test_gate(hs: Harness) -> None:
    # spec §2.1: "" is not a valid group id for OffsetDelete (Scala isValidGroupId, Java isGroupIdNotEmpty)
    assert delete(hs, [("foo", 0)], group="").error_code == E.INVALID_GROUP_ID
    assert delete(hs, [("foo", 0)], group="otherGroup").error_code == E.NOT_COORDINATOR
    hs.coord.unload_partition(0)
    hs.coord.load_partition(0, defer=True)
    assert delete(hs, [("foo", 0)]).error_code == E.COORDINATOR_LOAD_IN_PROGRESS
    hs.coord.shutdown()
    assert delete(hs, [("foo", 0)]).error_code == E.COORDINATOR_NOT_AVAILABLE


# ------------------------------------------------------------------------------------------ Empty groups

def test_delete_offset_of_empty_non_consumer_group(hs: Harness) -> None:
    # GroupCoordinatorTest.testDeleteOffsetOfEmptyNonConsumerGroup
    a, reply = hs.two_step_join(protocol_type="connect")
    hs.advance(50)
    reply.result()
    hs.sync(a, 1, [(a, b"")]).result()
    hs.commit({("foo", 0): 37, ("bar", 0): 37}, member_id=a, generation=1)
    assert hs.leave(a).members[0].error_code == E.NONE and hs.group.state is S.EMPTY
    r = delete(hs, [("foo", 0)])
    assert (r.error_code, r.errors()) == (E.NONE, {("foo", 0): E.NONE})
    assert offsets(hs, [("foo", 0), ("bar", 0)]) == {("foo", 0): -1, ("bar", 0): 37}


def test_delete_offset_of_empty_consumer_group(hs: Harness) -> None:
    # GroupCoordinatorTest.testDeleteOffsetOfEmptyConsumerGroup
    a = stable_consumer(hs, "foo", "bar")
    hs.commit({("foo", 0): 37, ("bar", 0): 37}, member_id=a, generation=1)
    assert hs.leave(a).members[0].error_code == E.NONE and hs.group.state is S.EMPTY
    r = delete(hs, [("foo", 0)])
    assert (r.error_code, r.errors()) == (E.NONE, {("foo", 0): E.NONE})
    assert offsets(hs, [("foo", 0), ("bar", 0)]) == {("foo", 0): -1, ("bar", 0): 37}
    assert ("foo", 0) not in hs.coord.store.load_partition(0).offsets["groupId"]


def test_delete_offset_of_simple_group_and_absent_partitions(hs: Harness) -> None:
    # OffsetMetadataManagerTest.testGenericGroupOffsetDelete / testGenericGroupOffsetDeleteWithErrors: a
    # partition without an offset is answered NONE too
    hs.commit({("bar", 0): 100, ("keep", 0): 1})
    r = delete(hs, [("bar", 0), ("bar1", 0), ("bar", 7)])
    assert r.errors() == {("bar", 0): E.NONE, ("bar1", 0): E.NONE, ("bar", 7): E.NONE}
    assert [(t.name, [p.partition_index for p in t.partitions]) for t in r.topics] == [("bar", [0, 7]), ("bar1", [0])]
    assert offsets(hs, [("bar", 0), ("keep", 0)]) == {("bar", 0): -1, ("keep", 0): 1}


def test_deleting_the_last_offset_of_an_empty_group_removes_it(tmp_path: Path) -> None:
    # GroupMetadataManager.cleanupGroupMetadata (Scala): an Empty group left without offsets goes Dead
    path = str(tmp_path / "del.db")
    h = Harness("S", store=path)
    h.commit({("foo", 0): 1, ("foo", 1): 1})
    assert delete(h, [("foo", 0), ("foo", 1)]).errors() == {("foo", 0): E.NONE, ("foo", 1): E.NONE}
    assert h.coord.group("groupId") is None
    described = h.coord.describe_groups(DescribeGroupsRequest(["groupId"])).groups[0]
    assert described.group_state == "Dead"
    assert delete(h, [("foo", 0)]).error_code == E.GROUP_ID_NOT_FOUND
    h.coord.shutdown()
    h2 = Harness("S", store=path, clock=h.clock)
    assert h2.coord.group("groupId") is None and h2.coord.store.load_partition(0).offsets == {}


# ------------------------------------------------------------------------------------ non-empty groups

def test_delete_offset_of_stable_consumer_group(hs: Harness) -> None:
    # GroupCoordinatorTest.testDeleteOffsetOfStableConsumerGroup
    a = stable_consumer(hs, "bar")
    hs.commit({("foo", 0): 37, ("bar", 0): 37}, member_id=a, generation=1)
    r = delete(hs, [("foo", 0), ("bar", 0)])
    assert (r.error_code, r.errors()) == (E.NONE, {("foo", 0): E.NONE, ("bar", 0): E.GROUP_SUBSCRIBED_TO_TOPIC})
    assert offsets(hs, [("foo", 0), ("bar", 0)]) == {("foo", 0): -1, ("bar", 0): 37}
    assert hs.group.state is S.STABLE                     # a non-empty group is never removed


def test_delete_offset_of_consumer_group_with_unparsable_protocol(hs: Harness) -> None:
    # GroupCoordinatorTest.testDeleteOffsetOfConsumerGroupWithUnparsableProtocol: unknown subscriptions count
    # as subscribed (Java ClassicGroup.isSubscribedToTopic: orElse(usesConsumerGroupProtocol()))
    a = stable_consumer(hs)                               # metadata b"" does not parse
    hs.commit({("foo", 0): 37}, member_id=a, generation=1)
    r = delete(hs, [("foo", 0)])
    assert (r.error_code, r.errors()) == (E.NONE, {("foo", 0): E.GROUP_SUBSCRIBED_TO_TOPIC})
    assert offsets(hs, [("foo", 0)]) == {("foo", 0): 37}


def test_rebalancing_consumer_group_uses_the_last_generation_subscriptions(hs: Harness) -> None:
    # GroupCoordinator.handleDeleteOffsets: PreparingRebalance | CompletingRebalance | Stable if isConsumerGroup
    a = stable_consumer(hs, "bar")
    hs.commit({("foo", 0): 1, ("bar", 0): 1, ("baz", 0): 1}, member_id=a, generation=1)
    hs.join(a, protocols=consumer_protocols("bar", "baz"), session=60_000)      # leader rejoins
    assert hs.group.state is S.COMPLETING_REBALANCE       # it was the only member: the join completes at once
    assert delete(hs, [("baz", 0)]).errors() == {("baz", 0): E.GROUP_SUBSCRIBED_TO_TOPIC}
    assert delete(hs, [("foo", 0)]).errors() == {("foo", 0): E.NONE}
    b_reply = hs.join_v3("", protocols=consumer_protocols("bar", "baz"), session=60_000)
    assert hs.group.state is S.PREPARING_REBALANCE and not b_reply.done()
    assert delete(hs, [("bar", 0), ("baz", 0)]).errors() == {
        ("bar", 0): E.GROUP_SUBSCRIBED_TO_TOPIC, ("baz", 0): E.GROUP_SUBSCRIBED_TO_TOPIC}


def test_first_generation_not_complete_counts_as_subscribed(hs: Harness) -> None:
    # before a first generation the subscribed topics are unknown (Kafka: None) -> treated as subscribed
    hs.commit({("foo", 0): 1})
    m, reply = hs.two_step_join(protocols=consumer_protocols("bar"))
    assert hs.group.state is S.PREPARING_REBALANCE and not reply.done()
    assert delete(hs, [("foo", 0)]).errors() == {("foo", 0): E.GROUP_SUBSCRIBED_TO_TOPIC}


# ------------------------------------------------------------------------------ pending txn offsets

def test_offset_delete_with_pending_transactional_offsets(hs: Harness) -> None:
    # OffsetMetadataManagerTest.testGenericGroupOffsetDeleteWithPendingTransactionalOffsets: the tombstone
    # also removes the pending transactional offset, so the later marker materializes nothing
    hs.commit({("keep", 0): 1})
    req = TxnOffsetCommitRequest.of("tx", "groupId", 10, 0, {("bar", 0): 100, ("other", 0): 5})
    assert set(hs.coord.txn_offset_commit(req).errors().values()) == {E.NONE}
    assert delete(hs, [("bar", 0)]).errors() == {("bar", 0): E.NONE}
    assert set(hs.group.pending_txn_partitions) == {("other", 0)}
    assert hs.coord.complete_transaction(10, 0, [0], TransactionResult.COMMIT) == {0: E.NONE}
    assert offsets(hs, [("bar", 0), ("other", 0)]) == {("bar", 0): -1, ("other", 0): 5}


def test_an_empty_group_with_pending_offsets_elsewhere_is_kept(hs: Harness) -> None:
    # GroupMetadata.hasOffsets counts pending transactional offsets
    hs.commit({("foo", 0): 1})
    req = TxnOffsetCommitRequest.of("tx", "groupId", 10, 0, {("bar", 0): 100})
    hs.coord.txn_offset_commit(req)
    assert delete(hs, [("foo", 0)]).errors() == {("foo", 0): E.NONE}
    assert hs.coord.group("groupId") is not None
    assert delete(hs, [("bar", 0)]).errors() == {("bar", 0): E.NONE}   # now nothing is left
    assert hs.coord.group("groupId") is None and hs.coord.store.load_partition(0).pending == {}


# -------------------------------------------------------------------------------------- durability

def test_deletion_is_durable(tmp_path: Path) -> None:
    path = str(tmp_path / "del.db")
    h = Harness("S", store=path)
    h.commit({("foo", 0): 1, ("foo", 1): 2})
    delete(h, [("foo", 0)])
    h.coord.shutdown()
    h2 = Harness("S", store=path, clock=h.clock)
    assert offsets(h2, [("foo", 0), ("foo", 1)]) == {("foo", 0): -1, ("foo", 1): 2}


def test_failed_deletion_changes_nothing(hs: Harness) -> None:
    # the write failure is a group-level error (Java GroupCoordinatorService.handleOperationException; mapped
    # here as the other group-metadata writes, spec §2.9)
    hs.commit({("foo", 0): 1})
    hs.coord.store.inject_failure(E.NOT_LEADER_OR_FOLLOWER)
    r = delete(hs, [("foo", 0)])
    assert (r.error_code, r.topics) == (E.NOT_COORDINATOR, [])
    assert offsets(hs, [("foo", 0)]) == {("foo", 0): 1}
    assert hs.coord.store.load_partition(0).offsets["groupId"][("foo", 0)].committed_offset == 1
    assert delete(hs, [("foo", 0)]).errors() == {("foo", 0): E.NONE}


def test_request_shape(hs: Harness) -> None:
    hs.commit({("a", 0): 1, ("a", 1): 1})
    req = OffsetDeleteRequest("groupId", [OffsetDeleteRequestTopic("a", [1, 0])])
    r = hs.coord.offset_delete(req)
    assert [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in r.topics] == [
        ("a", [(1, E.NONE), (0, E.NONE)])]


# ------------------------------------------------------------------- OffsetCommit version (§8 row 9)

def test_offset_commit_to_unknown_group_answer_depends_on_the_version(hs: Harness) -> None:
    # GroupCoordinatorTest.testCommitOffsetFromUnknownGroup (22) and OffsetMetadataManager.validateOffsetCommit
    # (v9+: GROUP_ID_NOT_FOUND); the group is not created either way
    for version, expected in ((0, E.ILLEGAL_GENERATION), (8, E.ILLEGAL_GENERATION), (9, E.GROUP_ID_NOT_FOUND)):
        r = hs.coord.offset_commit(OffsetCommitRequest.of("groupId", {("topic", 0): 0}, generation_id=1,
                                                          member_id="memberId", version=version))
        assert r.errors() == {("topic", 0): expected}
        assert hs.coord.group("groupId") is None
    assert OffsetCommitRequest("g").version == 8          # the default keeps the Scala answer (22)
    r = hs.coord.offset_commit(OffsetCommitRequest.of("groupId", {("topic", 0): 0}, version=9))
    assert r.errors() == {("topic", 0): E.NONE}           # generation -1 still creates a simple group
