"""One real Python Kafka consumer (confluent-kafka, kafka-python or aiokafka), run as its own process and
followed by a test through JSON lines on stdout: the same events, in the same shape, as
tests/server/java/GroupConsumer.java prints for Apache Kafka's Java consumer.

    python tests/server/consumer_driver.py client=confluent bootstrap=127.0.0.1:9092 group=g topics=t0 \
        strategy=cooperative-sticky session.timeout.ms=6000 heartbeat.interval.ms=500 group.instance.id=a

Keys: client (confluent | kafka-python | aiokafka), bootstrap, group, topics (comma list), strategy (range |
roundrobin | sticky | cooperative-sticky, or for kafka-python kafkagroup-range / kafkagroup-cooperative-sticky:
kafkagroup's own assignors from kafkagroup.compat.kafka_python; for aiokafka kafkagroup-range / -roundrobin /
-sticky from kafkagroup.compat.aiokafka), commit (sync | none), commit.delay.ms (confluent: wait that long
between reading records and committing them, a window in which a test can freeze the process), max.records,
idle.exit.ms, and the Kafka configs session.timeout.ms, heartbeat.interval.ms, group.instance.id,
client.id, auto.offset.reset, max.poll.interval.ms, metadata.max.age.ms (and for confluent
topic.metadata.refresh.interval.ms) (spelled as Kafka spells them; mapped to each client's
own names).

Events: started, assigned / revoked / lost (partitions as [[topic, partition], ...]; under cooperative
rebalancing only the partitions added or removed, as each client's callbacks report them), records
([[topic, partition, offset, key], ...]), committed ([[topic, partition, next offset], ...]),
commit_failed, error, closed. The process stops when stdin reaches end of file or reads "stop".
hold=true: import the client, print "holding", and start the consumer only when stdin reads "go" (a restart
that does not wait for an interpreter start-up).  confluent: stdin "subscribe t1,t2" replaces the subscription
(then prints "subscribed").
"""
from __future__ import annotations

import asyncio
import json
import queue
import sys
import threading
import time
from typing import Any, Callable, Iterable

KAFKA_KEYS = ("session.timeout.ms", "heartbeat.interval.ms", "group.instance.id", "client.id",
              "auto.offset.reset", "max.poll.interval.ms", "metadata.max.age.ms", "group.protocol",
              "group.remote.assignor")
# librdkafka's own: how often it refreshes the metadata of the topics it uses (its metadata.max.age.ms only
# bounds how long cached metadata is trusted)
LIBRDKAFKA_KEYS = ("topic.metadata.refresh.interval.ms",)
_OUT = threading.Lock()
# stdin commands for a running consumer (today: "subscribe t1,t2"), taken by the confluent loop
COMMANDS: "queue.Queue[str]" = queue.Queue()


def emit(event: str, **fields: Any) -> None:
    # "wall": when the client printed it (epoch seconds), so that a test orders the events of several processes
    # as they happened, not as its pipe readers happened to read them
    line = json.dumps({"event": event, "wall": time.time(), **fields}, separators=(",", ":"))
    with _OUT:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def tp_list(tps: Iterable[Any]) -> list[list[Any]]:
    return sorted([tp.topic, tp.partition] for tp in tps)


def watch_stdin(stop: threading.Event, go: threading.Event) -> None:
    def run() -> None:
        for line in sys.stdin:
            if line.strip() == "go":
                go.set()
            elif line.startswith("subscribe "):
                COMMANDS.put(line.strip())
            elif line.strip() == "stop":
                break
        stop.set()
        go.set()
    threading.Thread(target=run, daemon=True, name="stdin-watch").start()


class Progress:
    """Counts consumed records for max.records / idle.exit.ms."""

    def __init__(self, opts: dict[str, str]) -> None:
        self.max_records = int(opts.get("max.records", "0"))
        self.idle_exit_s = int(opts.get("idle.exit.ms", "0")) / 1000
        self.consumed = 0
        self.last_record_at = 0.0

    def saw(self, n: int) -> None:
        self.consumed += n
        self.last_record_at = time.monotonic()

    def done(self) -> bool:
        if self.max_records and self.consumed >= self.max_records:
            return True
        return bool(self.idle_exit_s and self.consumed
                    and time.monotonic() - self.last_record_at >= self.idle_exit_s)


def key_text(key: bytes | None) -> str | None:
    return None if key is None else key.decode("utf-8", "replace")


def take_batches(batches: dict[Any, list[Any]], progress: Progress) -> dict[Any, int]:
    """One poll of kafka-python or aiokafka ({partition: records}): emits the records, counts them, and
    returns the offset to commit for each partition read (empty when the poll returned nothing)."""
    records = [[r.topic, r.partition, r.offset, key_text(r.key)] for rs in batches.values() for r in rs]
    if records:
        emit("records", records=records)
        progress.saw(len(records))
    return {tp: rs[-1].offset + 1 for tp, rs in batches.items() if rs}


def run_confluent(opts: dict[str, str], stop: threading.Event) -> None:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    config: dict[str, Any] = {
        "bootstrap.servers": opts["bootstrap"], "group.id": opts["group"],
        "enable.auto.commit": False, "auto.offset.reset": "earliest",
        "error_cb": lambda err: emit("error", error=str(err)),
    }
    if opts.get("group.protocol", "classic") == "classic":    # KIP-848 members are assigned by the coordinator
        config["partition.assignment.strategy"] = opts.get("strategy", "range")
    config.update({k: opts[k] for k in KAFKA_KEYS + LIBRDKAFKA_KEYS if k in opts})
    consumer = Consumer(config)

    def on_assign(c: Any, tps: list[Any]) -> None:
        emit("assigned", partitions=tp_list(tps), generation=None, member=c.memberid())

    def on_revoke(c: Any, tps: list[Any]) -> None:
        emit("revoked", partitions=tp_list(tps))

    def on_lost(c: Any, tps: list[Any]) -> None:
        emit("lost", partitions=tp_list(tps))

    consumer.subscribe(opts["topics"].split(","), on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    emit("started")
    progress = Progress(opts)
    try:
        while not stop.is_set() and not progress.done():
            while not COMMANDS.empty():
                topics = COMMANDS.get().split(" ", 1)[1].split(",")
                consumer.subscribe(topics, on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
                emit("subscribed", topics=topics)
            messages = consumer.consume(num_messages=500, timeout=0.1)
            records = []
            for m in messages:
                if m.error():
                    emit("error", error=str(m.error()))
                    continue
                records.append([m.topic(), m.partition(), m.offset(), key_text(m.key())])
            if not records:
                continue
            emit("records", records=records)
            progress.saw(len(records))
            if opts.get("commit", "sync") != "none":
                time.sleep(int(opts.get("commit.delay.ms", "0")) / 1000)
                nxt: dict[tuple[str, int], int] = {}
                for t, p, o, _ in records:
                    nxt[(t, p)] = max(nxt.get((t, p), -1), o + 1)
                try:
                    consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in sorted(nxt.items())],
                                    asynchronous=False)
                    emit("committed", offsets=[[t, p, o] for (t, p), o in sorted(nxt.items())])
                except KafkaException as e:
                    emit("commit_failed", error=str(e))
    finally:
        consumer.close()
        emit("closed")


def _kafka_python_strategy(name: str) -> list[Any]:
    if name.startswith("kafkagroup-"):
        from kafkagroup.compat import kafka_python as kg
        return [{"range": kg.RangeAssignor, "roundrobin": kg.RoundRobinAssignor, "sticky": kg.StickyAssignor,
                 "cooperative-sticky": kg.CooperativeStickyAssignor}[name[len("kafkagroup-"):]]]
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor
    return [{"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
             "sticky": StickyPartitionAssignor, "cooperative-sticky": CooperativeStickyAssignor}[name]]


def _python_names(opts: dict[str, str]) -> dict[str, Any]:
    """Kafka's dotted config keys -> kafka-python / aiokafka keyword arguments."""
    out: dict[str, Any] = {}
    for key in KAFKA_KEYS:
        if key in opts:
            value: Any = opts[key]
            if key.endswith(".ms"):
                value = int(value)
            out[key.replace(".", "_")] = value
    out.setdefault("auto_offset_reset", "earliest")
    return out


def _kafka_python_finish_pending_join() -> None:
    """Work around a kafka-python 3.0.12 defect that leaves a group leader out of its group for good.

    ``poll(timeout_ms=100)`` gives up while a JoinGroup -> SyncGroup round is in flight (a parked JoinGroup
    outlasts it); kafka-python keeps that round (``BaseCoordinator._join_task``) for a later poll, which
    finishes it -- sets the member STABLE, re-enables its heartbeats, applies the assignment -- but only if
    ``need_rejoin()`` is still true then.  When the round was started by ``ConsumerCoordinator.need_rejoin``'s
    metadata check (the leader's previous assignment ran before it had the topic's partitions) and
    ``rejoin_needed`` is already false, the leader's own ``_perform_assignment`` makes that check false as
    soon as the JoinGroup answer arrives; if that happens before the next poll looks, no poll ever finishes
    the round: the member stays REBALANCING, heartbeats off, no partitions; the coordinator expires its
    session (as Kafka's broker does) and the others share everything.  Under load the gap between two polls
    is wide enough to hit.  Apache Kafka's Java client has no such gap: its ``rejoinNeededOrPending()`` is
    also true while a join future is pending; this does the same.  Limit: a round that completes between
    two polls is still dropped by kafka-python (it starts a new one: a spurious but harmless rebalance)."""
    from kafka.coordinator.consumer import ConsumerCoordinator

    shipped = ConsumerCoordinator.need_rejoin
    if getattr(shipped, "finishes_pending_join", False):
        return

    def need_rejoin(self: Any) -> bool:
        return getattr(self, "_join_task", None) is not None or shipped(self)

    need_rejoin.finishes_pending_join = True  # type: ignore[attr-defined]
    need_rejoin.shipped = shipped  # type: ignore[attr-defined]
    ConsumerCoordinator.need_rejoin = need_rejoin  # type: ignore[method-assign]


def run_kafka_python(opts: dict[str, str], stop: threading.Event) -> None:
    from kafka import KafkaConsumer, OffsetAndMetadata, TopicPartition
    from kafka.consumer.subscription_state import ConsumerRebalanceListener

    _kafka_python_finish_pending_join()

    consumer = KafkaConsumer(bootstrap_servers=opts["bootstrap"], group_id=opts["group"],
                             enable_auto_commit=False,
                             partition_assignment_strategy=_kafka_python_strategy(opts.get("strategy", "range")),
                             **_python_names(opts))

    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked: Any) -> None:
            emit("revoked", partitions=tp_list(revoked))

        def on_partitions_assigned(self, assigned: Any) -> None:
            generation = getattr(consumer._coordinator, "_generation", None)  # private: for the test's eyes only
            emit("assigned", partitions=tp_list(assigned), generation=getattr(generation, "generation_id", None),
                 member=getattr(generation, "member_id", None))

        def on_partitions_lost(self, lost: Any) -> None:
            emit("lost", partitions=tp_list(lost))

    consumer.subscribe(topics=opts["topics"].split(","), listener=Listener())
    emit("started")
    progress = Progress(opts)
    try:
        while not stop.is_set() and not progress.done():
            nxt = take_batches(consumer.poll(timeout_ms=100), progress)
            if not nxt or opts.get("commit", "sync") == "none":
                continue
            try:
                consumer.commit({TopicPartition(tp.topic, tp.partition): OffsetAndMetadata(o, "", -1)
                                 for tp, o in nxt.items()})
                emit("committed", offsets=sorted([tp.topic, tp.partition, o] for tp, o in nxt.items()))
            except Exception as e:  # a commit refused by the group (rebalance, fenced): report, go on
                emit("commit_failed", error=repr(e))
    finally:
        consumer.close()
        emit("closed")


def run_aiokafka(opts: dict[str, str], stop: threading.Event) -> None:
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener
    from aiokafka.coordinator.assignors.range import RangePartitionAssignor
    from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from aiokafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    if opts.get("strategy", "").startswith("kafkagroup-"):       # kafkagroup's drop-in assignors
        from kafkagroup.compat import aiokafka as drop_in
        strategy = {"kafkagroup-range": drop_in.RangeAssignor, "kafkagroup-roundrobin": drop_in.RoundRobinAssignor,
                    "kafkagroup-sticky": drop_in.StickyAssignor}[opts["strategy"]]
    else:
        strategy = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
                    "sticky": StickyPartitionAssignor}[opts.get("strategy", "range")]

    class Listener(ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked: Any) -> None:
            emit("revoked", partitions=tp_list(revoked))

        async def on_partitions_assigned(self, assigned: Any) -> None:
            coordinator = consumer._coordinator  # private: for the test's eyes only
            emit("assigned", partitions=tp_list(assigned), generation=getattr(coordinator, "generation", None),
                 member=getattr(coordinator, "member_id", None))

    consumer: Any = None

    async def main() -> None:
        nonlocal consumer
        consumer = AIOKafkaConsumer(bootstrap_servers=opts["bootstrap"], group_id=opts["group"],
                                    enable_auto_commit=False, partition_assignment_strategy=(strategy,),
                                    **_python_names(opts))
        await consumer.start()
        consumer.subscribe(topics=opts["topics"].split(","), listener=Listener())
        emit("started")
        progress = Progress(opts)
        try:
            while not stop.is_set() and not progress.done():
                nxt = take_batches(await consumer.getmany(timeout_ms=100), progress)
                if not nxt or opts.get("commit", "sync") == "none":
                    continue
                try:
                    await consumer.commit(nxt)
                    emit("committed", offsets=sorted([tp.topic, tp.partition, o] for tp, o in nxt.items()))
                except Exception as e:  # a commit refused by the group: report, go on
                    emit("commit_failed", error=repr(e))
        finally:
            await consumer.stop()
            emit("closed")

    asyncio.run(main())


CLIENTS: dict[str, Callable[[dict[str, str], threading.Event], None]] = {
    "confluent": run_confluent, "kafka-python": run_kafka_python, "aiokafka": run_aiokafka}


def main(argv: list[str]) -> int:
    opts = {}
    for arg in argv:
        key, eq, value = arg.partition("=")
        if not eq:
            print(f"argument is not key=value: {arg!r}", file=sys.stderr)
            return 2
        opts[key] = value
    opts.setdefault("group", "g")
    opts.setdefault("topics", "t0")
    stop = threading.Event()
    go = threading.Event()
    watch_stdin(stop, go)
    if opts.pop("hold", "false") == "true":
        __import__({"confluent": "confluent_kafka", "kafka-python": "kafka", "aiokafka": "aiokafka"}[
            opts.get("client", "confluent")])
        emit("holding")
        go.wait()
        if stop.is_set():
            return 0
    try:
        CLIENTS[opts.get("client", "confluent")](opts, stop)
    except Exception as e:  # reported to the test as an event, then the process exits non-zero
        emit("error", error=repr(e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
