"""A simulated consumer-protocol member (KIP-848): heartbeats, revokes what the coordinator no longer gives it,
acknowledges, and takes new partitions only when the coordinator hands them over.

The coordinator holds every rule of a consumer group (target assignment, reconciliation, revoke before assign,
epochs, fencing: :mod:`kafkagroup.coordinator.consumer`); this member only does what Kafka's
``AsyncKafkaConsumer`` does with the answers, so that a simulation measures the real coordinator:

- it joins with ``ConsumerGroupHeartbeat`` epoch 0 (subscription, ``group.remote.assignor``,
  ``group.instance.id``, rebalance timeout = ``max.poll.interval.ms``) and then heartbeats every
  ``heartbeat_interval_ms`` the coordinator answers (``group.consumer.heartbeat.interval.ms``);
- a heartbeat reports the partitions it owns when they changed since the last heartbeat it sent (Kafka's
  client sends the field only then; absent, the coordinator takes it that nothing changed);
- an answer with an assignment is reconciled at the application's next poll (the rebalance listener runs in
  ``poll()``, as in Kafka): first ``on_revoke`` with what the answer no longer names, then ``on_assign`` with
  what it newly names; then it acknowledges at once with a heartbeat that reports what it owns (Kafka's
  ACKNOWLEDGING state) instead of waiting for the interval.  A new assignment equal to what the member owns
  (it changed and changed back before the member applied it) is acknowledged at once, without a poll: the
  coordinator may be waiting for the member to confirm it released what the intermediate assignment took away
  (Kafka's client bumps its assignment's local epoch and acknowledges; without that the coordinator would wait
  for the rebalance timeout and fence the member);  The coordinator never names a partition another member still owns (it withholds
  it until that member has acknowledged the revocation), so revoke-before-assign is the coordinator's rule and
  the ownership ledger checks it;
- FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: every owned partition is lost (``on_lost``), the member rejoins with
  epoch 0; coordinator-moving errors are retried after ``retry.backoff.ms``; anything else (e.g.
  GROUP_ID_NOT_FOUND for a non-empty classic group of the same id) is fatal, as in Kafka's client: the member
  stops, loses what it owned, and :attr:`fatal_error` says which error and message;
- ``close()``: ``on_revoke`` with everything, then a leave heartbeat (epoch -1, or -2 for a static member);
  ``crash()``: nothing (the coordinator fences it at the session timeout);
- ``stall()`` (a batch longer than ``max.poll.interval.ms``): it loses its partitions and leaves; ``resume()``
  rejoins with epoch 0.

Limits: one heartbeat in flight at a time; the member id is chosen by the member (as Kafka 4's client does:
ConsumerGroupHeartbeat v1) and is deterministic (name and incarnation) so a run is reproducible; offsets and
fetching are not modelled; subscriptions are topic names (no regex).
"""
from __future__ import annotations

from typing import Callable, Iterable, Optional
from uuid import UUID

from kafkagroup.client.config import MemberConfig
from kafkagroup.client.timers import TimerSet
from kafkagroup.client.transport import InProcessTransport
from kafkagroup.messages.clock import Clock
from kafkagroup.messages.consumer_api import (
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse, TopicPartitions,
)
from kafkagroup.messages.error_codes import ErrorCode
from kafkagroup.messages.topics import topic_id_for
from kafkagroup.structs import TopicPartition

__all__ = ["ConsumerProtocolMember", "ConsumerTransport", "RefusedMember"]

_E = ErrorCode
_REJOIN = {_E.FENCED_MEMBER_EPOCH, _E.UNKNOWN_MEMBER_ID}
_RETRY = {_E.COORDINATOR_NOT_AVAILABLE, _E.NOT_COORDINATOR, _E.COORDINATOR_LOAD_IN_PROGRESS,
          _E.REQUEST_TIMED_OUT}
PartitionsCallback = Callable[[frozenset[TopicPartition]], None]


class RefusedMember(Exception):
    """The coordinator refused the member for good (a fatal heartbeat error): code, message, time."""

    def __init__(self, name: str, code: ErrorCode, message: Optional[str], at_ms: int) -> None:
        super().__init__(f"member {name}: ConsumerGroupHeartbeat answered {code.name}"
                         + (f" ({message})" if message else ""))
        self.name, self.code, self.message, self.at_ms = name, code, message, at_ms


class ConsumerTransport(InProcessTransport):
    """The in-process transport with ConsumerGroupHeartbeat (latency each way; counted in ``requests_sent``)."""

    def consumer_group_heartbeat(self, request: ConsumerGroupHeartbeatRequest,
                                 on_response: Callable[[ConsumerGroupHeartbeatResponse], None]) -> None:
        self._send("consumer_group_heartbeat", request, on_response, parked=False)


class ConsumerProtocolMember:
    """One consumer-protocol member (module docstring).  The harness uses the same attributes as for
    :class:`~kafkagroup.client.member.GroupMember`: ``name``, ``config``, ``subscription``, ``assignment``,
    ``alive``, ``stats``, ``generation_history``, ``transport``, ``start/close/crash/stall/resume``."""

    protocol = "consumer"

    def __init__(self, transport: ConsumerTransport, *, clock: Clock, topics: Iterable[str], config: MemberConfig,
                 name: str, member_id: str, remote_assignor: Optional[str] = None,
                 at_next_poll: Optional[Callable[[Callable[[], None]], None]] = None,
                 on_assign: Optional[PartitionsCallback] = None, on_revoke: Optional[PartitionsCallback] = None,
                 on_lost: Optional[PartitionsCallback] = None,
                 on_fatal: Optional[Callable[["RefusedMember"], None]] = None) -> None:
        self.on_fatal = on_fatal
        self.transport = transport
        self.clock = clock
        self.config = config
        self.name = name
        self.member_id = member_id
        self.remote_assignor = remote_assignor
        self.subscription: frozenset[str] = frozenset(topics)
        self._at_next_poll = at_next_poll or (lambda fn: fn())
        self._on_assign, self._on_revoke, self._on_lost = on_assign, on_revoke, on_lost
        self.epoch = 0
        self.heartbeat_interval_ms = config.heartbeat_interval_ms   # until the coordinator says otherwise
        self.assignment: frozenset[TopicPartition] = frozenset()
        self._target: Optional[frozenset[TopicPartition]] = None   # last assignment received, not yet applied
        self._target_version = 0     # bumped by every answer naming another assignment than the one before
        self._acked_version = 0      # the version last applied and acknowledged
        self._reconcile_scheduled = False
        self._inflight = False
        self._heartbeat_after_inflight = False
        self._session = 0          # bumped when the member leaves on a poll timeout: older answers are ignored
        self._joined = False       # an answer accepted it at least once (only then does it send a leave)
        self._timers = TimerSet(clock)
        self._ids: dict[str, UUID] = {t: topic_id_for(t) for t in self.subscription}
        self._names: dict[UUID, str] = {tid: t for t, tid in self._ids.items()}
        self._sent_owned: Optional[frozenset[TopicPartition]] = None   # what the last heartbeat reported
        self.started = self.closed = self.crashed = self.stalled = False
        self.fatal_error: Optional[RefusedMember] = None
        self.stats = {"heartbeats_sent": 0, "rebalances": 0, "partitions_assigned": 0, "partitions_revoked": 0,
                      "partitions_lost": 0, "fenced": 0}
        #: (time, member epoch) of every reconciliation this member completed
        self.generation_history: list[tuple[int, int]] = []

    # ------------------------------------------------------------------ lifecycle
    @property
    def alive(self) -> bool:
        return self.started and not (self.closed or self.crashed or self.fatal_error is not None)

    @property
    def group_instance_id(self) -> Optional[str]:
        return self.config.group_instance_id

    def start(self) -> None:
        if self.started:
            return
        self.started = True
        self._heartbeat_now()

    def close(self) -> None:
        """Clean shutdown: revoke everything, then leave (epoch -1; -2 keeps a static member's partitions)."""
        if not self.alive:
            return
        self._release(self.assignment, self._on_revoke, "partitions_revoked")
        self._stop()
        self.closed = True
        self._send_leave()

    def crash(self) -> None:
        if not self.alive:
            return
        self._stop()
        self.crashed = True

    def stall(self) -> None:
        """The poll timer expired (a batch exceeded max.poll.interval.ms): lose everything and leave."""
        if not self.alive or self.stalled:
            return
        self.stalled = True
        self._release(self.assignment, self._on_lost, "partitions_lost")
        self._stop()
        self._send_leave()
        self.epoch = 0
        self._session += 1
        self._inflight = False

    def resume(self) -> None:
        if not self.started or self.closed or self.crashed or self.fatal_error is not None or not self.stalled:
            return
        self.stalled = False
        self._heartbeat_now()

    def refresh_metadata(self) -> None:
        """Nothing to do: the coordinator watches the topics and bumps the group epoch itself."""

    @property
    def rejoin_pending(self) -> bool:
        return False

    def ready(self, assignment_epoch: int) -> bool:
        """Reconciled with the coordinator's target at ``assignment_epoch`` as far as this member knows."""
        return (self.alive and not self.stalled and self.epoch == assignment_epoch and not self._reconcile_scheduled
                and self._acked_version == self._target_version
                and (self._target is None or self._target == self.assignment))

    def _stop(self) -> None:
        self._timers.cancel_all()
        self._target = None
        self._acked_version = self._target_version
        self._reconcile_scheduled = False

    def _send_leave(self) -> None:
        if not self._joined:
            return        # never in the group: nothing to leave (Kafka sends no leave from UNSUBSCRIBED)
        epoch = -2 if self.group_instance_id is not None else -1
        self.stats["heartbeats_sent"] += 1
        self.transport.consumer_group_heartbeat(ConsumerGroupHeartbeatRequest(
            self.config.group_id, self.member_id, epoch, instance_id=self.group_instance_id), lambda resp: None)

    # ------------------------------------------------------------------ heartbeats
    def _heartbeat_now(self) -> None:
        if self._inflight:
            self._heartbeat_after_inflight = True
            return
        self._timers.cancel("heartbeat")
        self._send_heartbeat()

    def _send_heartbeat(self) -> None:
        if not self.alive or self.stalled:
            return
        joining = self.epoch == 0
        cfg = self.config
        topic_partitions: Optional[list[TopicPartitions]] = []
        if joining:
            self._sent_owned = frozenset()
        elif self._sent_owned is self.assignment:   # the same object: nothing changed since
            topic_partitions = None          # unchanged since the last heartbeat: not sent
        else:
            owned: dict[str, list[int]] = {}
            for tp in self.assignment:
                owned.setdefault(tp.topic, []).append(tp.partition)
            topic_partitions = [TopicPartitions(self._ids[t], sorted(ps)) for t, ps in sorted(owned.items())]
            self._sent_owned = self.assignment
        req = ConsumerGroupHeartbeatRequest(
            cfg.group_id, self.member_id, self.epoch, instance_id=cfg.group_instance_id,
            rack_id=cfg.client_rack if joining else None,
            rebalance_timeout_ms=cfg.max_poll_interval_ms if joining else -1,
            subscribed_topic_names=sorted(self.subscription) if joining else None,
            server_assignor=self.remote_assignor if joining else None,
            topic_partitions=topic_partitions, client_id=cfg.client_id)
        self._inflight = True
        self.stats["heartbeats_sent"] += 1
        session = self._session
        self.transport.consumer_group_heartbeat(req, lambda resp: self._on_response(resp, session))

    def _on_response(self, resp: ConsumerGroupHeartbeatResponse, session: int) -> None:
        if session != self._session:
            return        # sent before the member left (poll timeout): that membership is gone
        self._inflight = False
        if not self.alive or self.stalled:
            return
        code = ErrorCode(resp.error_code)
        if code is _E.NONE:
            self._joined = True
            self.epoch = resp.member_epoch
            if resp.heartbeat_interval_ms > 0:
                self.heartbeat_interval_ms = resp.heartbeat_interval_ms
            if resp.assignment is not None:
                target = frozenset(TopicPartition(self._topic_name(tp.topic_id), p)
                                   for tp in resp.assignment for p in tp.partitions)
                if target != self._target:
                    self._target = target
                    self._target_version += 1
                if target == self.assignment:
                    if self._acked_version != self._target_version:   # changed and changed back: acknowledge
                        self._acked_version = self._target_version
                        self._sent_owned = None
                        self._heartbeat_after_inflight = True
                elif not self._reconcile_scheduled:
                    self._reconcile_scheduled = True
                    self._at_next_poll(self._reconcile)
        elif code in _REJOIN:
            # fenced: everything owned is lost; rejoin at once with epoch 0 (same member id, as Kafka 4)
            self.stats["fenced"] += 1
            self._release(self.assignment, self._on_lost, "partitions_lost")
            self._target = None
            self._acked_version = self._target_version
            self.epoch = 0
            self._heartbeat_after_inflight = True
        elif code in _RETRY:
            self._sent_owned = None          # the coordinator may not have seen it: report again
            self._timers.arm("heartbeat", self.config.retry_backoff_ms, self._timer_heartbeat)
            return
        else:
            self.fatal_error = RefusedMember(self.name, code, resp.error_message, self.clock.now_ms())
            self._stop()
            self._release(self.assignment, self._on_lost, "partitions_lost")
            if self.on_fatal is not None:
                self.on_fatal(self.fatal_error)
            return
        if self._heartbeat_after_inflight:
            self._heartbeat_after_inflight = False
            self._send_heartbeat()
        else:
            self._timers.arm("heartbeat", self.heartbeat_interval_ms, self._timer_heartbeat)

    def _timer_heartbeat(self) -> None:
        self._timers.fired("heartbeat")
        self._heartbeat_now()

    def _topic_name(self, topic_id: UUID) -> str:
        name = self._names.get(topic_id)   # the member's metadata: its topics' ids (uuid5 of the name)
        if name is None:
            raise KeyError(f"member {self.name}: the coordinator assigned topic id {topic_id}, which is not one "
                           "of the subscribed topics")
        return name

    # ------------------------------------------------------------------ reconciliation
    def _reconcile(self) -> None:
        """At a poll: revoke what the last answer no longer names, assign what it newly names, acknowledge."""
        self._reconcile_scheduled = False
        target = self._target
        if not self.alive or self.stalled or target is None:
            return
        revoked = self.assignment - target
        added = target - self.assignment
        version, self._acked_version = self._acked_version, self._target_version
        if not revoked and not added:
            if version != self._target_version:   # changed and changed back meanwhile: acknowledge
                self._sent_owned = None
                self._heartbeat_now()
            return
        self._release(revoked, self._on_revoke, "partitions_revoked")
        if added:
            self.assignment = target
            self.stats["partitions_assigned"] += len(added)
            if self._on_assign is not None:
                self._on_assign(frozenset(added))
        self.stats["rebalances"] += 1
        self.generation_history.append((self.clock.now_ms(), self.epoch))
        self._heartbeat_now()      # acknowledge at once (Kafka's ACKNOWLEDGING)

    def _release(self, partitions: frozenset[TopicPartition], callback: Optional[PartitionsCallback],
                 stat: str) -> None:
        if not partitions:
            return
        self.assignment = self.assignment - partitions
        self.stats[stat] += len(partitions)
        if callback is not None:
            callback(frozenset(partitions))

    def __repr__(self) -> str:
        return f"ConsumerProtocolMember({self.name!r}, epoch={self.epoch}, owns={len(self.assignment)})"
