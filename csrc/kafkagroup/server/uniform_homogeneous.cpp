// Kafka 4's UniformHomogeneousAssignmentBuilder, with the fewest moves.
//
// Kafka: with P partitions over M members, quotas are floor(P/M) and one more for the first P mod M
// members *in HashMap iteration order*; each member keeps its previous partitions up to its quota, the
// rest are freed and handed to the members below quota. Which members get the larger quota is an accident
// of the member ids' hashes, so a member that held floor(P/M)+1 partitions may be cut to floor(P/M) while
// a member that held floor(P/M) is given one more: an avoidable move.
//
// Here the larger quotas go first to members that previously held more than floor(P/M) (each such grant
// saves exactly one move; no other choice saves any), then to the others in member order. Every member
// keeps min(held, quota) of its previous partitions, so moves = sum(max(0, held - quota)): the minimum
// over all assignments whose loads differ by at most one (all of which have these quota sizes). The
// freed and new partitions go to members below quota in member order, each a run of ascending ids.
// O(P + M), no sort.
#include "kafkagroup/server/server_assignors.hpp"

namespace kafkagroup {
namespace server {

std::vector<int32_t> uniform_homogeneous(const Problem& p, const Prepared& pr, const std::vector<int32_t>& prev_owner) {
    const int32_t M = pr.num_members;
    std::vector<int32_t> owner(static_cast<std::size_t>(pr.num_partitions), kUnassigned);
    // Every member's list is member 0's; topics are unique within it (validated).
    const int32_t* topics = p.sub_topics.data + p.sub_offsets[0];
    const int64_t num_topics = p.sub_offsets[1] - p.sub_offsets[0];
    int64_t total = 0;
    for (int64_t i = 0; i < num_topics; ++i) total += pr.topic_base[topics[i] + 1] - pr.topic_base[topics[i]];
    if (total == 0) return owner;

    const int64_t base_quota = total / M;
    int64_t extra = total % M;
    std::vector<int64_t> held(static_cast<std::size_t>(M), 0);
    for (int64_t i = 0; i < num_topics; ++i)
        for (int32_t part = pr.topic_base[topics[i]]; part < pr.topic_base[topics[i] + 1]; ++part)
            if (prev_owner[part] >= 0) ++held[prev_owner[part]];

    std::vector<int64_t> quota(static_cast<std::size_t>(M), base_quota);
    for (int32_t m = 0; m < M && extra > 0; ++m)
        if (held[m] > base_quota) ++quota[m], --extra;
    for (int32_t m = 0; m < M && extra > 0; ++m)
        if (quota[m] == base_quota) ++quota[m], --extra;

    // Keep up to quota (a member over quota keeps its lowest ids), free the rest.
    std::vector<int32_t> free_parts;
    std::vector<int64_t>& used = held;   // reused: held[] is no longer needed once quotas are set
    std::fill(used.begin(), used.end(), 0);
    for (int64_t i = 0; i < num_topics; ++i)
        for (int32_t part = pr.topic_base[topics[i]]; part < pr.topic_base[topics[i] + 1]; ++part) {
            const int32_t m = prev_owner[part];
            if (m >= 0 && used[m] < quota[m]) {
                owner[part] = m;
                ++used[m];
            } else {
                free_parts.push_back(part);
            }
        }
    std::size_t next = 0;
    for (int32_t m = 0; m < M && next < free_parts.size(); ++m)
        for (int64_t k = used[m]; k < quota[m] && next < free_parts.size(); ++k) owner[free_parts[next++]] = m;
    return owner;
}

}  // namespace server
}  // namespace kafkagroup
