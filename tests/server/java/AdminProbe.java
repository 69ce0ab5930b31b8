// Apache Kafka's Java AdminClient against one bootstrap address: creates, grows, describes, trims and deletes
// topics and prints one line per outcome, "<step> ok" or "<step> <exception class simple name>", for
// tests/server/test_server_admin.py. Run as a single-file program:
//   java -cp 'build/kafka4/lib/*' tests/server/java/AdminProbe.java 127.0.0.1:9092 prefix
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;

public class AdminProbe {
    static void report(String step, KafkaFuture<?> future) {
        try {
            Object value = future.get();
            System.out.println(step + " ok" + (value == null ? "" : " " + value));
        } catch (ExecutionException e) {
            System.out.println(step + " " + e.getCause().getClass().getSimpleName());
        } catch (InterruptedException e) {
            throw new RuntimeException(e);
        }
    }

    public static void main(String[] args) throws Exception {
        String p = args[1];
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0],
                                               AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "20000",
                                               AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000"))) {
            var created = admin.createTopics(List.of(
                new NewTopic(p + "a", 2, (short) 1).configs(Map.of("max.message.bytes", "4000")),
                new NewTopic(p + "zero", 0, (short) 1),
                new NewTopic(p + "rf3", 1, (short) 3),
                new NewTopic(p + "cfg", 1, (short) 1).configs(Map.of("no.such.key", "1")))).values();
            for (String name : List.of("a", "zero", "rf3", "cfg")) report("create." + name, created.get(p + name));
            report("create.again", admin.createTopics(List.of(new NewTopic(p + "a", 2, (short) 1))).all());
            report("create.validate_only", admin.createTopics(List.of(new NewTopic(p + "v", 2, (short) 1)),
                                                              new CreateTopicsOptions().validateOnly(true)).all());
            report("grow", admin.createPartitions(Map.of(p + "a", NewPartitions.increaseTo(3))).all());
            report("grow.same", admin.createPartitions(Map.of(p + "a", NewPartitions.increaseTo(3))).all());
            report("grow.missing", admin.createPartitions(Map.of(p + "none", NewPartitions.increaseTo(3))).all());
            report("partitions", admin.describeTopics(List.of(p + "a")).allTopicNames()
                .thenApply(d -> d.get(p + "a").partitions().size()));
            ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, p + "a");
            report("config.max.message.bytes", admin.describeConfigs(List.of(topic)).all()
                .thenApply(m -> { Config c = m.get(topic); var e = c.get("max.message.bytes");
                                  return e.value() + "/" + e.source(); }));
            report("config.cleanup.policy", admin.describeConfigs(List.of(topic)).all()
                .thenApply(m -> { var e = m.get(topic).get("cleanup.policy"); return e.value() + "/" + e.source(); }));
            report("delete_records", admin.deleteRecords(Map.of(new TopicPartition(p + "a", 0),
                                                                RecordsToDelete.beforeOffset(0))).all());
            report("delete", admin.deleteTopics(List.of(p + "a")).all());
            report("delete.missing", admin.deleteTopics(List.of(p + "a")).all());
        }
    }
}
