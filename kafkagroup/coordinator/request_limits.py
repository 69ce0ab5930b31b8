"""What a classic-group request can carry: the value ranges and string limits of Kafka's wire format.

The coordinator takes requests as Python objects, so it can be handed values no Kafka request can hold: an
offset of ``2**63``, a partition index of ``2**40``, a topic name with a lone surrogate (``"t\\ud800"``).  Left
alone, such a value raises deep in a handler (SQLite's INTEGER is int64, SQLite's TEXT must be UTF-8) or is
silently stored.  Every ``GroupCoordinator`` entry point therefore checks its request here *before* the gate
and the handlers: a violation is answered with INVALID_REQUEST (42) in that request's response shape, the
offending field named in a log line, and nothing is read from or written to the group or the store.

Why 42, and why for the whole request: in Kafka such a request cannot exist -- the client cannot serialize
it, and bytes that do not parse never reach a handler: ``RequestContext.parseRequest`` throws
``InvalidRequestException`` on the network thread and ``SocketServer`` closes the connection without an
answer.  An in-process coordinator has no connection to close, so it answers what Kafka answers when a
handler rejects a request with that same exception (``AbstractRequest.getErrorResponse`` with
``Errors.forException``): 42 everywhere the response carries an error -- per partition for OffsetCommit and
TxnOffsetCommit, per group for DescribeGroups and DeleteGroups, top-level for the others (OffsetFetch v2+ and
OffsetDelete answer a request-level error with no partitions).

The limits (Kafka's ``Type``/generated message classes, identical for every version the coordinator models):

* INT16: producer epoch.  INT32: generation ids, partition indexes, session and rebalance timeouts, leader
  epochs.  INT64: offsets, producer ids, retention time.  Negative values inside the range are valid on the
  wire; what they mean (e.g. a session timeout below the minimum) is the handlers' business.
* Strings are UTF-8, so a ``str`` must be encodable (no lone surrogates), and at most 32,767 bytes encoded:
  the generated code refuses a longer string both when writing and when reading it, for the int16-prefixed
  STRING of the old versions *and* the varint-prefixed COMPACT_STRING of the flexible ones.  The same rule is
  applied to ``client_id`` (the request header's NULLABLE_STRING) and to ``client_host`` (not on the wire --
  Kafka takes it from the socket -- but stored with the member).
* BYTES (protocol metadata, assignments): at most ``2**31 - 1`` bytes (int32 length).  Array counts (int32)
  are not checked: no Python list reaches ``2**31`` elements in practice.

* Null: a STRING or an array that is not nullable in Kafka's schema may not be null (``None``): the bytes
  can say "null" (length -1) but Kafka's parser refuses it for such a field, so it is answered 42 like the
  values above.  Nullable here: ``group_instance_id``, ``reason``, ``client_id``, SyncGroup's
  ``protocol_type`` / ``protocol_name``, ``committed_metadata``, and ``OffsetFetchRequest.topics`` (v2+:
  every committed offset).  A group id of None is the gate's INVALID_GROUP_ID (spec §2.1).  The request
  types refuse a None array when they are built (:mod:`kafkagroup.messages.api`); this check answers one
  set to None afterwards.

A value of the wrong Python type (an offset that is a str, a metadata that is not bytes, an array element
that is not the request's entry type) is not a request Kafka could have sent either, but it is a bug of the
caller's code, not data from a peer: it raises :class:`~kafkagroup.errors.InvalidGroupError` naming the
field, as the coordinator's interface states.  ``bool`` is refused where an integer is expected.

Cost: one pass over the request's fields, O(partitions) for the offset requests, with a fast path for
in-range ints and ASCII strings; the handlers make the same pass anyway.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

from kafkagroup.messages.api import (
    DeleteGroupsRequest, DescribeGroupsRequest, HeartbeatRequest, JoinGroupRequest, LeaveGroupRequest,
    ListGroupsRequest, MemberIdentity, OffsetCommitRequestPartition, OffsetCommitRequestTopic, OffsetCommitRequest,
    OffsetDeleteRequest, OffsetDeleteRequestTopic, OffsetFetchRequest, OffsetFetchRequestTopic, SyncGroupRequest,
    TxnOffsetCommitRequest, sequence_problem,
)
from kafkagroup.errors import InvalidGroupError
from kafkagroup.protocol.consumer_protocol import MAX_BYTES_LENGTH, MAX_STRING_BYTES, short_repr, string_problem

__all__ = [
    "MAX_STRING_BYTES", "MAX_BYTES_LENGTH", "INT16", "INT32", "INT64",
    "join_group_violation", "sync_group_violation", "heartbeat_violation", "leave_group_violation",
    "offset_commit_violation", "txn_offset_commit_violation", "offset_fetch_violation",
    "offset_delete_violation", "describe_groups_violation", "list_groups_violation", "delete_groups_violation",
    "transaction_marker_violation",
]

INT16 = (-(2**15), 2**15 - 1)
INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
_I32_LO, _I32_HI = INT32
_I64_LO, _I64_HI = INT64
_BITS = {INT16: "int16", INT32: "int32", INT64: "int64"}


def _int(value: Any, limits: tuple[int, int], where: str, field: str) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidGroupError(f"{where}: {field} must be an int, got {short_repr(value)}")
    lo, hi = limits
    if lo <= value <= hi:
        return None
    return f"{where}: {field}={value} is outside {_BITS[limits]} [{lo}, {hi}]"


def _str(value: Any, where: str, field: str, *, nullable: bool = False) -> str | None:
    if value is None:
        return None if nullable else f"{where}: {field} is null, which Kafka's wire format does not allow here"
    if not isinstance(value, str):
        raise InvalidGroupError(f"{where}: {field} must be a str, got {short_repr(value)}")
    problem = string_problem(value)
    return None if problem is None else f"{where}: {field}={short_repr(value)} {problem}"


def _bytes(value: Any, where: str, field: str) -> str | None:
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise InvalidGroupError(f"{where}: {field} must be bytes, got {short_repr(value)}")
    size = value.nbytes if isinstance(value, memoryview) else len(value)
    if size > MAX_BYTES_LENGTH:
        return f"{where}: {field} is {size} bytes, over Kafka's BYTES limit of {MAX_BYTES_LENGTH}"
    return None


def _array(value: Any, where: str, field: str) -> str | None:
    """A non-nullable array: None is a violation (42); a str, bytes or non-iterable is a caller bug."""
    problem = sequence_problem(value)
    if problem is None:
        return None
    if value is None:
        return f"{where}: {field} {problem}"
    raise InvalidGroupError(f"{where}: {field} {problem}")


def _entry(value: Any, kind: type | tuple[type, ...], where: str, field: str) -> None:
    """An array element must be the request's entry type (None included: no wire form has a null entry)."""
    if not isinstance(value, kind):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise InvalidGroupError(f"{where}: {field} must be a {names}, got {short_repr(value)}")


def _first(*problems: str | None) -> str | None:
    for p in problems:
        if p is not None:
            return p
    return None


def _member_identity(request: Any, where: str) -> str | None:
    """generation_id, member_id, group_instance_id: how SyncGroup, Heartbeat, OffsetCommit and TxnOffsetCommit
    name the member sending them."""
    return _first(
        _int(request.generation_id, INT32, where, "generation_id"),
        _str(request.member_id, where, "member_id"),
        _str(request.group_instance_id, where, "group_instance_id", nullable=True),
    )


def _where(api: str, group_id: Any) -> str:
    return f"{api} of group {short_repr(group_id)}"


def _group_id(where: str, group_id: Any) -> str | None:
    """A None group id is the gate's INVALID_GROUP_ID (spec §2.1), not a malformed request."""
    return None if group_id is None else _str(group_id, where, "group_id")


def _group_id_at(group_id: Any, where: str, field: str) -> str | None:
    return None if group_id is None else _str(group_id, where, field)


def _array_of(values: Any, where: str, field: str, check: Callable[[Any, str, str], str | None]) -> str | None:
    """A non-nullable array (see ``_array``) whose elements each pass ``check(element, where, "field[i]")``:
    the first violation, or None."""
    null = _array(values, where, field)
    if null is not None:
        return null
    for i, value in enumerate(values):
        problem = check(value, where, f"{field}[{i}]")
        if problem is not None:
            return problem
    return None


# ------------------------------------------------------------------------------------------- membership


def _str_bytes_pairs(entries: Iterable[Any], where: str, caller: str, entry_name: str, field: str,
                     names: tuple[str, str]) -> str | None:
    """The first wire violation among (str, bytes) pairs (JoinGroup protocols, SyncGroup assignments), or
    None; raises InvalidGroupError for an entry of the wrong shape."""
    problem = None
    for i, entry in enumerate(entries):
        if not (isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], str)
                and isinstance(entry[1], (bytes, bytearray, memoryview))):
            raise InvalidGroupError(f"{caller}: {entry_name} #{i} must be ({names[0]}: str, {names[1]}: bytes), "
                                    f"got {entry!r}")
        if problem is None:
            problem = _first(_str(entry[0], where, f"{field}[{i}].{names[0]}"),
                             _bytes(entry[1], where, f"{field}[{i}].{names[1]}"))
    return problem


def join_group_violation(request: JoinGroupRequest) -> str | None:
    """The first field of a JoinGroup Kafka's wire format cannot carry, or None.  Raises InvalidGroupError for
    a malformed protocols list (the message names the member)."""
    where = _where("JoinGroup", request.group_id)
    protocols = request.protocols
    if isinstance(protocols, (str, bytes)):
        raise InvalidGroupError(f"JoinGroup of member {request.member_id!r} in group {request.group_id!r}: "
                                f"protocols must be a sequence of (name, metadata bytes), got {protocols!r}")
    null = _array(protocols, where, "protocols")
    if null is not None:
        return null
    problem = _str_bytes_pairs(protocols, where, f"JoinGroup of member {request.member_id!r} in group "
                               f"{request.group_id!r}", "protocol", "protocols", ("name", "metadata"))
    return _first(
        _group_id(where, request.group_id),
        _int(request.session_timeout_ms, INT32, where, "session_timeout_ms"),
        _int(request.rebalance_timeout_ms, INT32, where, "rebalance_timeout_ms"),
        _str(request.member_id, where, "member_id"),
        _str(request.group_instance_id, where, "group_instance_id", nullable=True),
        _str(request.protocol_type, where, "protocol_type"),
        problem,
        _str(request.reason, where, "reason", nullable=True),
        _str(request.client_id, where, "client_id", nullable=True),
        _str(request.client_host, where, "client_host"),
    )


def sync_group_violation(request: SyncGroupRequest) -> str | None:
    """The first field of a SyncGroup Kafka's wire format cannot carry, or None.  Raises InvalidGroupError for
    a malformed assignments list."""
    where = _where("SyncGroup", request.group_id)
    if not isinstance(request.assignments, Mapping):
        null = _array(request.assignments, where, "assignments")
        if null is not None:
            return null
    items: Iterable[Any] = (request.assignments.items() if isinstance(request.assignments, Mapping)
                            else request.assignments)
    problem = _str_bytes_pairs(items, where, f"SyncGroup of member {request.member_id!r} in group "
                               f"{request.group_id!r}", "assignment", "assignments", ("member_id", "assignment"))
    return _first(
        _group_id(where, request.group_id),
        _member_identity(request, where),
        _str(request.protocol_type, where, "protocol_type", nullable=True),
        _str(request.protocol_name, where, "protocol_name", nullable=True),
        problem,
    )


def heartbeat_violation(request: HeartbeatRequest) -> str | None:
    where = _where("Heartbeat", request.group_id)
    return _first(
        _group_id(where, request.group_id),
        _member_identity(request, where),
    )


def leave_group_violation(request: LeaveGroupRequest) -> str | None:
    where = _where("LeaveGroup", request.group_id)
    problem = _array(request.members, where, "members") or _group_id(where, request.group_id)
    if request.members is None:
        return problem
    for i, m in enumerate(request.members):
        _entry(m, MemberIdentity, where, f"members[{i}]")
        problem = problem or _first(
            _str(m.member_id, where, f"members[{i}].member_id"),
            _str(m.group_instance_id, where, f"members[{i}].group_instance_id", nullable=True),
            _str(m.reason, where, f"members[{i}].reason", nullable=True),
        )
    return problem


# ---------------------------------------------------------------------------------------------- offsets


def _commit_topics_violation(where: str, topics: Sequence[OffsetCommitRequestTopic]) -> str | None:
    """OffsetCommit / TxnOffsetCommit topics: name STRING; partition_index INT32, committed_offset INT64,
    committed_leader_epoch INT32, committed_metadata NULLABLE_STRING.  The loop's fast path accepts plain
    in-range ints and short ASCII metadata without a call per field."""
    problem = _array(topics, where, "topics")
    if problem is not None:
        return problem
    for ti, topic in enumerate(topics):
        _entry(topic, OffsetCommitRequestTopic, where, f"topics[{ti}]")
        problem = _first(_str(topic.name, where, f"topics[{ti}].name"),
                         _array(topic.partitions, where, f"topics[{ti}] {short_repr(topic.name)} partitions"))
        if problem is not None:
            return problem
        for pi, p in enumerate(topic.partitions):
            if type(p) is not OffsetCommitRequestPartition:
                _entry(p, OffsetCommitRequestPartition, where, f"topics[{ti}] {short_repr(topic.name)} partitions[{pi}]")
            index, offset, epoch, metadata = (p.partition_index, p.committed_offset, p.committed_leader_epoch,
                                              p.committed_metadata)
            if (type(index) is int and _I32_LO <= index <= _I32_HI
                    and type(offset) is int and _I64_LO <= offset <= _I64_HI
                    and type(epoch) is int and _I32_LO <= epoch <= _I32_HI
                    and (metadata is None or (type(metadata) is str and metadata.isascii()
                                              and len(metadata) <= MAX_STRING_BYTES))):
                continue
            field = f"topics[{ti}] {short_repr(topic.name)} partitions[{pi}]"
            problem = _first(
                _int(index, INT32, where, f"{field}.partition_index"),
                _int(offset, INT64, where, f"{field}.committed_offset"),
                _int(epoch, INT32, where, f"{field}.committed_leader_epoch"),
                _str(metadata, where, f"{field}.committed_metadata", nullable=True),
            )
            if problem is not None:
                return problem
    return None


def offset_commit_violation(request: OffsetCommitRequest) -> str | None:
    where = _where("OffsetCommit", request.group_id)
    return _first(
        _group_id(where, request.group_id),
        _member_identity(request, where),
        _int(request.retention_time_ms, INT64, where, "retention_time_ms"),
        _commit_topics_violation(where, request.topics),
    )


def txn_offset_commit_violation(request: TxnOffsetCommitRequest) -> str | None:
    where = _where("TxnOffsetCommit", request.group_id)
    return _first(
        _str(request.transactional_id, where, "transactional_id"),
        _group_id(where, request.group_id),
        _int(request.producer_id, INT64, where, "producer_id"),
        _int(request.producer_epoch, INT16, where, "producer_epoch"),
        _member_identity(request, where),
        _commit_topics_violation(where, request.topics),
    )


def _partition_indexes_violation(where: str, topics: Iterable[Any]) -> str | None:
    """OffsetFetch / OffsetDelete topics: name STRING, partition indexes INT32 (neither array nullable)."""
    for ti, topic in enumerate(topics):
        _entry(topic, (OffsetFetchRequestTopic, OffsetDeleteRequestTopic), where, f"topics[{ti}]")
        problem = _first(_str(topic.name, where, f"topics[{ti}].name"),
                         _array(topic.partition_indexes, where, f"topics[{ti}] {short_repr(topic.name)} "
                                "partition_indexes"))
        if problem is not None:
            return problem
        for pi, index in enumerate(topic.partition_indexes):
            if type(index) is int and _I32_LO <= index <= _I32_HI:
                continue
            problem = _int(index, INT32, where, f"topics[{ti}] {short_repr(topic.name)} partition_indexes[{pi}]")
            if problem is not None:
                return problem
    return None


def offset_fetch_violation(request: OffsetFetchRequest) -> str | None:
    where = _where("OffsetFetch", request.group_id)
    return _first(_group_id(where, request.group_id),
                  None if request.topics is None  # nullable (v2+): every committed offset
                  else _array(request.topics, where, "topics") or _partition_indexes_violation(where, request.topics))


def offset_delete_violation(request: OffsetDeleteRequest) -> str | None:
    where = _where("OffsetDelete", request.group_id)
    return _first(_group_id(where, request.group_id), _array(request.topics, where, "topics")) or \
        _partition_indexes_violation(where, request.topics)


def transaction_marker_violation(producer_id: Any, producer_epoch: Any, partitions: Sequence[Any]) -> str | None:
    """A transaction marker (WriteTxnMarkers): producer id INT64, epoch INT16, offsets-topic partitions INT32."""
    where = f"transaction marker of producer {short_repr(producer_id)}"
    problem = _first(_int(producer_id, INT64, where, "producer_id"),
                     _int(producer_epoch, INT16, where, "producer_epoch"))
    for i, p in enumerate(partitions):
        problem = problem or _int(p, INT32, where, f"partitions[{i}]")
    return problem


# ------------------------------------------------------------------------------------ admin requests


def describe_groups_violation(request: DescribeGroupsRequest) -> str | None:
    return _array_of(request.groups, "DescribeGroups", "groups", _group_id_at)


def list_groups_violation(request: ListGroupsRequest | None) -> str | None:
    if request is None:
        return None
    return _array_of(request.states_filter, "ListGroups", "states_filter", _str)


def delete_groups_violation(request: DeleteGroupsRequest) -> str | None:
    return _array_of(request.groups_names, "DeleteGroups", "groups_names", _group_id_at)
