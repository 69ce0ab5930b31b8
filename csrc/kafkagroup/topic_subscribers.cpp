#include "kafkagroup/assignors.hpp"

namespace kafkagroup {

TopicSubscribers topic_subscribers(const Problem& p, const Prepared& pr) {
    TopicSubscribers out;
    out.offsets.assign(static_cast<std::size_t>(pr.num_topics) + 1, 0);
    for (std::size_t i = 0; i < p.sub_topics.size; ++i) ++out.offsets[p.sub_topics[i] + 1];
    for (int32_t t = 0; t < pr.num_topics; ++t) out.offsets[t + 1] += out.offsets[t];
    out.members.resize(p.sub_topics.size);
    std::vector<int64_t> fill(out.offsets.begin(), out.offsets.end() - 1);
    // Members are visited in ascending id, so every topic's list comes out sorted.
    for (int32_t m = 0; m < pr.num_members; ++m)
        for (int64_t i = p.sub_offsets[m]; i < p.sub_offsets[m + 1]; ++i) out.members[fill[p.sub_topics[i]]++] = m;
    return out;
}

}  // namespace kafkagroup
