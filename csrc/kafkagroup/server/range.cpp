// Kafka 4's server RangeAssignor (org.apache.kafka.coordinator.group.assignor.RangeAssignor, 4.4.0).
//
// Kafka sorts the members (static ones first by instance id, then by member id: our member order) and,
// for each topic, hands each subscriber in that order the next contiguous range: floor(P/n) partitions,
// one more while P mod n lasts. Its homogeneous and heterogeneous paths differ only in how they count a
// topic's subscribers, so both are the classic range split without racks, which this shares
// (contiguous_ranges, csrc/kafkagroup/range.cpp). Racks are ignored, as Kafka 4.4.0 ignores them.
//
// Only the subscribers that receive a partition are collected (range_takers): a topic of P partitions and
// n > P subscribers gives one partition to each of its first P subscribers and nothing to the others,
// whatever n is. At 10,000 members x 1,000 topics of 500 partitions with three quarters subscribed, that is
// 500 of each topic's 7,500 subscribers, all found among the first ~700 members: the scan stops there
// instead of listing 7.5M subscriptions (a full per-topic CSR was 2/3 of the call).
#include <algorithm>

#include "kafkagroup/assignors.hpp"
#include "kafkagroup/server/server_assignors.hpp"

namespace kafkagroup {
namespace server {
namespace {

// contiguous_ranges' input, reduced to what the split reads: topic t's first min(n, P_t) subscribers in
// member order, and count(t) = n when n <= P_t, or P_t + 1 standing for "more subscribers than partitions"
// (the split is then floor(P_t/n) = 0 each and one more for the first P_t, for any such n).
// O(T + subscriptions scanned); the scan ends once every topic with partitions has more than P_t subscribers.
TopicSubscribers range_takers(const Problem& p, const Prepared& pr) {
    if (pr.uniform) return topic_subscribers(p, pr);   // one shared list 0..M-1, no per-topic copy
    const int32_t T = pr.num_topics;
    TopicSubscribers out;
    out.first.assign(static_cast<std::size_t>(T), 0);
    out.size.assign(static_cast<std::size_t>(T), 0);
    int64_t at = 0;
    int32_t open = 0;   // topics with partitions that have not yet seen more subscribers than partitions
    for (int32_t t = 0; t < T; ++t) {
        const int32_t count = pr.topic_base[t + 1] - pr.topic_base[t];
        out.first[t] = at;
        at += count;
        open += count > 0;
    }
    out.members.resize(static_cast<std::size_t>(at));
    // cap[t] = P_t: seen[t] (out.size) counts up to cap + 1, after which topic t is settled.
    const int32_t* const base = pr.topic_base.data();
    int64_t* const seen = out.size.data();
    const int64_t* const first = out.first.data();
    int32_t* const takers = out.members.data();
    const int32_t* const topics = p.sub_topics.data;
    for (int32_t m = 0; m < pr.num_members && open > 0; ++m)
        for (int64_t i = p.sub_offsets[m], end = p.sub_offsets[m + 1]; i < end; ++i) {
            const int32_t t = topics[i];
            const int64_t cap = base[t + 1] - base[t];
            const int64_t s = seen[t];
            if (s < cap) {
                takers[first[t] + s] = m;
                seen[t] = s + 1;
            } else if (s == cap && cap > 0) {   // one more subscriber than partitions: settled
                seen[t] = s + 1;
                --open;
            }
        }
    return out;
}

}  // namespace

std::vector<int32_t> assign_range(const Problem& p, const Prepared& pr) {
    return contiguous_ranges(pr, range_takers(p, pr));
}

}  // namespace server
}  // namespace kafkagroup
