// A Java consumer (Apache Kafka's kafka-clients) that a Python test drives and follows: every group event is
// one JSON line on stdout, flushed, so the test can wait for it with a deadline.
//
//   java -cp 'build/kafka4/lib/*' tests/server/java/GroupConsumer.java bootstrap=127.0.0.1:9092 group=g topics=t0,t1 \
//        strategy=cooperative-sticky group.instance.id=host-1 session.timeout.ms=6000 commit=sync
//
// Arguments are key=value. Keys this driver reads itself: bootstrap, group, topics (comma list; one entry
// starting with ^ is a regular expression the coordinator resolves, KIP-848's SubscriptionPattern, 4.x
// clients only), strategy (range | roundrobin | sticky | cooperative-sticky, or a comma list of them), commit
// (sync: commitSync after every poll that returned records, the default; none: never commit),
// commit.delay.ms (wait that long between reading records and committing them), max.records (stop after consuming
// this many records; 0 = never), idle.exit.ms (stop after this long with no record once something was
// consumed; 0 = never), close.on.exit (true: consumer.close() on stop, i.e. LeaveGroup for a dynamic member).
// Any other key containing a dot is passed to the consumer as a config (session.timeout.ms,
// heartbeat.interval.ms, group.instance.id, client.id, auto.offset.reset, ...).
//
// The driver also stops when stdin reaches end of file or reads a line "stop" (the test closes its pipe),
// so a test that dies never leaves a consumer behind; SIGKILL is the way to make it vanish without a goodbye.
// hold=true: start the JVM and load the client, print {"event":"holding"}, and build the consumer only when
// stdin reads a line "go" (a restart that does not wait for a JVM start-up).
//
// Events (one JSON object per line, "event" first):
//   {"event":"started"}                                   the consumer is built and subscribed
//   {"event":"assigned","partitions":[["t0",0],...],"generation":N,"member":"..."}  (cooperative: the added ones)
//   {"event":"revoked","partitions":[...]}   {"event":"lost","partitions":[...]}
//   {"event":"records","records":[["t0",0,offset,"key"],...]}  one line per non-empty poll
//   {"event":"committed","offsets":[["t0",0,next_offset],...]}  after commitSync returned
//   {"event":"commit_failed","error":"..."}  {"event":"error","error":"..."}  {"event":"closed"}
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

public class GroupConsumer {
    private static final Object OUT = new Object();

    static void emit(String json) {
        synchronized (OUT) {
            // "wall": when it was printed (epoch seconds), as consumer_driver.py stamps its events
            System.out.println("{\"wall\":" + (System.currentTimeMillis() / 1000.0) + "," + json.substring(1));
            System.out.flush();
        }
    }

    static String quote(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static String partitions(Collection<TopicPartition> tps) {
        List<TopicPartition> sorted = new ArrayList<>(tps);
        sorted.sort((a, b) -> a.topic().equals(b.topic()) ? Integer.compare(a.partition(), b.partition())
                                                          : a.topic().compareTo(b.topic()));
        StringBuilder b = new StringBuilder("[");
        for (TopicPartition tp : sorted) {
            if (b.length() > 1) b.append(',');
            b.append('[').append(quote(tp.topic())).append(',').append(tp.partition()).append(']');
        }
        return b.append(']').toString();
    }

    static String strategyClasses(String names) {
        List<String> classes = new ArrayList<>();
        for (String name : names.split(",")) {
            switch (name.trim()) {
                case "range": classes.add("org.apache.kafka.clients.consumer.RangeAssignor"); break;
                case "roundrobin": classes.add("org.apache.kafka.clients.consumer.RoundRobinAssignor"); break;
                case "sticky": classes.add("org.apache.kafka.clients.consumer.StickyAssignor"); break;
                case "cooperative-sticky":
                    classes.add("org.apache.kafka.clients.consumer.CooperativeStickyAssignor"); break;
                default: throw new IllegalArgumentException("unknown strategy: " + name);
            }
        }
        return String.join(",", classes);
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = new HashMap<>();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            if (eq <= 0) throw new IllegalArgumentException("argument is not key=value: " + arg);
            opts.put(arg.substring(0, eq), arg.substring(eq + 1));
        }
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, opts.getOrDefault("bootstrap", "127.0.0.1:9092"));
        props.put(ConsumerConfig.GROUP_ID_CONFIG, opts.getOrDefault("group", "g"));
        if (!opts.getOrDefault("group.protocol", "classic").equalsIgnoreCase("consumer")) {
            // a KIP-848 member (group.protocol=consumer, kafka-clients 4.x) is assigned by the coordinator
            props.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
                      strategyClasses(opts.getOrDefault("strategy", "range")));
        }
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        for (Map.Entry<String, String> e : opts.entrySet()) {
            if (e.getKey().contains(".") && !e.getKey().equals("max.records") && !e.getKey().equals("idle.exit.ms")
                    && !e.getKey().equals("close.on.exit") && !e.getKey().equals("hold")
                    && !e.getKey().equals("commit.delay.ms")) {
                props.put(e.getKey(), e.getValue());
            }
        }
        List<String> topics = Arrays.asList(opts.getOrDefault("topics", "t0").split(","));
        boolean commit = !opts.getOrDefault("commit", "sync").equals("none");
        // a wait between reading records and committing them: a window in which a test can freeze the process
        long commitDelayMs = Long.parseLong(opts.getOrDefault("commit.delay.ms", "0"));
        long maxRecords = Long.parseLong(opts.getOrDefault("max.records", "0"));
        long idleExitMs = Long.parseLong(opts.getOrDefault("idle.exit.ms", "0"));
        boolean closeOnExit = Boolean.parseBoolean(opts.getOrDefault("close.on.exit", "true"));

        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        if (Boolean.parseBoolean(opts.getOrDefault("hold", "false"))) {
            Class.forName("org.apache.kafka.clients.consumer.internals.ConsumerCoordinator");  // load it now
            emit("{\"event\":\"holding\"}");
            String line;
            while ((line = in.readLine()) != null && !line.trim().equals("go")) { }
            if (line == null) return;
        }
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props);
        AtomicBoolean stop = new AtomicBoolean(false);
        Thread stdin = new Thread(() -> {
            try {
                String line;
                while ((line = in.readLine()) != null && !line.trim().equals("stop")) { }
            } catch (Exception ignored) { }
            stop.set(true);
            consumer.wakeup();
        }, "stdin-watch");
        stdin.setDaemon(true);
        stdin.start();

        ConsumerRebalanceListener listener = new ConsumerRebalanceListener() {
            @Override public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                emit("{\"event\":\"revoked\",\"partitions\":" + partitions(tps) + "}");
            }
            @Override public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                emit("{\"event\":\"assigned\",\"partitions\":" + partitions(tps)
                     + ",\"generation\":" + consumer.groupMetadata().generationId()
                     + ",\"member\":" + quote(consumer.groupMetadata().memberId()) + "}");
            }
            @Override public void onPartitionsLost(Collection<TopicPartition> tps) {
                emit("{\"event\":\"lost\",\"partitions\":" + partitions(tps) + "}");
            }
        };
        if (topics.size() == 1 && topics.get(0).startsWith("^")) {
            // a regular expression the coordinator resolves (KIP-848): kafka-clients 4.x's SubscriptionPattern,
            // looked up by reflection so that the driver still compiles against a 3.x client
            Class<?> pattern = Class.forName("org.apache.kafka.clients.consumer.SubscriptionPattern");
            KafkaConsumer.class.getMethod("subscribe", pattern, ConsumerRebalanceListener.class)
                .invoke(consumer, pattern.getConstructor(String.class).newInstance(topics.get(0)), listener);
        } else {
            consumer.subscribe(topics, listener);
        }
        emit("{\"event\":\"started\"}");

        long consumed = 0;
        long lastRecordAt = 0;
        try {
            while (!stop.get()) {
                ConsumerRecords<byte[], byte[]> records;
                try {
                    records = consumer.poll(Duration.ofMillis(100));
                } catch (WakeupException e) {
                    break;
                }
                if (!records.isEmpty()) {
                    StringBuilder b = new StringBuilder("{\"event\":\"records\",\"records\":[");
                    Map<TopicPartition, OffsetAndMetadata> next = new TreeMap<>(
                        (x, y) -> x.topic().equals(y.topic()) ? Integer.compare(x.partition(), y.partition())
                                                              : x.topic().compareTo(y.topic()));
                    boolean first = true;
                    for (ConsumerRecord<byte[], byte[]> r : records) {
                        if (!first) b.append(',');
                        first = false;
                        String key = r.key() == null ? null : new String(r.key(), StandardCharsets.UTF_8);
                        b.append('[').append(quote(r.topic())).append(',').append(r.partition()).append(',')
                         .append(r.offset()).append(',').append(quote(key)).append(']');
                        next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                    }
                    emit(b.append("]}").toString());
                    consumed += records.count();
                    lastRecordAt = System.currentTimeMillis();
                    if (commit) {
                        try {
                            if (commitDelayMs > 0) Thread.sleep(commitDelayMs);
                            consumer.commitSync(next);
                            StringBuilder c = new StringBuilder("{\"event\":\"committed\",\"offsets\":[");
                            boolean f = true;
                            for (Map.Entry<TopicPartition, OffsetAndMetadata> e : next.entrySet()) {
                                if (!f) c.append(',');
                                f = false;
                                c.append('[').append(quote(e.getKey().topic())).append(',')
                                 .append(e.getKey().partition()).append(',').append(e.getValue().offset()).append(']');
                            }
                            emit(c.append("]}").toString());
                        } catch (WakeupException e) {
                            break;
                        } catch (Exception e) {
                            emit("{\"event\":\"commit_failed\",\"error\":" + quote(e.toString()) + "}");
                        }
                    }
                    if (maxRecords > 0 && consumed >= maxRecords) break;
                } else if (idleExitMs > 0 && consumed > 0
                           && System.currentTimeMillis() - lastRecordAt >= idleExitMs) {
                    break;
                }
            }
        } catch (Exception e) {
            emit("{\"event\":\"error\",\"error\":" + quote(e.toString()) + "}");
        } finally {
            if (closeOnExit) {
                try {
                    consumer.close(Duration.ofSeconds(5));
                } catch (Exception e) {
                    emit("{\"event\":\"error\",\"error\":" + quote(e.toString()) + "}");
                }
            }
            emit("{\"event\":\"closed\"}");
        }
        if (!closeOnExit) Runtime.getRuntime().halt(0);  // a static member's restart: no LeaveGroup
    }
}
