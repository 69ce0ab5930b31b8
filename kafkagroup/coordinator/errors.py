"""Kafka's numeric error codes as the classic group coordinator answers them (spec §0.1, ``Errors.java``).

The coordinator never raises for a protocol error (DESIGN.md convention 4): every handler answers with one
of these codes.  Two exception types remain for the few places where Kafka itself throws:

* :class:`IllegalGroupStateError` -- Kafka's ``IllegalStateException`` (an illegal state transition,
  ``selectProtocol`` on an empty group, a pending member id re-used with a ``group.instance.id``).  The
  request entry points turn it into ``UNKNOWN_SERVER_ERROR`` (-1), as Kafka's generic request handler does.
* :class:`StoreWriteError` -- a failed append of group metadata or offsets, carrying the Kafka error code
  of the failed append (e.g. ``MESSAGE_TOO_LARGE``); the coordinator maps it to the response code with
  :func:`group_write_error` (spec §2.9) or :func:`offset_commit_write_error` (spec §2.6 step 9).
"""
from __future__ import annotations

from enum import IntEnum

from kafkagroup.errors import KafkaGroupError

__all__ = [
    "ErrorCode",
    "IllegalGroupStateError",
    "StoreWriteError",
    "group_write_error",
    "offset_commit_write_error",
]


class ErrorCode(IntEnum):
    """Kafka's error codes (``org.apache.kafka.common.protocol.Errors``), the subset the coordinator uses."""

    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    MESSAGE_TOO_LARGE = 10
    OFFSET_METADATA_TOO_LARGE = 12
    NETWORK_EXCEPTION = 13
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    TOPIC_AUTHORIZATION_FAILED = 29
    GROUP_AUTHORIZATION_FAILED = 30
    UNSUPPORTED_VERSION = 35
    INVALID_REQUEST = 42
    INVALID_PRODUCER_EPOCH = 47
    KAFKA_STORAGE_ERROR = 56
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    MEMBER_ID_REQUIRED = 79
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82
    GROUP_SUBSCRIBED_TO_TOPIC = 86
    UNSTABLE_OFFSET_COMMIT = 88


class IllegalGroupStateError(KafkaGroupError, RuntimeError):
    """Kafka's ``IllegalStateException`` inside the coordinator (answered as UNKNOWN_SERVER_ERROR)."""


class StoreWriteError(KafkaGroupError, OSError):
    """A group-metadata or offset write failed; ``code`` is the Kafka error of the failed append."""

    def __init__(self, code: ErrorCode, message: str = "") -> None:
        self.code = ErrorCode(code)
        super().__init__(message or f"store write failed with {self.code.name} ({int(self.code)})")


_E = ErrorCode

# spec §2.9 (Scala GroupMetadataManager.storeGroup); Java differs only for REQUEST_TIMED_OUT (15, §8 #8).
_GROUP_WRITE_MAP = {
    _E.UNKNOWN_TOPIC_OR_PARTITION: _E.COORDINATOR_NOT_AVAILABLE,
    _E.NOT_ENOUGH_REPLICAS: _E.COORDINATOR_NOT_AVAILABLE,
    _E.NOT_ENOUGH_REPLICAS_AFTER_APPEND: _E.COORDINATOR_NOT_AVAILABLE,
    _E.NOT_LEADER_OR_FOLLOWER: _E.NOT_COORDINATOR,
    _E.KAFKA_STORAGE_ERROR: _E.NOT_COORDINATOR,
    _E.REQUEST_TIMED_OUT: _E.REBALANCE_IN_PROGRESS,
    _E.MESSAGE_TOO_LARGE: _E.UNKNOWN_SERVER_ERROR,
    _E.RECORD_LIST_TOO_LARGE: _E.UNKNOWN_SERVER_ERROR,
    _E.INVALID_FETCH_SIZE: _E.UNKNOWN_SERVER_ERROR,
}

# spec §2.6 step 9 (Scala GroupMetadataManager.storeOffsets / maybeConvertOffsetCommitError).
_OFFSET_WRITE_MAP = {
    _E.UNKNOWN_TOPIC_OR_PARTITION: _E.COORDINATOR_NOT_AVAILABLE,
    _E.NOT_ENOUGH_REPLICAS: _E.COORDINATOR_NOT_AVAILABLE,
    _E.NOT_ENOUGH_REPLICAS_AFTER_APPEND: _E.COORDINATOR_NOT_AVAILABLE,
    _E.NOT_LEADER_OR_FOLLOWER: _E.NOT_COORDINATOR,
    _E.KAFKA_STORAGE_ERROR: _E.NOT_COORDINATOR,
    _E.MESSAGE_TOO_LARGE: _E.INVALID_COMMIT_OFFSET_SIZE,
    _E.RECORD_LIST_TOO_LARGE: _E.INVALID_COMMIT_OFFSET_SIZE,
    _E.INVALID_FETCH_SIZE: _E.INVALID_COMMIT_OFFSET_SIZE,
    _E.NETWORK_EXCEPTION: _E.COORDINATOR_LOAD_IN_PROGRESS,
}


def group_write_error(code: ErrorCode) -> ErrorCode:
    """Response code for a failed group-metadata append (§2.9); codes not listed pass through unchanged."""
    return _GROUP_WRITE_MAP.get(ErrorCode(code), ErrorCode(code))


def offset_commit_write_error(code: ErrorCode) -> ErrorCode:
    """Per-partition response code for a failed offset append (§2.6 step 9)."""
    return _OFFSET_WRITE_MAP.get(ErrorCode(code), ErrorCode(code))
