#include "kafkagroup/subscriptions.hpp"

#include <cstring>

namespace kafkagroup {

bool subscriptions_uniform(const Problem& p, const Prepared& pr) {
    if (pr.num_members == 0) return false;
    std::vector<char> in_first(static_cast<std::size_t>(pr.num_topics), 0);
    const int64_t first_size = p.sub_offsets[1] - p.sub_offsets[0];
    for (int64_t i = p.sub_offsets[0]; i < p.sub_offsets[1]; ++i) in_first[p.sub_topics[i]] = 1;
    // Topics are unique per member (validated), so equal size + inclusion means equal sets. A list in
    // the same order as member 0's is recognised by a memcmp first (the usual case: clients list their
    // subscription sorted).
    const int32_t* first = p.sub_topics.data + p.sub_offsets[0];
    for (int32_t m = 1; m < pr.num_members; ++m) {
        if (p.sub_offsets[m + 1] - p.sub_offsets[m] != first_size) return false;
        const int32_t* list = p.sub_topics.data + p.sub_offsets[m];
        // (two empty lists are equal without memcmp: sub_topics.data may be null, which memcmp must not get)
        if (first_size == 0 || std::memcmp(list, first, static_cast<std::size_t>(first_size) * sizeof(int32_t)) == 0)
            continue;
        for (int64_t i = 0; i < first_size; ++i)
            if (!in_first[list[i]]) return false;
    }
    return true;
}

std::vector<char> subscribed_topics(const Problem& p, const Prepared& pr, bool uniform) {
    std::vector<char> subscribed(static_cast<std::size_t>(pr.num_topics), 0);
    const int64_t end = uniform ? p.sub_offsets[1] : static_cast<int64_t>(p.sub_topics.size);
    for (int64_t i = 0; i < end; ++i) subscribed[p.sub_topics[i]] = 1;
    return subscribed;
}

}  // namespace kafkagroup
