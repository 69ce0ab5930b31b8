"""Offset commits of a member (``commitSync`` and ``OffsetCommitResponseHandler``, spec §6.9).

:class:`OffsetCommitMixin` is one part of :class:`~kafkagroup.client.member.GroupMember` and works on its state.
"""
from __future__ import annotations

from typing import Callable, Mapping, Optional

from kafkagroup.client.errors import CommitFailedError, OffsetCommitError, RebalanceInProgressError
from kafkagroup.client.generation import Generation, MemberState
from kafkagroup.messages.api import OffsetCommitRequest, OffsetCommitResponse
from kafkagroup.messages.error_codes import ErrorCode
from kafkagroup.structs import TopicPartition

__all__ = ["OffsetCommitMixin"]

_E = ErrorCode

# OffsetCommitResponseHandler: errors raised to the user as they are ...
_COMMIT_SURFACED = frozenset({
    _E.OFFSET_METADATA_TOO_LARGE, _E.INVALID_COMMIT_OFFSET_SIZE, _E.GROUP_AUTHORIZATION_FAILED,
})
# ... and errors commitSync retries after retry.backoff.ms ("just retry", or rediscover the coordinator and retry)
_COMMIT_RETRIABLE = frozenset({
    _E.COORDINATOR_LOAD_IN_PROGRESS, _E.UNKNOWN_TOPIC_OR_PARTITION,
    _E.COORDINATOR_NOT_AVAILABLE, _E.NOT_COORDINATOR, _E.REQUEST_TIMED_OUT,
})


class OffsetCommitMixin:
    """``commit_offsets`` for the current generation, with commitSync's retries."""

    def commit_offsets(
        self,
        offsets: Mapping[TopicPartition, int],
        callback: Optional[Callable[[Optional[BaseException]], None]] = None,
        *,
        timeout_ms: Optional[int] = None,
    ) -> None:
        """OffsetCommit for the current generation; ``callback(error or None)`` gets the outcome (§6.9).

        Like Kafka's ``commitSync``: retriable errors (14, 3, and 15/16/7 after which Kafka rediscovers the
        coordinator) are retried every ``retry.backoff.ms`` until ``timeout_ms`` (default
        ``default.api.timeout.ms``) has passed, then reported as a retriable :class:`OffsetCommitError`.
        Each retry checks the membership again, so a rebalance started meanwhile ends the commit with
        :class:`RebalanceInProgressError`.  Group errors: 27 -> :class:`RebalanceInProgressError` (rejoin
        requested), 25/22 -> :class:`CommitFailedError` (generation reset), 82 -> :class:`FatalMemberError`;
        12/28/29/30 and unexpected codes -> :class:`OffsetCommitError` at once.
        """
        timeout = self.config.default_api_timeout_ms if timeout_ms is None else int(timeout_ms)
        self._send_commit(dict(offsets), callback, self.clock.now_ms() + timeout)

    def _send_commit(
        self, offsets: dict[TopicPartition, int],
        callback: Optional[Callable[[Optional[BaseException]], None]], deadline_ms: int,
    ) -> None:
        if self.state is not MemberState.STABLE or self.generation.is_reset or not self.alive:
            err: BaseException = (
                RebalanceInProgressError(f"member {self.name!r}: commit during a rebalance")
                if self.state in (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE)
                else CommitFailedError(f"member {self.name!r}: not part of an active generation")
            )
            if callback:
                callback(err)
            return
        sent = self.generation
        req = OffsetCommitRequest.of(
            self.group_id, offsets, generation_id=sent.generation_id, member_id=sent.member_id,
            group_instance_id=self.group_instance_id,
        )
        self.transport.offset_commit(req, lambda r: self._handle_commit(sent, r, offsets, callback, deadline_ms))

    def _handle_commit(
        self, sent: Generation, resp: OffsetCommitResponse, offsets: dict[TopicPartition, int],
        callback: Optional[Callable[[Optional[BaseException]], None]], deadline_ms: int,
    ) -> None:
        """``OffsetCommitResponseHandler``.  Kafka stops at the first failed partition in response order; here
        the errors of all partitions are ranked instead: membership errors, then errors raised to the user,
        then unexpected ones, then retriable ones, then TOPIC_AUTHORIZATION_FAILED (Kafka collects that one
        and raises it only if nothing else failed)."""
        errors = set(resp.errors().values()) - {_E.NONE}
        outcome: Optional[BaseException] = None
        if _E.GROUP_AUTHORIZATION_FAILED in errors:
            outcome = OffsetCommitError(_E.GROUP_AUTHORIZATION_FAILED, self.name)
        elif _E.REBALANCE_IN_PROGRESS in errors:
            self._request_rejoin()
            outcome = RebalanceInProgressError(f"member {self.name!r}: commit rejected, the group is rebalancing")
        elif errors & {_E.UNKNOWN_MEMBER_ID, _E.ILLEGAL_GENERATION}:
            if self.generation != sent and self.state is MemberState.PREPARING_REBALANCE:
                outcome = RebalanceInProgressError(f"member {self.name!r}: generation changed during the commit")
            else:
                self._reset_generation(reset_member_id=_E.UNKNOWN_MEMBER_ID in errors)
                self._request_rejoin()
                outcome = CommitFailedError(
                    f"member {self.name!r}: commit failed, the member is no longer part of generation "
                    f"{sent.generation_id}"
                )
        elif _E.FENCED_INSTANCE_ID in errors:
            if self.generation == sent:
                self._fatal(_E.FENCED_INSTANCE_ID, "OffsetCommit")
                outcome = self.fatal_error
            elif self.state is MemberState.PREPARING_REBALANCE:
                outcome = RebalanceInProgressError(f"member {self.name!r}: the commit's old generation was fenced")
            else:
                outcome = CommitFailedError(f"member {self.name!r}: fenced by another instance")
        elif errors - _COMMIT_RETRIABLE - {_E.TOPIC_AUTHORIZATION_FAILED}:
            surfaced = errors & _COMMIT_SURFACED
            code = min(surfaced) if surfaced else min(errors - _COMMIT_RETRIABLE - {_E.TOPIC_AUTHORIZATION_FAILED})
            outcome = OffsetCommitError(code, self.name)
        elif errors & _COMMIT_RETRIABLE:
            code = min(errors & _COMMIT_RETRIABLE)
            if self.clock.now_ms() + self.config.retry_backoff_ms < deadline_ms:
                self.clock.call_at(self.clock.now_ms() + self.config.retry_backoff_ms,
                                   lambda: self._send_commit(offsets, callback, deadline_ms))
                return
            outcome = OffsetCommitError(code, self.name, retriable=True)
        elif errors:
            outcome = OffsetCommitError(_E.TOPIC_AUTHORIZATION_FAILED, self.name)
        if callback:
            callback(outcome)
