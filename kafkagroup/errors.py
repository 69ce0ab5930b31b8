"""Error types. One channel per layer (DESIGN.md convention 4).

- :class:`InvalidGroupError` -- bad input to an assignor (unknown topic, out-of-range partition, duplicate
  member, inconsistent arrays). A ``ValueError``; the message names the member, topic or partition.
- :class:`ProtocolError` -- malformed Kafka wire bytes; the message names the field and byte offset.
- :class:`InvariantError` -- kafkagroup broke one of its own invariants (a bug, never bad input); the
  native engine's ``std::logic_error`` arrives as this (``pyext/_core.cpp`` translates it).

The coordinator never raises for a protocol error: it answers with Kafka's numeric error codes.
"""
from __future__ import annotations


class KafkaGroupError(Exception):
    """Base class of every error kafkagroup raises on purpose."""


class InvalidGroupError(KafkaGroupError, ValueError):
    """A group description that cannot be assigned as given."""


class ProtocolError(KafkaGroupError, ValueError):
    """Bytes that are not a valid Kafka ConsumerProtocol / assignor user-data message."""


class InvariantError(KafkaGroupError, RuntimeError):
    """An internal invariant does not hold: a defect in kafkagroup, please report it."""
