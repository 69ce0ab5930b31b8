// kafkagroup bench: Apache Kafka's own consumer assignors (kafka-clients jar) driven over stdin/stdout.
//
// One long-lived process; each request is one group and one strategy, big-endian binary (DataInputStream):
//   str strategy ("" = quit) | int warmup | int rounds | int budget ms (warm-up and timed calls stop early,
//   after at least one timed call, once they have used the budget: slow assignors run fewer times)
//   int T | T x str topic | T x int partitions
//   int R | R x str rack name | if R > 0: int[P+1] replica offsets, int[] replica rack ids (global partition order)
//   int M | M x (str member id | str group.instance.id ("" = dynamic) | int rack (-1 = none) | int generation
//               (-1 = none) | int n, int[n] subscribed topic ids | int k, int[k] owned global partition ids)
// where str = int length + UTF-8 bytes and a global partition id is sum(partitions[:t]) + p.
// Reply: int 0 | int rounds | rounds x double assign() milliseconds | M x (int n, int[n] global ids ascending),
//   or int 1 | str error.
// Each member's Subscription is built the way a real consumer builds it: a member instance of the assignor
// receives onAssignment(owned, generation) and its subscriptionUserData() becomes the user data (so
// StickyAssignor sees its previous assignment in its own encoding). Only assignor.assign(cluster, group)
// is timed (System.nanoTime), after `warmup` untimed calls on the same input; a fresh leader and fresh
// Subscriptions per call (StickyAssignor consumes the user data buffer as it decodes it, as it would a
// freshly received JoinGroup).
import java.io.*;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.*;
import org.apache.kafka.common.*;

public final class AssignorDriver {
    private static String readStr(DataInputStream in) throws IOException {
        byte[] b = new byte[in.readInt()];
        in.readFully(b);
        return new String(b, StandardCharsets.UTF_8);
    }

    private static int[] readInts(DataInputStream in, int n) throws IOException {
        byte[] b = new byte[4 * n];
        in.readFully(b);
        int[] out = new int[n];
        ByteBuffer.wrap(b).asIntBuffer().get(out);
        return out;
    }

    private static ConsumerPartitionAssignor newAssignor(String strategy) {
        switch (strategy) {
            case "range": return new RangeAssignor();
            case "roundrobin": return new RoundRobinAssignor();
            case "sticky": return new StickyAssignor();
            case "cooperative-sticky": return new CooperativeStickyAssignor();
            default: throw new IllegalArgumentException("unknown strategy " + strategy);
        }
    }

    public static void main(String[] args) throws Exception {
        DataInputStream in = new DataInputStream(new BufferedInputStream(System.in, 1 << 20));
        DataOutputStream out = new DataOutputStream(new BufferedOutputStream(System.out, 1 << 20));
        while (true) {
            String strategy;
            try {
                strategy = readStr(in);
            } catch (EOFException eof) {
                return;
            }
            if (strategy.isEmpty()) return;
            try {
                serve(strategy, in, out);
            } catch (RuntimeException e) {
                out.writeInt(1);
                byte[] msg = (e.getClass().getSimpleName() + ": " + e.getMessage()).getBytes(StandardCharsets.UTF_8);
                out.writeInt(msg.length);
                out.write(msg);
            }
            out.flush();
        }
    }

    private static void serve(String strategy, DataInputStream in, DataOutputStream out) throws IOException {
        int warmup = in.readInt(), rounds = in.readInt(), budgetMs = in.readInt();
        int t = in.readInt();
        String[] topics = new String[t];
        for (int i = 0; i < t; i++) topics[i] = readStr(in);
        int[] counts = readInts(in, t);
        long[] base = new long[t + 1];
        for (int i = 0; i < t; i++) base[i + 1] = base[i] + counts[i];
        int total = (int) base[t];
        int r = in.readInt();
        String[] racks = new String[r];
        for (int i = 0; i < r; i++) racks[i] = readStr(in);
        int[] replicaOffsets = null, replicaRacks = null;
        if (r > 0) {
            replicaOffsets = readInts(in, total + 1);
            replicaRacks = readInts(in, replicaOffsets[total]);
        }
        int m = in.readInt();
        String[] memberIds = new String[m];
        Map<String, Subscription> subscriptions = new HashMap<>();
        Map<String, Integer> topicIndex = new HashMap<>();
        for (int i = 0; i < t; i++) topicIndex.put(topics[i], i);
        for (int i = 0; i < m; i++) {
            memberIds[i] = readStr(in);
            if (subscriptions.containsKey(memberIds[i]))
                throw new IllegalArgumentException("duplicate member id " + memberIds[i]);
            String instance = readStr(in);
            int rack = in.readInt(), generation = in.readInt();
            int[] subs = readInts(in, in.readInt());
            int[] owned = readInts(in, in.readInt());
            List<String> subscribed = new ArrayList<>();
            for (int s : subs) subscribed.add(topics[s]);
            List<TopicPartition> ownedPartitions = new ArrayList<>();
            for (int g : owned) {
                int ti = upperBound(base, g) - 1;
                ownedPartitions.add(new TopicPartition(topics[ti], (int) (g - base[ti])));
            }
            Optional<String> rackId = rack < 0 ? Optional.empty() : Optional.of(racks[rack]);
            Optional<String> instanceId = instance.isEmpty() ? Optional.empty() : Optional.of(instance);
            ConsumerPartitionAssignor member = newAssignor(strategy);
            if (generation >= 0)
                member.onAssignment(new Assignment(ownedPartitions),
                        new ConsumerGroupMetadata("bench", generation, memberIds[i], instanceId));
            ByteBuffer userData = member.subscriptionUserData(new HashSet<>(subscribed));
            Subscription sub = new Subscription(subscribed, userData, ownedPartitions,
                    generation, rackId);
            sub.setGroupInstanceId(instanceId);
            subscriptions.put(memberIds[i], sub);
        }
        Cluster cluster = cluster(topics, counts, racks, replicaOffsets, replicaRacks);
        GroupAssignment result = null;
        List<Double> times = new ArrayList<>();
        double warmupMs = 0, timedMs = 0;
        for (int i = 0; i < warmup + rounds; i++) {
            boolean timed = i >= warmup;
            if (!timed && warmupMs > budgetMs) { i = warmup - 1; continue; }
            if (timed && !times.isEmpty() && timedMs > budgetMs) break;
            GroupSubscription group = new GroupSubscription(fresh(subscriptions));
            ConsumerPartitionAssignor leader = newAssignor(strategy);
            long start = System.nanoTime();
            result = leader.assign(cluster, group);
            double ms = (System.nanoTime() - start) / 1e6;
            if (timed) { times.add(ms); timedMs += ms; } else warmupMs += ms;
        }
        out.writeInt(0);
        out.writeInt(times.size());
        for (double ms : times) out.writeDouble(ms);
        Map<String, Assignment> byMember = result.groupAssignment();
        for (String id : memberIds) {
            Assignment a = byMember.get(id);
            List<TopicPartition> parts = a == null ? Collections.emptyList() : a.partitions();
            int[] ids = new int[parts.size()];
            for (int k = 0; k < ids.length; k++) {
                TopicPartition tp = parts.get(k);
                ids[k] = (int) (base[topicIndex.get(tp.topic())] + tp.partition());
            }
            Arrays.sort(ids);
            ByteBuffer buf = ByteBuffer.allocate(4 + 4 * ids.length);
            buf.putInt(ids.length);
            buf.asIntBuffer().put(ids);
            out.write(buf.array());
        }
    }

    /** Copies of the Subscriptions with their own user data position (decoding consumes the buffer). */
    private static Map<String, Subscription> fresh(Map<String, Subscription> subscriptions) {
        Map<String, Subscription> copy = new HashMap<>();
        for (Map.Entry<String, Subscription> e : subscriptions.entrySet()) {
            Subscription s = e.getValue();
            Subscription c = new Subscription(s.topics(), s.userData() == null ? null : s.userData().duplicate(),
                    s.ownedPartitions(), s.generationId().orElse(-1), s.rackId());
            c.setGroupInstanceId(s.groupInstanceId());
            copy.put(e.getKey(), c);
        }
        return copy;
    }

    private static int upperBound(long[] base, long g) {
        int lo = 0, hi = base.length;
        while (lo < hi) {
            int mid = (lo + hi) >>> 1;
            if (base[mid] <= g) lo = mid + 1; else hi = mid;
        }
        return lo;
    }

    /** Every partition led by its first replica; without racks one rack-less node holds everything. */
    private static Cluster cluster(String[] topics, int[] counts, String[] racks, int[] offsets, int[] replicaRacks) {
        List<Node> nodes = new ArrayList<>();
        if (racks.length == 0) nodes.add(new Node(0, "broker0", 9092));
        for (int i = 0; i < racks.length; i++) nodes.add(new Node(i, "broker" + i, 9092, racks[i]));
        List<PartitionInfo> partitions = new ArrayList<>();
        int g = 0;
        for (int ti = 0; ti < topics.length; ti++) {
            for (int p = 0; p < counts[ti]; p++, g++) {
                Node[] replicas;
                if (racks.length == 0) {
                    replicas = new Node[] {nodes.get(0)};
                } else {
                    replicas = new Node[offsets[g + 1] - offsets[g]];
                    for (int k = 0; k < replicas.length; k++) replicas[k] = nodes.get(replicaRacks[offsets[g] + k]);
                }
                partitions.add(new PartitionInfo(topics[ti], p, replicas.length > 0 ? replicas[0] : null, replicas, replicas));
            }
        }
        return new Cluster("bench", nodes, partitions, Collections.emptySet(), Collections.emptySet());
    }
}
