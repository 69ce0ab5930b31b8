"""The server's exceptions (one errors module for the layer).

Neither reaches a client as a Python error: a :class:`FrameError` closes the connection (as Kafka closes it on
bytes it cannot parse), a :class:`BatchError` becomes the Produce answer's error code for that partition.

- :class:`FrameError` -- bytes that are not a request this server can parse; the message names the byte offset;
- :class:`BatchError` -- produced bytes that are not well-formed v2 record batches; ``code`` is Kafka's error.
"""
from __future__ import annotations

from kafkagroup.errors import KafkaGroupError

__all__ = ["FrameError", "BatchError"]


class FrameError(KafkaGroupError):
    """Bytes that are not a request this server can parse; the connection is closed with this reason."""


class BatchError(KafkaGroupError, ValueError):
    """Produced bytes that are not well-formed v2 record batches; ``code`` is the Kafka error to answer."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
