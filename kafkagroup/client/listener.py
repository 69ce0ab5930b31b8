"""Rebalance callbacks (Kafka's ``ConsumerRebalanceListener``) and their invocation rules (spec §6.4, §6.7, §6.10).

A listener is any object with some of ``on_partitions_revoked``, ``on_partitions_assigned``,
``on_partitions_lost`` (kafka-python's names), or plain callables passed as ``on_revoke=``, ``on_assign=``,
``on_lost=``.  As in Kafka, ``on_partitions_lost`` defaults to ``on_partitions_revoked`` when not given.

Exceptions raised by a callback do not stop the rebalance step: every remaining step and callback runs, and
the *first* exception is kept and re-raised to the application afterwards, wrapped in
:class:`RebalanceCallbackError` unless it already is a kafkagroup error (``ConsumerCoordinator.onJoinComplete``:
"User rebalance callback throws an error").
"""
from __future__ import annotations

from typing import Any, Callable, FrozenSet, Optional, Protocol

from kafkagroup.client.errors import RebalanceCallbackError   # re-exported: its old home
from kafkagroup.errors import KafkaGroupError
from kafkagroup.structs import TopicPartition

__all__ = [
    "PartitionsCallback",
    "RebalanceListener",
    "CallbackSet",
    "RebalanceCallbackError",
    "FirstError",
]

Partitions = FrozenSet[TopicPartition]
PartitionsCallback = Callable[[Partitions], Any]


class RebalanceListener(Protocol):  # pragma: no cover - typing only
    def on_partitions_revoked(self, revoked: Partitions) -> Any: ...

    def on_partitions_assigned(self, assigned: Partitions) -> Any: ...


class CallbackSet:
    """The three callbacks of one member, resolved once."""

    __slots__ = ("on_assign", "on_revoke", "on_lost")

    def __init__(
        self,
        listener: Optional[object] = None,
        *,
        on_assign: Optional[PartitionsCallback] = None,
        on_revoke: Optional[PartitionsCallback] = None,
        on_lost: Optional[PartitionsCallback] = None,
    ) -> None:
        if listener is not None:
            on_assign = on_assign or getattr(listener, "on_partitions_assigned", None)
            on_revoke = on_revoke or getattr(listener, "on_partitions_revoked", None)
            on_lost = on_lost or getattr(listener, "on_partitions_lost", None)
        self.on_assign: Optional[PartitionsCallback] = on_assign
        self.on_revoke: Optional[PartitionsCallback] = on_revoke
        # ConsumerRebalanceListener.onPartitionsLost's default implementation calls onPartitionsRevoked
        self.on_lost: Optional[PartitionsCallback] = on_lost or on_revoke


class FirstError:
    """Collects the first exception of several steps that must all run."""

    __slots__ = ("error",)

    def __init__(self) -> None:
        self.error: Optional[BaseException] = None

    def call(self, fn: Optional[PartitionsCallback], partitions: Partitions) -> None:
        if fn is None:
            return
        try:
            fn(partitions)
        except Exception as exc:  # noqa: BLE001 - user code: keep the first, run the rest
            self.keep(exc)

    def keep(self, exc: BaseException) -> None:
        if self.error is None:
            self.error = exc

    def wrapped(self) -> Optional[BaseException]:
        """The first error, wrapped in RebalanceCallbackError unless it is already a kafkagroup error."""
        exc = self.error
        if exc is None or isinstance(exc, KafkaGroupError):
            return exc
        err = RebalanceCallbackError(f"User rebalance callback throws an error: {exc!r}")
        err.__cause__ = exc
        return err
