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
//
// range_direct is the whole call when the previous target assignment is clean (clean_claims.hpp): one walk
// over the claims counts those the new ranges keep, and the loads and holders come from the split itself,
// so neither previous_owners' array nor compute_metrics' pass over the partitions is made. The metrics are
// compute_metrics' (complete_metrics finishes both).
#include <algorithm>
#include <optional>

#include "kafkagroup/assignors.hpp"
#include "kafkagroup/metrics.hpp"
#include "kafkagroup/server/clean_claims.hpp"
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

std::optional<AssignResult> range_direct(const Problem& p, const Prepared& pr) {
    const TopicSubscribers takers = range_takers(p, pr);
    const std::size_t M = static_cast<std::size_t>(pr.num_members);
    AssignResult result;
    result.owner = contiguous_ranges(pr, takers);
    // One walk over the claims: a claim is kept when the new range holds it for its claimant.
    std::vector<int64_t> owned(M, 0);
    int64_t claims = 0, kept = 0;
    if (pr.has_owned) {
        std::vector<char> named(static_cast<std::size_t>(pr.num_partitions), 0);
        char named_twice = 0;
        const bool subscribed = walk_claims_subscribed(p, pr, [&](int32_t m, const int32_t* first, const int32_t* last) {
            const int32_t* const owner = result.owner.data();
            char* const seen = named.data();
            char twice = 0;
            int64_t mine = 0;
            for (const int32_t* c = first; c != last; ++c) {
                const int32_t part = *c;   // read once: the char store below may alias it
                twice |= seen[part];
                seen[part] = 1;
                mine += owner[part] == m;
            }
            named_twice |= twice;
            kept += mine;
        });
        if (!subscribed || named_twice) return std::nullopt;
        for (std::size_t m = 0; m < M; ++m) owned[m] = p.owned_offsets[m + 1] - p.owned_offsets[m];
        claims = static_cast<int64_t>(p.owned_partitions.size);
    }
    // Loads and holders from the split itself (the first `listed` takers of a topic receive
    // per + 1 for the first `extra`, per after), not from a pass over owner[].
    std::vector<int64_t> load(M, 0);
    Metrics& metrics = result.metrics;
    for (int32_t t = 0; t < pr.num_topics; ++t) {
        const int64_t n = takers.count(t), count = pr.topic_base[t + 1] - pr.topic_base[t];
        if (n == 0) {
            if (pr.topic_subscribed[t]) metrics.unassigned += count;   // (takers exist for subscribed topics)
            continue;
        }
        const int64_t per = count / n, extra = count % n, listed = per == 0 ? extra : n;
        const int32_t* const members = takers.begin(t);
        for (int64_t i = 0; i < listed; ++i) load[members[i]] += per + (i < extra);
        metrics.assigned += count;
    }
    metrics.moved = claims - kept;
    const auto holders = [&] {
        TopicHolders h;
        h.offsets.assign(static_cast<std::size_t>(pr.num_topics) + 1, 0);
        h.members.reserve(static_cast<std::size_t>(metrics.assigned));   // at most one holder per partition
        h.held.reserve(static_cast<std::size_t>(metrics.assigned));
        for (int32_t t = 0; t < pr.num_topics; ++t) {
            const int64_t n = takers.count(t), count = pr.topic_base[t + 1] - pr.topic_base[t];
            const int64_t per = n == 0 ? 0 : count / n, extra = n == 0 ? 0 : count % n;
            const int64_t listed = n == 0 ? 0 : per == 0 ? extra : n;
            for (int64_t i = 0; i < listed; ++i) {
                h.members.push_back(takers.begin(t)[i]);
                h.held.push_back(static_cast<int32_t>(per + (i < extra)));
            }
            h.offsets[t + 1] = static_cast<int64_t>(h.members.size());
        }
        return h;
    };
    complete_metrics(p, pr, load, owned, claims, true, holders, metrics);
    return result;
}

}  // namespace server
}  // namespace kafkagroup
