"""Error types of the base layer, and the project's root :class:`KafkaGroupError`.

Every layer keeps its exceptions in one errors module (DESIGN.md convention 4), each deriving from
:class:`KafkaGroupError`:

=================  ===========================================================================================
layer              module and exceptions
=================  ===========================================================================================
base (this one)    :class:`InvalidGroupError` -- bad input to an assignor (unknown topic, out-of-range
                   partition, duplicate member, inconsistent arrays); a ``ValueError`` whose message names the
                   member, topic or partition.  :class:`GroupFileError` -- its kind for a group file.
                   :class:`ProtocolError` -- malformed Kafka wire bytes; the message names the field and byte
                   offset.  :class:`InvariantError` -- kafkagroup broke one of its own invariants (a bug, never
                   bad input); the native engine's ``std::logic_error`` arrives as this.
messages           :mod:`kafkagroup.messages.errors` (a response read before it exists)
coordinator        :mod:`kafkagroup.coordinator.errors` (Kafka's IllegalStateException, store failures)
client             :mod:`kafkagroup.client.errors` (fatal answers, commit outcomes, callback errors)
server             :mod:`kafkagroup.server.errors` (unparsable frames, malformed record batches)
sim                :mod:`kafkagroup.sim.errors` (bad scenarios, a group that never settles)
=================  ===========================================================================================

The coordinator never raises for a protocol error: it answers with Kafka's numeric error codes.
"""
from __future__ import annotations


class KafkaGroupError(Exception):
    """Base class of every error kafkagroup raises on purpose."""


class InvalidGroupError(KafkaGroupError, ValueError):
    """A group description that cannot be assigned as given."""


class ProtocolError(KafkaGroupError, ValueError):
    """Bytes that are not a valid Kafka ConsumerProtocol / assignor user-data message."""


class GroupFileError(InvalidGroupError):
    """A group file that cannot be assigned as written (the message names the member, topic or key)."""


class InvariantError(KafkaGroupError, RuntimeError):
    """An internal invariant does not hold: a defect in kafkagroup, please report it."""
