// RangeAssignor: per topic, partitions in order, subscribers in MemberInfo order; each subscriber gets
// a contiguous range of floor(P/n) partitions and the first P mod n subscribers one more.
// Without rack awareness this is a closed formula per topic: O(P + subscriptions). With member and
// replica racks, range_racks.cpp replays Kafka's KIP-881 procedure exactly.
#include <algorithm>

#include "kafkagroup/assignors.hpp"
#include "kafkagroup/huge_pages.hpp"
#include "kafkagroup/range_racks.hpp"

namespace kafkagroup {

std::vector<int32_t> contiguous_ranges(const Prepared& pr, const TopicSubscribers& subs) {
    std::vector<int32_t> owner = advised_vector(static_cast<std::size_t>(pr.num_partitions), kUnassigned);
    for (int32_t t = 0; t < pr.num_topics; ++t) {
        const int64_t n = subs.count(t);
        const int32_t count = pr.topic_base[t + 1] - pr.topic_base[t];
        if (n == 0 || count == 0) continue;
        const int64_t per = count / n, extra = count % n;
        int32_t* out = owner.data() + pr.topic_base[t];
        const int32_t* consumers = subs.begin(t);
        // Ranges of 0 or 1 (partitions per topic about the subscriber count, e.g. 2,000 x 2,000): the run
        // loop below would pay its set-up once per partition; the subscriber list is copied instead.
        if (per == 0) {
            std::copy_n(consumers, extra, out);
            continue;
        }
        if (per == 1) {
            for (int64_t i = 0; i < extra; ++i) out[2 * i] = out[2 * i + 1] = consumers[i];
            std::copy_n(consumers + extra, n - extra, out + 2 * extra);
            continue;
        }
        // Short ranges (a few partitions each, e.g. 5,000 partitions over 1,000 subscribers): each is written as
        // a block of kBlock, two vector stores, whose tail the next range overwrites, while a whole block fits
        // in the topic; a loop of length-dependent trip count cost ~7 instructions a partition there.
        constexpr int64_t kBlock = 8;
        const int32_t* const topic_end = out + count;
        for (int64_t i = 0; i < n; ++i) {
            const int32_t c = consumers[i];
            const int64_t length = per + (i < extra ? 1 : 0);
            if (length <= kBlock && topic_end - out >= kBlock) {
                for (int64_t k = 0; k < kBlock; ++k) out[k] = c;
                out += length;
                continue;
            }
            for (int64_t k = 0; k < length; ++k) *out++ = c;
        }
    }
    return owner;
}

std::vector<int32_t> assign_range(const Problem& p, const Prepared& pr) {
    const TopicSubscribers subs = topic_subscribers(p, pr);
    if (pr.has_racks) return assign_range_with_racks(p, pr, subs);
    return contiguous_ranges(pr, subs);
}

}  // namespace kafkagroup
