"""Request and response values of Kafka's classic group and offset APIs, with Kafka's field names in snake_case.

These mirror the Kafka message schemas (``clients/src/main/resources/common/message/*.json``) at the level
the coordinator needs; they are plain dataclasses, not wire codecs.  Error fields are
:class:`~kafkagroup.messages.error_codes.ErrorCode` (an ``IntEnum``: compare with ints or names).

Example -- the two-step join of KIP-394::

    first = JoinGroupRequest("my-group", protocols=[("range", subscription_bytes)], session_timeout_ms=10_000)
    r = coordinator.join_group(first).result()          # r.error_code == ErrorCode.MEMBER_ID_REQUIRED
    second = dataclasses.replace(first, member_id=r.member_id)
    reply = coordinator.join_group(second)              # a Deferred; done when the join phase completes

Versions: ``JoinGroupRequest.version`` selects the KIP-394 behaviour (>= 4: a dynamic member must first get
a member id) and KIP-814 (>= 9: ``skip_assignment`` may be set for a restarted static leader);
``rebalance_timeout_ms = -1`` means "same as session" (JoinGroup v0).  ``OffsetCommitRequest.version``
selects the answer to a commit with a generation to an unknown group (>= 9: GROUP_ID_NOT_FOUND, as the
Java coordinator; older: ILLEGAL_GENERATION).  Other versions only matter where noted on the field.

Sequence fields: a request refuses ``None`` (or a str, bytes or non-iterable) where Kafka's field is an array
that is not nullable, raising :class:`~kafkagroup.errors.InvalidGroupError` naming the class and field when
it is built; the one nullable array modeled is ``OffsetFetchRequest.topics`` (``None`` = every committed
offset, OffsetFetch v2+).  Each class lists those fields in ``NON_NULLABLE_SEQUENCES`` (the nullable one in
``NULLABLE_SEQUENCES``), checked by the shared ``__post_init__`` of ``_CheckedArrays``; a request mutated to
``None`` after construction is answered INVALID_REQUEST (42) by the coordinator (see
``kafkagroup.coordinator.request_limits``), never raised.

Transactions (KIP-98): a :class:`TxnOffsetCommitRequest` stores offsets as *pending* for its producer id;
:class:`TransactionResult` is the outcome a transaction marker carries to
``GroupCoordinator.complete_transaction``.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar, Mapping, Sequence

from kafkagroup.errors import InvalidGroupError
from kafkagroup.messages.error_codes import ErrorCode
from kafkagroup.structs import TopicPartition

__all__ = [
    "JoinGroupRequest", "JoinGroupResponse", "JoinGroupResponseMember",
    "SyncGroupRequest", "SyncGroupResponse",
    "HeartbeatRequest", "HeartbeatResponse",
    "MemberIdentity", "LeaveGroupRequest", "LeaveGroupResponse", "LeaveGroupMemberResponse",
    "OffsetCommitRequestPartition", "OffsetCommitRequestTopic", "OffsetCommitRequest",
    "OffsetCommitResponsePartition", "OffsetCommitResponseTopic", "OffsetCommitResponse",
    "OffsetFetchRequestTopic", "OffsetFetchRequest",
    "OffsetFetchResponsePartition", "OffsetFetchResponseTopic", "OffsetFetchResponse",
    "TxnOffsetCommitRequest", "TxnOffsetCommitResponse", "TransactionResult",
    "OffsetDeleteRequestTopic", "OffsetDeleteRequest",
    "OffsetDeleteResponsePartition", "OffsetDeleteResponseTopic", "OffsetDeleteResponse",
    "DescribeGroupsRequest", "DescribeGroupsResponse", "DescribedGroup", "DescribedGroupMember",
    "ListGroupsRequest", "ListGroupsResponse", "ListedGroup",
    "DeleteGroupsRequest", "DeleteGroupsResponse", "DeletableGroupResult",
]


def sequence_problem(value: Any) -> str | None:
    """Why ``value`` cannot stand for one of Kafka's non-nullable arrays, or None if it can."""
    if value is None:
        return "is null, which Kafka's wire format does not allow for this array"
    if isinstance(value, (str, bytes, bytearray, memoryview)) or not isinstance(value, Iterable):
        return f"must be a sequence, got {type(value).__name__} {value!r:.80}"
    return None


class _CheckedArrays:
    """Base of the request types: their array fields are checked when a request is built.

    Every field named in ``NON_NULLABLE_SEQUENCES`` must be a sequence; one named in ``NULLABLE_SEQUENCES``
    may also be None.  Otherwise :class:`~kafkagroup.errors.InvalidGroupError` names the class and field.
    """

    __slots__ = ()
    NON_NULLABLE_SEQUENCES: ClassVar[tuple[str, ...]] = ()
    NULLABLE_SEQUENCES: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        for name in self.NON_NULLABLE_SEQUENCES + self.NULLABLE_SEQUENCES:
            value = getattr(self, name)
            if value is None and name in self.NULLABLE_SEQUENCES:
                continue
            problem = sequence_problem(value)
            if problem is not None:
                raise InvalidGroupError(f"{type(self).__name__}.{name} {problem}")


def _partitions_by_topic(partitions: Iterable[TopicPartition | tuple[str, int]]) -> dict[str, list[int]]:
    """``{topic: [partition, ...]}``, topics in first-seen order: the shape of Kafka's per-topic arrays."""
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    return by_topic


class _PartitionErrors:
    """Base of the responses that answer per partition (``topics``, each with ``name`` and ``partitions``)."""

    __slots__ = ()
    topics: Sequence[Any]

    def errors(self) -> dict[TopicPartition, ErrorCode]:
        """``{TopicPartition: error_code}`` for every partition answered."""
        return {TopicPartition(t.name, p.partition_index): p.error_code for t in self.topics for p in t.partitions}


# --------------------------------------------------------------------------------------------- JoinGroup


@dataclass(slots=True)
class JoinGroupRequest(_CheckedArrays):
    group_id: str
    member_id: str = ""                              # "" = UNKNOWN_MEMBER_ID
    group_instance_id: str | None = None             # set = static member (KIP-345)
    protocol_type: str = "consumer"
    protocols: Sequence[tuple[str, bytes]] = ()      # ordered (name, metadata); order is the member's vote
    session_timeout_ms: int = 45_000
    rebalance_timeout_ms: int = -1                   # -1: same as session_timeout_ms (v0)
    reason: str | None = None
    client_id: str = ""                              # request header; member ids are client_id + "-" + uuid
    client_host: str = ""
    version: int = 9                                 # >= 4 requires a known member id; >= 9 skip_assignment

    NON_NULLABLE_SEQUENCES: ClassVar[tuple[str, ...]] = ("protocols",)


@dataclass(slots=True)
class JoinGroupResponseMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(slots=True)
class JoinGroupResponse:
    error_code: ErrorCode
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    member_id: str = ""
    members: list[JoinGroupResponseMember] = field(default_factory=list)  # leader only


# --------------------------------------------------------------------------------------------- SyncGroup


@dataclass(slots=True)
class SyncGroupRequest(_CheckedArrays):
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None
    protocol_type: str | None = None                 # v5+, None = not sent
    protocol_name: str | None = None                 # v5+, None = not sent
    # leader: (member_id, assignment bytes) pairs (a Mapping is accepted too); followers send none
    assignments: Sequence[tuple[str, bytes]] | Mapping[str, bytes] = ()

    NON_NULLABLE_SEQUENCES: ClassVar[tuple[str, ...]] = ("assignments",)


@dataclass(slots=True)
class SyncGroupResponse:
    error_code: ErrorCode
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


# --------------------------------------------------------------------------------------------- Heartbeat


@dataclass(slots=True)
class HeartbeatRequest:
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None = None


@dataclass(slots=True)
class HeartbeatResponse:
    error_code: ErrorCode


# -------------------------------------------------------------------------------------------- LeaveGroup


@dataclass(slots=True)
class MemberIdentity:
    member_id: str = ""
    group_instance_id: str | None = None
    reason: str | None = None


@dataclass(slots=True)
class LeaveGroupRequest(_CheckedArrays):
    group_id: str
    members: Sequence[MemberIdentity] = ()           # v3+ batch; v0-v2 = one MemberIdentity(member_id)

    NON_NULLABLE_SEQUENCES: ClassVar[tuple[str, ...]] = ("members",)


@dataclass(slots=True)
class LeaveGroupMemberResponse:
    member_id: str
    group_instance_id: str | None
    error_code: ErrorCode


@dataclass(slots=True)
class LeaveGroupResponse:
    error_code: ErrorCode
    members: list[LeaveGroupMemberResponse] = field(default_factory=list)   # request order


# ------------------------------------------------------------------------------------------ OffsetCommit


@dataclass(slots=True)
class OffsetCommitRequestPartition:
    partition_index: int
    committed_offset: int
    committed_leader_epoch: int = -1
    committed_metadata: str | None = ""


@dataclass(slots=True)
class OffsetCommitRequestTopic(_CheckedArrays):
    name: str
    partitions: Sequence[OffsetCommitRequestPartition] = ()

    NON_NULLABLE_SEQUENCES: ClassVar[tuple[str, ...]] = ("partitions",)


@dataclass(slots=True)
class OffsetCommitRequest(_CheckedArrays):
    group_id: str
    generation_id: int = -1                          # -1: not using group management (admin / manual)
    member_id: str = ""
    group_instance_id: str | None = None
    retention_time_ms: int = -1                      # v2-v4 only; -1 = broker default retention
    topics: Sequence[OffsetCommitRequestTopic] = ()
    version: int = 8                                 # >= 9: unknown group with generation >= 0 -> 69, else 22

    NON_NULLABLE_SEQUENCES: ClassVar[tuple[str, ...]] = ("topics",)

    @classmethod
    def of(
        cls,
        group_id: str,
        offsets: Mapping[TopicPartition | tuple[str, int], int | tuple[int, str | None]],
        *,
        generation_id: int = -1,
        member_id: str = "",
        group_instance_id: str | None = None,
        retention_time_ms: int = -1,
        version: int = 8,
    ) -> "OffsetCommitRequest":
        """Build a request from ``{(topic, partition): offset or (offset, metadata)}``, topics in first-seen order."""
        return cls(group_id, generation_id, member_id, group_instance_id, retention_time_ms,
                   _commit_topics(offsets), version)


def _commit_topics(offsets: Mapping[TopicPartition | tuple[str, int], int | tuple[int, str | None]]
                   ) -> list[OffsetCommitRequestTopic]:
    by_topic: dict[str, list[OffsetCommitRequestPartition]] = {}
    for (topic, partition), value in offsets.items():
        offset, metadata = (value, "") if isinstance(value, int) else value
        by_topic.setdefault(topic, []).append(OffsetCommitRequestPartition(partition, offset, -1, metadata))
    return [OffsetCommitRequestTopic(t, ps) for t, ps in by_topic.items()]


@dataclass(slots=True)
class OffsetCommitResponsePartition:
    partition_index: int
    error_code: ErrorCode


@dataclass(slots=True)
class OffsetCommitResponseTopic:
    name: str
    partitions: list[OffsetCommitResponsePartition] = field(default_factory=list)


@dataclass(slots=True)
class OffsetCommitResponse(_PartitionErrors):
    topics: list[OffsetCommitResponseTopic] = field(default_factory=list)


# ------------------------------------------------------------------------------------------- OffsetFetch


@dataclass(slots=True)
class OffsetFetchRequestTopic(_CheckedArrays):
    name: str
    partition_indexes: Sequence[int] = ()

    NON_NULLABLE_SEQUENCES: ClassVar[tuple[str, ...]] = ("partition_indexes",)


@dataclass(slots=True)
class OffsetFetchRequest(_CheckedArrays):
    group_id: str
    topics: Sequence[OffsetFetchRequestTopic] | None = None   # None = every committed offset of the group
    require_stable: bool = False                               # v7+
    member_id: str | None = None                               # v9+ (KIP-848): checked for consumer groups
    member_epoch: int = -1                                     # v9+: -1 = not a member (admin)

    NULLABLE_SEQUENCES: ClassVar[tuple[str, ...]] = ("topics",)   # v2+: None = all

    @classmethod
    def of(cls, group_id: str, partitions: Sequence[TopicPartition | tuple[str, int]] | None,
           *, require_stable: bool = False) -> "OffsetFetchRequest":
        if partitions is None:
            return cls(group_id, None, require_stable)
        topics = [OffsetFetchRequestTopic(t, ps) for t, ps in _partitions_by_topic(partitions).items()]
        return cls(group_id, topics, require_stable)


@dataclass(slots=True)
class OffsetFetchResponsePartition:
    partition_index: int
    committed_offset: int = -1
    committed_leader_epoch: int = -1
    metadata: str = ""
    error_code: ErrorCode = ErrorCode.NONE


@dataclass(slots=True)
class OffsetFetchResponseTopic:
    name: str
    partitions: list[OffsetFetchResponsePartition] = field(default_factory=list)


@dataclass(slots=True)
class OffsetFetchResponse:
    error_code: ErrorCode
    topics: list[OffsetFetchResponseTopic] = field(default_factory=list)

    def offsets(self) -> dict[TopicPartition, OffsetFetchResponsePartition]:
        return {TopicPartition(t.name, p.partition_index): p for t in self.topics for p in t.partitions}


# -------------------------------------------------------------------------------------- TxnOffsetCommit


@dataclass(slots=True)
class TxnOffsetCommitRequest(_CheckedArrays):
    """Offsets committed inside a transaction (KIP-98); topics/partitions have OffsetCommit's shape (Kafka's
    TxnOffsetCommit partitions carry the same four fields).  v0-v2 send no generation / member."""

    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    generation_id: int = -1                          # v3+; -1 = not sent
    member_id: str = ""                              # v3+
    group_instance_id: str | None = None             # v3+
    topics: Sequence[OffsetCommitRequestTopic] = ()

    NON_NULLABLE_SEQUENCES: ClassVar[tuple[str, ...]] = ("topics",)

    @classmethod
    def of(
        cls,
        transactional_id: str,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        offsets: Mapping[TopicPartition | tuple[str, int], int | tuple[int, str | None]],
        *,
        generation_id: int = -1,
        member_id: str = "",
        group_instance_id: str | None = None,
    ) -> "TxnOffsetCommitRequest":
        """Build a request from ``{(topic, partition): offset or (offset, metadata)}``, topics in first-seen order."""
        return cls(transactional_id, group_id, producer_id, producer_epoch, generation_id, member_id,
                   group_instance_id, _commit_topics(offsets))


@dataclass(slots=True)
class TxnOffsetCommitResponse(_PartitionErrors):
    topics: list[OffsetCommitResponseTopic] = field(default_factory=list)


class TransactionResult(Enum):
    """What a transaction marker says (``org.apache.kafka.common.requests.TransactionResult``)."""

    COMMIT = "commit"
    ABORT = "abort"


# ----------------------------------------------------------------------------------------- OffsetDelete


@dataclass(slots=True)
class OffsetDeleteRequestTopic(_CheckedArrays):
    name: str
    partition_indexes: Sequence[int] = ()

    NON_NULLABLE_SEQUENCES: ClassVar[tuple[str, ...]] = ("partition_indexes",)


@dataclass(slots=True)
class OffsetDeleteRequest(_CheckedArrays):
    """KIP-496: delete committed offsets of a group (admin ``deleteConsumerGroupOffsets``)."""

    group_id: str
    topics: Sequence[OffsetDeleteRequestTopic] = ()

    NON_NULLABLE_SEQUENCES: ClassVar[tuple[str, ...]] = ("topics",)

    @classmethod
    def of(cls, group_id: str, partitions: Sequence[TopicPartition | tuple[str, int]]) -> "OffsetDeleteRequest":
        return cls(group_id, [OffsetDeleteRequestTopic(t, ps) for t, ps in _partitions_by_topic(partitions).items()])


@dataclass(slots=True)
class OffsetDeleteResponsePartition:
    partition_index: int
    error_code: ErrorCode


@dataclass(slots=True)
class OffsetDeleteResponseTopic:
    name: str
    partitions: list[OffsetDeleteResponsePartition] = field(default_factory=list)


@dataclass(slots=True)
class OffsetDeleteResponse(_PartitionErrors):
    error_code: ErrorCode                            # a group-level error leaves ``topics`` empty
    topics: list[OffsetDeleteResponseTopic] = field(default_factory=list)


# ------------------------------------------------------------------------------ Describe / List / Delete


@dataclass(slots=True)
class DescribeGroupsRequest(_CheckedArrays):
    groups: Sequence[str] = ()
    version: int = 0                                 # v6+ (KIP-1043): a missing or non-classic group is an error

    NON_NULLABLE_SEQUENCES: ClassVar[tuple[str, ...]] = ("groups",)


@dataclass(slots=True)
class DescribedGroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_metadata: bytes
    member_assignment: bytes


@dataclass(slots=True)
class DescribedGroup:
    error_code: ErrorCode
    group_id: str
    group_state: str                                 # "Empty", "PreparingRebalance", ..., "Dead"
    protocol_type: str = ""
    protocol_data: str = ""                          # the selected protocol name (Stable only)
    members: list[DescribedGroupMember] = field(default_factory=list)
    error_message: str | None = None                 # v6+


@dataclass(slots=True)
class DescribeGroupsResponse:
    groups: list[DescribedGroup] = field(default_factory=list)


@dataclass(slots=True)
class ListGroupsRequest(_CheckedArrays):
    states_filter: Sequence[str] = ()                # v4+; empty = all states

    NON_NULLABLE_SEQUENCES: ClassVar[tuple[str, ...]] = ("states_filter",)


@dataclass(slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    group_state: str
    group_type: str = "classic"             # ListGroups v5+ (KIP-848): "classic" or "consumer"


@dataclass(slots=True)
class ListGroupsResponse:
    error_code: ErrorCode
    groups: list[ListedGroup] = field(default_factory=list)


@dataclass(slots=True)
class DeleteGroupsRequest(_CheckedArrays):
    groups_names: Sequence[str] = ()

    NON_NULLABLE_SEQUENCES: ClassVar[tuple[str, ...]] = ("groups_names",)


@dataclass(slots=True)
class DeletableGroupResult:
    group_id: str
    error_code: ErrorCode


@dataclass(slots=True)
class DeleteGroupsResponse:
    results: list[DeletableGroupResult] = field(default_factory=list)
