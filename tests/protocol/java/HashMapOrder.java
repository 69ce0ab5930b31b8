// Prints the iteration order of a java.util.HashMap filled the way Kafka's
// CollectionUtils.groupPartitionsByTopic fills it: computeIfAbsent(topic) once per partition.
// Input (stdin): one case per line, keys separated by '\t'. Output: one line per case, same format.
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

public class HashMapOrder {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        StringBuilder out = new StringBuilder();
        String line;
        while ((line = in.readLine()) != null) {
            Map<String, List<Integer>> grouped = new HashMap<>();
            if (!line.isEmpty()) {
                for (String key : line.split("\t", -1)) {
                    grouped.computeIfAbsent(key, k -> new ArrayList<>()).add(0);
                }
            }
            out.append(String.join("\t", grouped.keySet())).append('\n');
        }
        System.out.print(out);
    }
}
