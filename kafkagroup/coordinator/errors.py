"""The coordinator's exceptions and the error-code maps of failed store writes.

Kafka's numeric codes themselves (:class:`ErrorCode`) live in the shared message layer
(:mod:`kafkagroup.messages.error_codes`), below both the coordinator and the client; they are re-exported
here for the coordinator's modules.  The coordinator never raises for a protocol error (DESIGN.md convention
4): every handler answers with one of these codes.  Two exception types remain for the few places where Kafka itself throws:

* :class:`IllegalGroupStateError` -- Kafka's ``IllegalStateException`` (an illegal state transition,
  ``selectProtocol`` on an empty group, a pending member id re-used with a ``group.instance.id``).  The
  request entry points turn it into ``UNKNOWN_SERVER_ERROR`` (-1), as Kafka's generic request handler does.
* :class:`StoreWriteError` -- a failed append of group metadata or offsets, carrying the Kafka error code
  of the failed append (e.g. ``MESSAGE_TOO_LARGE``); the coordinator maps it to the response code with
  :func:`group_write_error` (spec §2.9) or :func:`offset_commit_write_error` (spec §2.6 step 9).
* :class:`StoreError` -- the store file cannot be opened or read: read-only, not an SQLite database,
  damaged pages (refused at open by an integrity check), a newer schema.  The message names the file.  A
  coordinator cannot serve a store it cannot trust, so this is raised, not answered; a store written by a
  newer release is refused with its subclass :class:`NewerSchemaError` (also a ``ValueError``).
"""
from __future__ import annotations

from kafkagroup.errors import KafkaGroupError
from kafkagroup.messages.error_codes import ErrorCode

__all__ = [
    "IllegalGroupStateError",
    "StoreError",
    "NewerSchemaError",
    "StoreWriteError",
    "group_write_error",
    "offset_commit_write_error",
]


class IllegalGroupStateError(KafkaGroupError, RuntimeError):
    """Kafka's ``IllegalStateException`` inside the coordinator (answered as UNKNOWN_SERVER_ERROR)."""


class StoreError(KafkaGroupError, OSError):
    """The group store file cannot be opened or read (the message names the file and the reason)."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        super().__init__(f"group store {path}: {message}")


class NewerSchemaError(StoreError, ValueError):
    """The file was written by a newer release (a ValueError, as this refusal always was)."""


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
