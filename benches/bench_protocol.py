"""The group leader's wire path at the reference shape: 2,000 members, 500 topics x 2,000 partitions (1M).

- decode: every member's ConsumerProtocolSubscription v3 (all 500 topics, 500 owned partitions each --
  partition i of every topic owned by member i --, generation, rack) -> the engine's arrays
  (kafkagroup.protocol.leader.decode_group, Cython codec) vs kafka-python 3.0.12 decoding the same bytes
  (ConsumerProtocolSubscription.decode per member);
- decode, mixed subscriptions: the same shape, but each member subscribes to its own random ~90% of
  the topics (and owns partition i of each), so no two members send the same topic list -- the path
  where topics are matched one by one against the previous member's list;
- encode: owner[] (partition g -> member g mod 2000) -> 2,000 ConsumerProtocolAssignment v3 byte strings
  (encode_assignments) vs kafka-python encoding the same assignments (ConsumerProtocolAssignment.encode
  per member, objects built outside the timed region).

- leader path, churn (test_leader_path_churn, one row per strategy and input: the bench's churn_inputs,
  and independent_inputs, the same group as independently generated JoinGroup bytes): what a member's leader does with
  the JoinGroup bytes (kafkagroup.client.leader._assign_builtin): decode_group -> assign_arrays ->
  encode_assignments, on the reference group one rebalance after a settled generation of the same
  strategy with 200 of the 2,000 members replaced (churn_inputs: survivors send what they were given as
  owned partitions -- in StickyAssignorUserData for the eager sticky assignor -- and generation 1; new
  members own nothing); next to the engine call alone on the decoded group and kafka-python 3.0.12's whole
  step (decode, its assignor, encode; capped by KAFKAGROUP_PEER_CAP_S, default 60 s). The row's note
  gives each stage's median process CPU ms; ``python benches/bench_protocol.py leader`` prints only that
  table (no peer, about a minute).

Where the leader path's time goes (2026-11-23, shared 2-core VM at load 6-9, so wall time is about
twice CPU time; instructions per call from ``valgrind --tool=callgrind`` are the repeatable figure):

    instructions per call (M)   decode  engine  encode   path   | before this work: engine   path
    range                         81.4   115.8    65.8   263.0  |                   164.3   311.5
    roundrobin                    81.3   105.7    65.8   252.8  |
    sticky                        22.1   118.3    38.1   178.5  |
    cooperative-sticky            22.0   138.0    38.1   198.1  |                   157.4   217.5

    CPU ms (median of 7, two runs) decode  engine  encode   path   | main before: engine   path
    range                         10-14      11    8-13   26-27  |               18.3   37.1
    roundrobin                        9       7       8   28-34  |               12.7   33.3
    sticky                          6-7     7-9       2   15-16  |               10.3   20.0
    cooperative-sticky              5-8    8-14     2-4   18-19  |               10.4   19.5

- The engine (range, per call): previous_owners 48 M instructions (one pass over 1M claims with the
  subscription test; needed for the `moved` metric even where the assignor ignores claims), the range fill
  26 M, compute_metrics 22 M (one pass over owner[] and prev_owner[]; was 36 M in three passes plus a
  1 MB withheld array), prepare 20 M (validating 1M subscription entries and 1M claims). The shared
  subscriber list for uniform subscriptions removed the 22 M CSR build from range and roundrobin.
  cooperative-sticky: previous_owners 41 M, build_uniform 35 M (three passes over the partitions:
  owned counts, keep up to quota, round out), compute_metrics 22 M, prepare 20 M, withhold_transfers 20 M.
- The codec is what kept range and roundrobin above 25 ms: both give every member one partition of
  each of the 500 topics, so the assignment bytes carry 1M (topic name, count, partition) groups (21 MB
  to 2,000 interleaved output buffers) and the churned subscriptions carry the same 1M owned groups.
  Sticky's assignments keep whole runs of a topic, about one group per member, so its codec costs a
  quarter of that.
- The codec after the second pass (2026-11-24; callgrind, a fresh decoder, one call, main's codec
  measured the same way; the decoder figures include decode_group's Cython part only):

      instructions per call (M)   decode: main  now      encode: main  now
      range / roundrobin                  85.7  65.6 / 66.2        65.8  56.8
      sticky / cooperative-sticky         26.6  22.7 / 22.7        37.8  37.8

  A one-partition claim group is recognised by one comparison of its whole header (length, name,
  count 1) with a template built per subscribed topic (was: length, name, then each field); a member
  whose topic bytes equal the previous member's reuses its resolved list without comparing ids again;
  assignment groups start from a per-topic header with count 1 and only groups with more partitions
  get their count written when they close; the interleaved member streams are prefetched (write) and
  each member's claim bytes ahead of the cursor (read); Java's topic and member order sort by str
  unless a name holds a character beyond U+FFFF (no UTF-16 key per name), and a group of dynamic
  members is checked and ordered at C speed. Same run, main's leader.py + codec vs these, CPU ms
  medians on the loaded VM (load 3-12): path 0.92x (range), 0.87x (roundrobin), 0.98-1.00x (sticky,
  cooperative-sticky; their codec share is small); decode 0.80-0.83x, encode 0.81-0.91x for range and
  roundrobin. The decode and encode of range and roundrobin are now bound by memory (32 MB of
  subscriptions read, 21 MB of assignments written), not by instructions.

- One name->problem path (issue #13 item 1, 2026-11-24): the Cython codec only parses; Kafka's group rules
  (MemberInfo order, the group's topics in Java order, claims kept / dropped / refused, a topic listed
  twice, the 2^28 bound, racks) run in the native group builder (kafkagroup._core.build_groups, the one
  behind build_group and the Spark / fleet batches). One builder call sits between the codec's two
  phases (ids and the subscribed names in; MemberInfo order, the topics' layout and the subscription
  arrays out); the codec then writes each claim on a partition of the group's topics straight into that
  layout and hands the rest (stale or invalid claims, racks) to a second builder call only when there
  are any. The codec tells the builder which members repeat the previous member's topic bytes
  (``sub_same``), so those lists are neither compared nor scanned again. Callgrind, instructions per
  decode_group call (difference of 6 and 2 calls, OPENBLAS_NUM_THREADS=1), main's codec -> this:
  range 73.0 -> 72.3 M, sticky 30.0 -> 29.3 M, cooperative-sticky 29.8 -> 29.0 M (the churn groups
  above). CPU ms, six alternating runs of main and this branch at load 3-5, medians: decode and path
  within noise of main (0.93-1.15x, one row 1.32x, another 0.83x, both ways); leader path (range,
  roundrobin, sticky, cooperative-sticky) 23.5, 22.4, 15.7, 16.1 ms at load ~4, 25-30 ms for range
  and roundrobin when the load reached 5 (main's runs as well).

- Issue 26 item 3, the independent input (2026-11-28): independent_inputs lists the members in JoinGroup
  order, so MemberInfo order is not the parse order. The group builder's shortcut for a member whose topic
  list repeats the previous member's (the codec's sub_same) held only for row neighbours: in MemberInfo
  order every member compared its 500 codes with the one before it (4 MB of memcmp read out of order, 7%
  of decode's perf samples). Runs of equal lists are now numbered once and compared by run. Builder
  instructions per decode_group (callgrind, --toggle-collect on build_groups_arrays): bench 2.0 M
  either way, independent 4.0 -> 3.4 M (the rest is sorting the shuffled ids). Encoder: prefetch 128
  bytes ahead (was 256) and pass 1's sizing in 16-byte records that stay in the L1 cache: 57.8 -> 58.8 M
  instructions per range encode (38.9 -> 40.9 M sticky), 0.76-0.97x encode CPU for range and roundrobin
  in same-run A/B of the two builds. ``leader`` table, three alternating runs of main and this change
  under chrt -f 10 at load 9-12, medians, path CPU ms main -> this: range 21.8 -> 18.0 (bench),
  22.0 -> 18.5 (independent); roundrobin 20.5 -> 19.2, 21.2 -> 18.0; sticky 11.3 -> 10.1, 11.9 -> 10.2;
  cooperative-sticky 10.9 -> 10.0, 11.1 -> 9.9 (decode 6.3-8.7, engine 0.4-3.4, encode 2.3-7.6).
  Tried and dropped (measured, same run): encoding member by member after a counting sort of owner[]
  (1.13-1.42x: the 4-byte scatter into 2,000 slices stalls as the interleaved writes did), staging each
  member's line and writing whole lines with streaming stores (1.0-1.4x: the 21 MB of assignments fit
  the 32 MB L3, streaming stores send them to memory), and one masked comparison of a member's whole
  claim run with a per-subscription template (31.8 -> 27.3 M instructions per decode's read_claims, no
  CPU gain: reading the 20 MB of claims bounds it). What is left at range / roundrobin: decode reads 32 MB
  (topic lists 12 MB, one memcmp a member; claims 20 MB, ~30 instructions a claim) and encode writes
  21 MB to 2,000 interleaved messages whose every line is fetched before it is written.

- Issue 26 item 3, second pass (2026-11-28): where one leader path call goes on the independent input
  (callgrind, the difference of 3 calls and 1, OPENBLAS_NUM_THREADS=1), range: decode 47.6 M instructions
  (parse_claims 32.9 M, of which read_claims 31.8 M; parse_topics 2.9 M; the group builder 3.1 M; numpy
  and glue the rest), engine 37.5 M (previous_owners 20 M and compute_metrics 13 M: the metrics the leader
  reports, outside this path's code), encode 58.8 M; 146 M in all. Sticky and cooperative-sticky spent 40
  M of their 74 M in encode. Changes: encode's two passes are C functions with a loop per topic shape -- a
  topic where every assigned partition opens a group of its own (range and round-robin here: no run or
  group test) or runs of one owner (sticky's stretches: a run at a time, its partitions in a tight loop)
  -- chosen from the per-topic group and partition counts of the sizing pass; the sizing pass takes runs
  after a topic that had them. The claims kernel tests its bounds once for the whole run when the member's
  bytes hold it (each subscription entry knows the bytes of the one-partition groups before it and where
  16..32-byte headers end). Instructions, before -> after: encode 58.8 -> 45.8 M (range, roundrobin), 39.8
  -> 18.0 M (sticky, cooperative-sticky); parse_claims 32.9 -> 25.9 M (range), 13.5 -> 13.7 M (sticky);
  whole path range 146 -> 126 M, roundrobin 154 -> 134 M, sticky 74 -> 53 M, cooperative-sticky 74 -> 52
  M. CPU ms, both builds' codecs loaded in one process and called in alternation (20 calls each, medians,
  load ~2), before -> after: encode alone range 8.8 -> 8.3 (0.94x), roundrobin 9.5 -> 9.4 (0.99x), sticky
  3.45 -> 1.95 (0.56x), cooperative-sticky 3.45 -> 2.0 (0.58x); whole path, independent / bench input:
  range 23.8 -> 24.0 / 20.8 -> 20.8, roundrobin 17.1 -> 16.9 / 25.3 -> 29.9 (min 20.8 both), sticky 13.5
  -> 12.4 / 9.0 -> 8.1, cooperative-sticky 9.5 -> 8.8 / 8.7 -> 7.8. Range and roundrobin encoding is bound
  by its 21 MB of interleaved writes (each line fetched before it is written), which fewer instructions do
  not shorten; and their paths differ by up to 7 ms between the range and roundrobin inputs, whose
  metadata bytes and owner[] are identical at this shape (checked): where the 2,000 messages and the
  metadata land in memory moves the path more than 20 M instructions do. Tried and dropped: the run loop
  for every topic (range's one-partition runs then cost 83 M instead of 46 M in encode: the run test and
  the vectorised partition loop per run).

Inputs are built once, outside the timed regions; few rounds (the machine is shared). The warm-up round
fills decode_group's decoder pool, so the timed rounds are the steady state of a leader that decodes
every rebalance. Run with ``make bench`` (ratio table at the end) or ``python benches/bench_protocol.py``
(prints its own table, with minor page faults per call, and encode once more with each call's output
freed before the next call). When the ~23 MB of assignment bytes end up at the top of the heap and are
freed, glibc returns them to the kernel and the next call faults them in again (about 5,500 faults,
10-20 ms on the shared VM; whether it happens depends on what else sits on the heap, so the faults
column shows it per run). That is the allocator's trim policy, removed by
MALLOC_TRIM_THRESHOLD_ / MALLOC_TOP_PAD_; pytest-benchmark keeps the previous round's result alive,
so it does not see it either.

Repeatable instruction counts for one call: ``valgrind --tool=callgrind --toggle-collect=<the Cython
wrapper symbol, e.g. __pyx_pw_10kafkagroup_6_codec_12GroupDecoder_7parse_claims>`` on a script that decodes
once, or the difference between scripts that decode 2 and 6 times (OPENBLAS_NUM_THREADS=1: idle BLAS
threads spin and their instructions are counted).
"""
from __future__ import annotations

import functools
import os
import random
import resource
import statistics
import sys
import time

import numpy as np
import pytest
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

import kafkagroup
from kafkagroup.bench.peers import KafkaPythonCluster
from kafkagroup.protocol import Subscription, encode_subscription
from kafkagroup.protocol.leader import decode_group, encode_assignments, native_available
from kafkagroup.structs import TopicPartition

MEMBERS, TOPICS, PARTITIONS = 2000, 500, 2000


def build_inputs():
    topics = [f"topic-{t:03d}-{(t * 7919) % 1000:03d}" for t in range(TOPICS)]
    metadata = {t: PARTITIONS for t in topics}
    members = []
    for i in range(MEMBERS):
        sub = Subscription(topics, None, [TopicPartition(t, i) for t in topics], 7, f"rack-{i % 3}")
        members.append((f"consumer-{i:04d}-{(i * 104729) % 99991:05d}", None, encode_subscription(sub, 3)))
    return topics, metadata, members


@functools.lru_cache(maxsize=1)
def _churned_group(strategy: str):
    """The reference shape one rebalance after a settled generation 1 of ``strategy``: 200 of the 2,000
    members replaced, each survivor claiming what it was given (kafkagroup.scenarios.next_generation)."""
    import kafkagroup
    from kafkagroup.scenarios import next_generation, uniform_group

    group = uniform_group(topics=TOPICS, partitions=PARTITIONS, members=MEMBERS)
    first = kafkagroup.assign_arrays(strategy, **group.arrays())
    return next_generation(group, first.owner, remove=200, add=200, generation=1, seed=1)


def _member_subscription(strategy: str, topics: list[str], owned: list[TopicPartition], generation: int
                         ) -> Subscription:
    """What a Java member of ``strategy`` sends: sticky in its user data (v0 layout), cooperative-sticky as owned
    partitions plus a generation in its user data, range and roundrobin as owned partitions."""
    from kafkagroup.protocol.user_data import cooperative_sticky_user_data, sticky_user_data

    if strategy == "sticky":
        return Subscription(topics, sticky_user_data(owned, generation) if generation >= 0 else None, [], -1)
    if strategy == "cooperative-sticky":
        return Subscription(topics, cooperative_sticky_user_data(generation), owned, generation)
    return Subscription(topics, None, owned, generation)


def churn_inputs(strategy: str):
    """(metadata, JoinGroup members) of the churned reference group as Java's clients send them for
    ``strategy``: v3 subscriptions carrying owned partitions and the generation; the eager sticky
    assignor's claims in StickyAssignorUserData v1 (owned field empty, as Java's eager protocol sends),
    cooperative-sticky's generation also in its int32 user data; new members own nothing."""

    group = _churned_group(strategy)
    metadata = dict(zip(group.topics, group.partition_count.tolist()))
    all_topics = group.topics
    members = []
    for i, mid in enumerate(group.members):
        topics = [all_topics[t] for t in group.sub_topics[group.sub_offsets[i]:group.sub_offsets[i + 1]].tolist()]
        names, parts = group.partition_names(group.owned_partitions[group.owned_offsets[i]:group.owned_offsets[i + 1]])
        owned = [TopicPartition(t, p) for t, p in zip(names, parts)]
        generation = int(group.generation[i])
        members.append((mid, None, encode_subscription(_member_subscription(strategy, topics, owned, generation), 3)))
    return metadata, members


def independent_inputs(strategy: str, seed: int = 11):
    """The churned reference group as JoinGroup bytes made independently of kafkagroup's scenario names:
    500 random 10-letter topic names, 2,000 random client-style member ids (consumer-app-N-<uuid>) in join
    order (shuffled, not MemberInfo order; the bytes allocated in that order, as a JoinGroup response's
    are), a settled generation 7 of ``strategy`` on them (each survivor claims what it was given, in
    Java's ConsumerProtocol layout), 200 members replaced by new ones that own nothing. churn_inputs' names are ``topic000123`` / ``m0000123`` in MemberInfo order, generation 1."""
    import string

    from kafkagroup.scenarios import next_generation, uniform_group

    rng = random.Random(seed)
    names: set[str] = set()
    while len(names) < TOPICS:
        names.add("".join(rng.choice(string.ascii_lowercase) for _ in range(10)))

    def member_id() -> str:
        return f"consumer-app-{rng.randrange(1, 100)}-" + "%08x-%04x-%04x-%04x-%012x" % tuple(
            rng.getrandbits(b) for b in (32, 16, 16, 16, 48))

    group = uniform_group(topics=TOPICS, partitions=PARTITIONS, members=MEMBERS)
    group.topics, group.members = sorted(names), sorted(member_id() for _ in range(MEMBERS))  # Java order
    settled = kafkagroup.assign_arrays(strategy, **group.arrays())
    churned = next_generation(group, settled.owner, remove=200, add=200, generation=7, seed=seed)
    churned.topics = group.topics
    members = []
    for i in range(len(churned.members)):
        mid = churned.members[i] if i < MEMBERS - 200 else member_id()
        topics = [churned.topics[t] for t in churned.sub_topics[churned.sub_offsets[i]:churned.sub_offsets[i + 1]].tolist()]
        tn, pn = churned.partition_names(churned.owned_partitions[churned.owned_offsets[i]:churned.owned_offsets[i + 1]])
        owned = [TopicPartition(t, p) for t, p in zip(tn, pn)]
        generation = int(churned.generation[i])
        members.append((mid, _member_subscription(strategy, topics, owned, generation)))
    rng.shuffle(members)
    # encoded in join order: a leader's metadata bytes are allocated in the order its JoinGroup response
    # lists them (decoded one after another), so they lie in memory in that order, not in MemberInfo order
    return (dict(zip(churned.topics, churned.partition_count.tolist())),
            [(mid, None, encode_subscription(sub, 3)) for mid, sub in members])


def build_mixed_inputs():
    rng = random.Random(5)
    topics = [f"topic-{t:03d}-{(t * 7919) % 1000:03d}" for t in range(TOPICS)]
    metadata = {t: PARTITIONS for t in topics}
    members = []
    for i in range(MEMBERS):
        subscribed = [t for t in topics if rng.random() < 0.9]
        sub = Subscription(subscribed, None, [TopicPartition(t, i) for t in subscribed], 7, f"rack-{i % 3}")
        members.append((f"consumer-{i:04d}-{(i * 104729) % 99991:05d}", None, encode_subscription(sub, 3)))
    return metadata, members


@pytest.fixture(scope="module")
def inputs():
    topics, metadata, members = build_inputs()
    group = decode_group(members, metadata, assignor="cooperative-sticky")
    owner = (np.arange(TOPICS * PARTITIONS, dtype=np.int64) % MEMBERS).astype(np.int32)
    by_member = encode_assignments(group, owner)
    kp_assignments = [ConsumerProtocolAssignment.decode(blob) for blob in by_member.values()]
    return metadata, members, group, owner, kp_assignments


def kafka_python_decode(members):
    return [ConsumerProtocolSubscription.decode(blob) for _, _, blob in members]


def kafka_python_encode(assignments):
    return [a.encode() for a in assignments]


pytestmark = pytest.mark.skipif(not native_available(), reason="kafkagroup._codec is not built")


def test_leader_decode_1m(benchmark, report, inputs):
    from conftest import time_peer

    metadata, members, _, _, _ = inputs
    group = benchmark.pedantic(lambda: decode_group(members, metadata, assignor="cooperative-sticky"),
                               rounds=5, warmup_rounds=1)
    assert group.owned_partitions.shape[0] == TOPICS * MEMBERS
    report.add("wire decode 2000 members, 500x2000 partitions", benchmark,
               "kafka-python 3.0.12", time_peer(lambda: kafka_python_decode(members), rounds=2, cap_s=120),
               120, "ConsumerProtocolSubscription.decode")


def test_leader_decode_mixed_subscriptions(benchmark, report):
    from conftest import time_peer

    metadata, members = build_mixed_inputs()
    group = benchmark.pedantic(lambda: decode_group(members, metadata, assignor="cooperative-sticky"),
                               rounds=5, warmup_rounds=1)
    assert group.sub_topics.shape[0] == group.owned_partitions.shape[0] > 0.85 * TOPICS * MEMBERS
    report.add("wire decode 2000 members, own ~90% topic subsets each", benchmark,
               "kafka-python 3.0.12", time_peer(lambda: kafka_python_decode(members), rounds=1, cap_s=120),
               120, "ConsumerProtocolSubscription.decode")


def test_leader_encode_1m(benchmark, report, inputs):
    from conftest import time_peer

    _, _, group, owner, kp_assignments = inputs
    blobs = benchmark.pedantic(lambda: encode_assignments(group, owner), rounds=5, warmup_rounds=1)
    assert len(blobs) == MEMBERS
    report.add("wire encode 2000 assignments from owner[] (1M)", benchmark,
               "kafka-python 3.0.12", time_peer(lambda: kafka_python_encode(kp_assignments), rounds=2, cap_s=120),
               120, "ConsumerProtocolAssignment.encode")


STRATEGIES = ("range", "roundrobin", "sticky", "cooperative-sticky")
CAP_S = float(os.environ.get("KAFKAGROUP_PEER_CAP_S", "60"))


def leader_path(strategy: str, members, metadata) -> dict[str, bytes]:
    """What the member's leader does with JoinGroup bytes (kafkagroup.client.leader._assign_builtin):
    decode -> engine -> encode."""
    group = decode_group(members, metadata, assignor=strategy)
    result = kafkagroup.assign_arrays(strategy, **group.arrays())
    return encode_assignments(group, result.owner)


def kafka_python_leader(strategy: str, members, metadata):
    """The same step with kafka-python 3.0.12's classes: decode every subscription, run its assignor,
    encode every assignment."""
    from types import SimpleNamespace

    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
    from kafka.coordinator.assignors.sticky.sticky_assignor import StickyPartitionAssignor

    assignor = {"range": RangePartitionAssignor, "roundrobin": RoundRobinPartitionAssignor,
                "sticky": StickyPartitionAssignor, "cooperative-sticky": CooperativeStickyAssignor}[strategy]()
    decoded = [SimpleNamespace(member_id=mid, group_instance_id=None,
                               metadata=ConsumerProtocolSubscription.decode(blob)) for mid, _, blob in members]
    return {mid: a.encode() for mid, a in assignor.assign(KafkaPythonCluster(metadata), decoded).items()}


INPUTS = {"bench": churn_inputs, "independent": independent_inputs}


@pytest.mark.parametrize("shape", list(INPUTS))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_leader_path_churn(benchmark, report, strategy, shape):
    """decode + assign + encode on the churned reference group (churn_inputs, or independent_inputs: the
    same group as independently generated JoinGroup bytes), next to the engine call alone on the decoded
    group and kafka-python's whole step (capped, KAFKAGROUP_PEER_CAP_S)."""
    from conftest import time_peer

    metadata, members = INPUTS[shape](strategy)
    out = benchmark.pedantic(lambda: leader_path(strategy, members, metadata), rounds=5, warmup_rounds=1)
    assert len(out) == MEMBERS
    group = decode_group(members, metadata, assignor=strategy)
    arrays = group.arrays()
    engine = _median_ms(lambda: kafkagroup.assign_arrays(strategy, **arrays), 5)[0]
    cpu = stage_cpu_ms(strategy, members, metadata)
    name = f"leader path {strategy}: 2000 members, 1M partitions, churn 10%, {shape} input"
    report.add(name, benchmark, "engine call alone", engine, 0,
               "CPU ms: " + ", ".join(f"{k} {v:.0f}" if k.endswith("faults") else f"{k} {v:.1f}" for k, v in cpu.items()),
               partitions=TOPICS * PARTITIONS)
    report.add(name, benchmark, "kafka-python 3.0.12",
               time_peer(lambda: kafka_python_leader(strategy, members, metadata), rounds=1, cap_s=CAP_S),
               CAP_S, "decode+assign+encode")


def stage_cpu_ms(strategy: str, members, metadata, rounds: int = 7) -> dict[str, float]:
    """Median process CPU milliseconds of each stage of the leader path and of the whole path (the
    machine is shared: CPU time is what the path costs, wall time adds whatever else runs), and the
    median minor page faults of one whole path ("path faults": memory the allocator gave back to the OS
    after the previous call and faults in again, see the module docstring); "path freed" and "freed faults"
    are the same with each call's assignments dropped before the next call, as a group leader drops them
    once sent (glibc then returns the ~21 MB at the top of its heap to the OS, and the next call faults
    them in again)."""
    def cpu(fn):
        times, faults, result = [], [], None
        for _ in range(rounds):
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            start = time.process_time()
            result = fn()
            times.append((time.process_time() - start) * 1000)
            faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
        return statistics.median(times), statistics.median(faults), result

    def cpu_freed(fn):   # each call's result dropped before the next call, as a leader's between rebalances
        times, faults = [], []
        for _ in range(rounds):
            before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            start = time.process_time()
            fn()
            times.append((time.process_time() - start) * 1000)
            faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
        return statistics.median(times), statistics.median(faults)

    decode_ms, _, group = cpu(lambda: decode_group(members, metadata, assignor=strategy))
    engine_ms, _, result = cpu(lambda: kafkagroup.assign_arrays(strategy, **group.arrays()))
    encode_ms, _, _ = cpu(lambda: encode_assignments(group, result.owner))
    path_ms, path_faults, _ = cpu(lambda: leader_path(strategy, members, metadata))
    freed_ms, freed_faults = cpu_freed(lambda: leader_path(strategy, members, metadata))
    return {"decode": decode_ms, "engine": engine_ms, "encode": encode_ms, "path": path_ms, "path faults": path_faults,
            "path freed": freed_ms, "freed faults": freed_faults}


def _median_ms(fn, rounds, keep_result=True):
    """Median ms and median minor page faults per call. keep_result=False drops each call's result
    before the next call (as a leader does between rebalances)."""
    times, faults, result = [], [], None
    for _ in range(rounds):
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        start = time.perf_counter()
        new = fn()
        times.append((time.perf_counter() - start) * 1000)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
        result = new if keep_result else None
        del new
    return statistics.median(times), statistics.median(faults)


def print_leader_path_stages() -> None:
    """Per-stage CPU table of the leader path (``python benches/bench_protocol.py leader``)."""
    print(f"{'leader path, churn (CPU ms, median of 7)':<42} {'decode':>7} {'engine':>7} {'encode':>7} "
          f"{'sum':>7} {'path':>7} {'faults':>7} {'freed':>7} {'faults':>7}")
    for strategy in STRATEGIES:
        for shape, make in INPUTS.items():
            metadata, members = make(strategy)
            c = stage_cpu_ms(strategy, members, metadata)
            print(f"{strategy + ', ' + shape:<42} {c['decode']:>7.1f} {c['engine']:>7.1f} {c['encode']:>7.1f} "
                  f"{c['decode'] + c['engine'] + c['encode']:>7.1f} {c['path']:>7.1f} {c['path faults']:>7.0f} "
                  f"{c['path freed']:>7.1f} {c['freed faults']:>7.0f}")


if __name__ == "__main__" and sys.argv[1:] == ["leader"]:
    print_leader_path_stages()
elif __name__ == "__main__":
    topics, metadata, members = build_inputs()
    group = decode_group(members, metadata, assignor="cooperative-sticky")
    owner = (np.arange(TOPICS * PARTITIONS, dtype=np.int64) % MEMBERS).astype(np.int32)
    kp_assignments = [ConsumerProtocolAssignment.decode(b) for b in encode_assignments(group, owner).values()]
    peer_decode = _median_ms(lambda: kafka_python_decode(members), 2)[0]
    peer_encode = _median_ms(lambda: kafka_python_encode(kp_assignments), 2)[0]
    mixed_metadata, mixed = build_mixed_inputs()
    rows = [
        ("decode", _median_ms(lambda: decode_group(members, metadata, assignor="cooperative-sticky"), 7), peer_decode),
        ("decode, mixed subscriptions",
         _median_ms(lambda: decode_group(mixed, mixed_metadata, assignor="cooperative-sticky"), 7),
         _median_ms(lambda: kafka_python_decode(mixed), 1)[0]),
        ("encode", _median_ms(lambda: encode_assignments(group, owner), 7), peer_encode),
        ("encode, each output freed before the next call",
         _median_ms(lambda: encode_assignments(group, owner), 7, keep_result=False), peer_encode),
    ]
    print(f"{'leader path (2000 members, 1M partitions)':<48} {'kafkagroup ms':>14} {'faults':>7} "
          f"{'kafka-python ms':>16} {'ratio':>8}")
    for name, (ours, faults), peer in rows:
        print(f"{name:<48} {ours:>14.1f} {faults:>7.0f} {peer:>16.1f} {peer / ours:>7.0f}x")
