"""The shared message layer's exceptions (one errors module for the layer).

Coordinator answers never raise: a failed request is a response carrying one of Kafka's numeric codes
(:class:`~kafkagroup.messages.error_codes.ErrorCode`).  The one exception here is about reading a response
too early.
"""
from __future__ import annotations

from kafkagroup.errors import KafkaGroupError

__all__ = ["NotReadyError"]


class NotReadyError(KafkaGroupError, RuntimeError):
    """``Deferred.result()`` was called before the response was produced (or after it was superseded)."""
