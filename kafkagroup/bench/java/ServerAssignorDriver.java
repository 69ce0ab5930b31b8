// kafkagroup: Apache Kafka 4's server-side assignors (UniformAssignor, RangeAssignor of kafka-group-coordinator)
// driven over stdin/stdout, one JSON object per line each way. The differential test and the benchmark use it.
//
// Request:  {"assignor": "uniform" | "range", "warmup": 0, "rounds": 1,
//            "topics":  [{"name": "t0", "id": "<Uuid string>", "partitions": 3}, ...],
//            "members": [{"id": "m0", "instance": "i0" | null, "topics": ["t0", "gone"],
//                         "owned": [["t0", 0], ["gone", 2]]}, ...]}      (members in HashMap insertion order)
// Reply:    {"assignment": {"m0": [["t0", 0], ...], ...}, "nanos": [assign() per timed round]}
//           or {"error": "<exception class>: <message>"}.
//
// Kafka's input is built the way its coordinator builds it (GroupMetadataManager / TargetAssignmentBuilder):
// - the topics become a MetadataImage (TopicRecord + PartitionRecord replayed into a MetadataDelta), wrapped
//   in KRaftCoordinatorMetadataImage and read through SubscribedTopicDescriberImpl;
// - a member subscribes by name; names are resolved to topic ids against the image and a missing name is
//   left out (as the coordinator's TopicIds does), while the subscription type is decided over the names
//   (ModernGroup.subscriptionType: HOMOGENEOUS when every name has every member);
// - a member's previous target assignment is an Assignment (an unmodifiable map); a claim on a topic name
//   not in the image gets one made-up id per name (a deleted topic's old id, which nobody subscribes to);
// - the inverted target assignment (topic id -> partition -> member) is built from all claims in order;
// - members go into a java.util.HashMap in request order, so groupSpec.memberIds() iterates as Kafka's would.
// Only assignor.assign(groupSpec, describer) is timed, after `warmup` untimed calls on the same input.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.metadata.PartitionRecord;
import org.apache.kafka.common.metadata.TopicRecord;
import org.apache.kafka.coordinator.common.runtime.KRaftCoordinatorMetadataImage;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;
import org.apache.kafka.coordinator.group.modern.SubscribedTopicDescriberImpl;
import org.apache.kafka.image.MetadataDelta;
import org.apache.kafka.image.MetadataImage;
import org.apache.kafka.image.MetadataProvenance;

public final class ServerAssignorDriver {
    private static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 20);
        PrintStream out = new PrintStream(System.out, false, "UTF-8");
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) continue;
            ObjectNode reply;
            try {
                reply = run(JSON.readTree(line));
            } catch (Exception e) {
                reply = JSON.createObjectNode();
                reply.put("error", e.getClass().getSimpleName() + ": " + e.getMessage());
            }
            out.println(JSON.writeValueAsString(reply));
            out.flush();
        }
    }

    private static ObjectNode run(JsonNode request) throws Exception {
        String name = request.get("assignor").asText();
        ConsumerGroupPartitionAssignor assignor;
        if (name.equals("uniform")) assignor = new UniformAssignor();
        else if (name.equals("range")) assignor = new RangeAssignor();
        else throw new IllegalArgumentException("unknown assignor " + name);

        // The topics as a metadata image.
        MetadataDelta delta = new MetadataDelta.Builder().setImage(MetadataImage.EMPTY).build();
        Map<String, Uuid> idOf = new HashMap<>();
        Map<Uuid, String> nameOf = new HashMap<>();
        for (JsonNode topic : request.get("topics")) {
            String topicName = topic.get("name").asText();
            Uuid id = topic.hasNonNull("id") ? Uuid.fromString(topic.get("id").asText()) : Uuid.randomUuid();
            idOf.put(topicName, id);
            nameOf.put(id, topicName);
            delta.replay(new TopicRecord().setName(topicName).setTopicId(id));
            for (int p = 0; p < topic.get("partitions").asInt(); p++) {
                delta.replay(new PartitionRecord().setTopicId(id).setPartitionId(p)
                    .setReplicas(List.of(1)).setIsr(List.of(1)).setLeader(1).setLeaderEpoch(0).setPartitionEpoch(0));
            }
        }
        MetadataImage image = delta.apply(MetadataProvenance.EMPTY);
        SubscribedTopicDescriberImpl describer = new SubscribedTopicDescriberImpl(new KRaftCoordinatorMetadataImage(image));

        Map<String, Uuid> goneIds = new HashMap<>();   // claims on topics missing from the image
        Map<String, Integer> subscribersPerName = new HashMap<>();
        Map<String, MemberSubscriptionAndAssignmentImpl> members = new HashMap<>();
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        int memberCount = 0;
        for (JsonNode member : request.get("members")) {
            memberCount++;
            String memberId = member.get("id").asText();
            Optional<String> instance = member.hasNonNull("instance")
                ? Optional.of(member.get("instance").asText()) : Optional.empty();
            Set<Uuid> subscribed = new HashSet<>();
            Set<String> names = new HashSet<>();
            for (JsonNode t : member.get("topics")) {
                String topicName = t.asText();
                if (names.add(topicName)) subscribersPerName.merge(topicName, 1, Integer::sum);
                Uuid id = idOf.get(topicName);
                if (id != null) subscribed.add(id);
            }
            Map<Uuid, Set<Integer>> owned = new HashMap<>();
            if (member.has("owned")) {
                for (JsonNode claim : member.get("owned")) {
                    String topicName = claim.get(0).asText();
                    int partition = claim.get(1).asInt();
                    Uuid id = idOf.get(topicName);
                    if (id == null) id = goneIds.computeIfAbsent(topicName, n -> Uuid.randomUuid());
                    owned.computeIfAbsent(id, k -> new HashSet<>()).add(partition);
                    inverted.computeIfAbsent(id, k -> new HashMap<>()).put(partition, memberId);
                }
            }
            Assignment assignment = new Assignment(owned);   // wraps the map unmodifiable, as the coordinator's
            members.put(memberId, new MemberSubscriptionAndAssignmentImpl(
                Optional.empty(), instance, Collections.unmodifiableSet(subscribed), assignment));
        }
        SubscriptionType type = SubscriptionType.HOMOGENEOUS;
        for (int count : subscribersPerName.values())
            if (count != memberCount) type = SubscriptionType.HETEROGENEOUS;
        GroupSpecImpl spec = new GroupSpecImpl(members, type, inverted);

        int warmup = request.has("warmup") ? request.get("warmup").asInt() : 0;
        int rounds = request.has("rounds") ? Math.max(1, request.get("rounds").asInt()) : 1;
        for (int i = 0; i < warmup; i++) assignor.assign(spec, describer);
        ObjectNode reply = JSON.createObjectNode();
        ArrayNode nanos = reply.putArray("nanos");
        GroupAssignment result = null;
        for (int i = 0; i < rounds; i++) {
            long start = System.nanoTime();
            result = assignor.assign(spec, describer);
            nanos.add(System.nanoTime() - start);
        }
        ObjectNode assignment = reply.putObject("assignment");
        for (Map.Entry<String, MemberAssignment> e : result.members().entrySet()) {
            ArrayNode list = assignment.putArray(e.getKey());
            // topic name order, then partition: a stable text for comparison
            TreeMap<String, TreeSet<Integer>> sorted = new TreeMap<>();
            for (Map.Entry<Uuid, Set<Integer>> tp : e.getValue().partitions().entrySet()) {
                String topicName = nameOf.getOrDefault(tp.getKey(), "?" + tp.getKey());
                sorted.computeIfAbsent(topicName, k -> new TreeSet<>()).addAll(tp.getValue());
            }
            for (Map.Entry<String, TreeSet<Integer>> tp : sorted.entrySet())
                for (int p : tp.getValue()) list.addArray().add(tp.getKey()).add(p);
        }
        return reply;
    }
}
