"""Every exception the member side (``kafkagroup.client``) raises of its own, in one place.

All derive from :class:`kafkagroup.errors.KafkaGroupError` (the project's base), so ``except KafkaGroupError``
catches them alongside the shared layer's errors:

- :class:`FatalMemberError` -- a coordinator answer Kafka's consumer treats as fatal; the member stops and
  reports its partitions lost at once;
- :class:`UnexpectedCoordinatorError` -- a JoinGroup/SyncGroup error without a specific reaction; the member rejoins;
- :class:`CommitFailedError`, :class:`RebalanceInProgressError`, :class:`OffsetCommitError` -- offset commit outcomes;
- :class:`RebalanceCallbackError` -- a user rebalance callback raised (``__cause__`` is the original);
- :class:`CooperativeAssignmentViolation` -- the leader's assignor broke the COOPERATIVE protocol's rule.
"""
from __future__ import annotations

from kafkagroup.errors import InvariantError, KafkaGroupError
from kafkagroup.messages.error_codes import ErrorCode

__all__ = [
    "FatalMemberError",
    "UnexpectedCoordinatorError",
    "CommitFailedError",
    "RebalanceInProgressError",
    "OffsetCommitError",
    "RebalanceCallbackError",
    "CooperativeAssignmentViolation",
]


class FatalMemberError(KafkaGroupError, RuntimeError):
    """The coordinator answered with an error Kafka's consumer treats as fatal; ``code`` is the error."""

    def __init__(self, code: ErrorCode, api: str, member: str) -> None:
        self.code = ErrorCode(code)
        self.api = api
        super().__init__(f"member {member!r}: {api} failed with {self.code.name} ({int(self.code)}), fatal")


class UnexpectedCoordinatorError(KafkaGroupError, RuntimeError):
    """Kafka's ``KafkaException("Unexpected error in join group response ...")``: a JoinGroup/SyncGroup error the
    consumer has no specific reaction for (e.g. UNKNOWN_SERVER_ERROR after a failed group-metadata write, §2.9).
    Raised once from :meth:`GroupMember.poll`; not fatal: the member rejoins after ``retry.backoff.ms``."""

    def __init__(self, code: ErrorCode, api: str, member: str) -> None:
        self.code = ErrorCode(code)
        self.api = api
        super().__init__(
            f"member {member!r}: unexpected error in {api} response: {self.code.name} ({int(self.code)}); "
            f"the member rejoins"
        )


class CommitFailedError(KafkaGroupError, RuntimeError):
    """Kafka's CommitFailedException: the member is no longer part of the generation it committed for."""


class RebalanceInProgressError(KafkaGroupError, RuntimeError):
    """Kafka's RebalanceInProgressException for a commit: rejoin, then commit again."""


class OffsetCommitError(KafkaGroupError, RuntimeError):
    """An OffsetCommit error other than the group-membership ones: ``code`` is the error; ``retriable`` says
    whether it was a retriable error that kept failing until the commit's timeout (Kafka's TimeoutException
    of commitSync) or one that is raised to the user at once (OFFSET_METADATA_TOO_LARGE,
    INVALID_COMMIT_OFFSET_SIZE, authorization failures, "Unexpected error in commit")."""

    def __init__(self, code: ErrorCode, member: str, *, retriable: bool = False) -> None:
        self.code = ErrorCode(code)
        self.retriable = retriable
        what = "kept failing until the commit timed out" if retriable else "is not retriable"
        super().__init__(f"member {member!r}: offset commit failed with {self.code.name} ({int(self.code)}), {what}")


class RebalanceCallbackError(KafkaGroupError, RuntimeError):
    """A user rebalance callback raised; ``__cause__`` is the original exception."""


class CooperativeAssignmentViolation(InvariantError):
    """Kafka's IllegalStateException "Assignor supporting the COOPERATIVE protocol violates its requirements"."""
