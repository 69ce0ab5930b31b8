#include "kafkagroup/metrics.hpp"

#include <algorithm>
#include <limits>

namespace kafkagroup {

bool subscriptions_uniform(const Problem& p, const Prepared& pr) {
    if (pr.num_members == 0) return false;
    std::vector<char> in_first(static_cast<std::size_t>(pr.num_topics), 0);
    const int64_t first_size = p.sub_offsets[1] - p.sub_offsets[0];
    for (int64_t i = p.sub_offsets[0]; i < p.sub_offsets[1]; ++i) in_first[p.sub_topics[i]] = 1;
    // Topics are unique per member (validated), so equal size + inclusion means equal sets.
    for (int32_t m = 1; m < pr.num_members; ++m) {
        if (p.sub_offsets[m + 1] - p.sub_offsets[m] != first_size) return false;
        for (int64_t i = p.sub_offsets[m]; i < p.sub_offsets[m + 1]; ++i)
            if (!in_first[p.sub_topics[i]]) return false;
    }
    return true;
}

Metrics compute_metrics(const Problem& p, const Prepared& pr, const std::vector<int32_t>& owner,
                        const std::vector<int32_t>& withheld, const std::vector<int32_t>& prev_owner) {
    Metrics out;
    const std::size_t M = static_cast<std::size_t>(pr.num_members);
    std::vector<int64_t> load(M, 0);
    std::vector<char> is_withheld(owner.size(), 0);
    for (int32_t part : withheld) is_withheld[part] = 1;
    out.withheld = static_cast<int64_t>(withheld.size());

    std::vector<char> topic_subscribed(static_cast<std::size_t>(pr.num_topics), 0);
    for (std::size_t i = 0; i < p.sub_topics.size; ++i) topic_subscribed[p.sub_topics[i]] = 1;

    for (int32_t t = 0; t < pr.num_topics; ++t) {
        for (int32_t part = pr.topic_base[t]; part < pr.topic_base[t + 1]; ++part) {
            const int32_t m = owner[part];
            if (m >= 0) {
                ++load[m];
                ++out.assigned;
            } else if (topic_subscribed[t] && !is_withheld[part]) {
                ++out.unassigned;
            }
            if (prev_owner[part] >= 0 && m != prev_owner[part]) ++out.moved;
        }
    }
    if (M == 0) return out;
    out.max_load = *std::max_element(load.begin(), load.end());
    out.min_load = *std::min_element(load.begin(), load.end());

    if (subscriptions_uniform(p, pr)) {
        out.balance_gap = out.max_load - out.min_load;
        // Exact minimum of `moved` over balanced assignments: member i keeps at most min(owned_i, quota_i);
        // quotas are q or q+1 (r members get q+1), best given to the members that own more than q.
        int64_t subscribed_partitions = 0;
        for (int32_t t = 0; t < pr.num_topics; ++t)
            if (topic_subscribed[t]) subscribed_partitions += pr.topic_base[t + 1] - pr.topic_base[t];
        const int64_t q = subscribed_partitions / static_cast<int64_t>(M);
        const int64_t r = subscribed_partitions % static_cast<int64_t>(M);
        std::vector<int64_t> owned(M, 0);
        int64_t total_owned = 0;
        for (int32_t prev : prev_owner)
            if (prev >= 0) { ++owned[prev]; ++total_owned; }
        int64_t kept = 0, above_quota = 0;
        for (int64_t o : owned) {
            kept += std::min(o, q);
            if (o > q) ++above_quota;
        }
        kept += std::min(r, above_quota);
        out.moved_lower_bound = total_owned - kept;
    } else {
        // Partitions that could still move to an eligible member with >= 2 fewer partitions.
        std::vector<int64_t> min_subscriber_load(static_cast<std::size_t>(pr.num_topics),
                                                 std::numeric_limits<int64_t>::max());
        for (std::size_t m = 0; m < M; ++m)
            for (int64_t i = p.sub_offsets[m]; i < p.sub_offsets[m + 1]; ++i) {
                int64_t& best = min_subscriber_load[p.sub_topics[i]];
                best = std::min(best, load[m]);
            }
        int64_t gap = 0;
        for (int32_t t = 0; t < pr.num_topics; ++t) {
            if (!topic_subscribed[t]) continue;
            for (int32_t part = pr.topic_base[t]; part < pr.topic_base[t + 1]; ++part) {
                const int32_t m = owner[part];
                if (m >= 0 && min_subscriber_load[t] <= load[m] - 2) ++gap;
            }
        }
        out.balance_gap = gap;
    }
    return out;
}

}  // namespace kafkagroup
