// RoundRobinAssignor: all partitions of every subscribed topic, topics in name order, partitions in
// order, dealt to members in MemberInfo order through one circular cursor; a member not subscribed to
// the partition's topic is skipped. Java advances the cursor member by member (O(P * M) in the worst
// case); here each topic finds its first subscriber at or after the cursor by binary search and then
// deals cyclically through its own subscriber list, which visits exactly the same members: O(P + T log M).
#include <algorithm>

#include "kafkagroup/assignors.hpp"
#include "kafkagroup/huge_pages.hpp"

namespace kafkagroup {

std::vector<int32_t> assign_roundrobin(const Problem& p, const Prepared& pr) {
    std::vector<int32_t> owner = advised_vector(static_cast<std::size_t>(pr.num_partitions), kUnassigned);
    if (pr.num_members == 0) return owner;
    const TopicSubscribers subs = topic_subscribers(p, pr);
    int32_t cursor = 0;  // the member the circular iterator points at
    for (int32_t t = 0; t < pr.num_topics; ++t) {
        const int64_t n = subs.count(t);
        const int32_t count = pr.topic_base[t + 1] - pr.topic_base[t];
        if (n == 0 || count == 0) continue;
        const int32_t* first = subs.begin(t);
        int64_t j = std::lower_bound(first, subs.end(t), cursor) - first;
        if (j == n) j = 0;
        const int32_t base = pr.topic_base[t];
        for (int32_t k = 0; k < count; ++k) {
            owner[base + k] = first[j];
            if (++j == n) j = 0;
        }
        const int32_t last = owner[base + count - 1];
        cursor = last + 1 == pr.num_members ? 0 : last + 1;
    }
    return owner;
}

}  // namespace kafkagroup
