#include "kafkagroup/metrics.hpp"

#include <algorithm>
#include <functional>
#include <limits>
#include <stdexcept>

#include "kafkagroup/runs.hpp"
#include "kafkagroup/stable_order.hpp"
#include "kafkagroup/subscriptions.hpp"

namespace kafkagroup {

TopicHolders topic_holders(const Prepared& pr, const std::vector<int32_t>& owner, int64_t assigned) {
    const int32_t T = pr.num_topics;
    const std::size_t M = static_cast<std::size_t>(pr.num_members);
    TopicHolders out;
    out.offsets.assign(static_cast<std::size_t>(T) + 1, 0);
    out.members.reserve(static_cast<std::size_t>(assigned));  // at most one holder per assigned partition
    out.held.reserve(static_cast<std::size_t>(assigned));
    std::vector<int32_t> stamp(M, -1), slot(M, 0);
    for (int32_t t = 0; t < T; ++t) {
        for (int32_t part = pr.topic_base[t]; part < pr.topic_base[t + 1]; ++part) {
            const int32_t m = owner[part];
            if (m < 0) continue;
            if (stamp[m] != t) {
                stamp[m] = t;
                slot[m] = static_cast<int32_t>(out.members.size());
                out.members.push_back(m);
                out.held.push_back(0);
            }
            ++out.held[slot[m]];
        }
        out.offsets[t + 1] = static_cast<int64_t>(out.members.size());
    }
    return out;
}

void complete_metrics(const Problem& p, const Prepared& pr, const std::vector<int64_t>& load,
                      const std::vector<int64_t>& owned, int64_t total_owned, bool nothing_withheld,
                      const std::function<TopicHolders()>& holders_of, Metrics& out) {
    const std::size_t M = static_cast<std::size_t>(pr.num_members);
    const std::vector<char>& topic_subscribed = pr.topic_subscribed;
    if (M == 0) return;
    out.max_load = *std::max_element(load.begin(), load.end());
    out.min_load = *std::min_element(load.begin(), load.end());

    if (pr.uniform) {
        // Balanced means max - min <= 1; the gap is how far above that the assignment is (0 = optimal).
        out.balance_gap = std::max<int64_t>(0, out.max_load - out.min_load - 1);
        // Exact minimum of `moved` over balanced assignments: member i keeps at most min(owned_i, quota_i);
        // quotas are q or q+1 (r members get q+1), best given to the members that own more than q.
        int64_t subscribed_partitions = 0;
        for (int32_t t = 0; t < pr.num_topics; ++t)
            if (topic_subscribed[t]) subscribed_partitions += pr.topic_base[t + 1] - pr.topic_base[t];
        const int64_t q = subscribed_partitions / static_cast<int64_t>(M);
        const int64_t r = subscribed_partitions % static_cast<int64_t>(M);
        int64_t kept = 0, above_quota = 0;
        for (int64_t o : owned) {
            kept += std::min(o, q);
            if (o > q) ++above_quota;
        }
        kept += std::min(r, above_quota);
        out.moved_lower_bound = total_owned - kept;
    } else {
        // With max - min <= 1 no member is two below another: nothing can improve (gap 0) without a pass.
        int64_t gap = 0;
        if (out.max_load - out.min_load > 1) {
            // Partitions that could still move, directly or through a chain of moves, to a member with >= 2
            // fewer partitions: 0 exactly when the load vector is optimal (decreasingly minimal). reach[x] is
            // the lowest load x can pass a partition to (itself included): members in ascending load, each
            // unlabelled one labels every member that can reach it; a topic is expanded once.
            // The holders of each topic with their counts, then two passes over subscriptions.
            const int32_t T = pr.num_topics;
            const TopicHolders h = holders_of();
            const std::vector<int64_t>& holder_off = h.offsets;
            const std::vector<int32_t>& holders = h.members;
            const std::vector<int32_t>& held = h.held;
            // Members by ascending load, ties by id.
            const std::vector<int32_t> by_load = stable_order_by_key(load);
            constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
            std::vector<int64_t> reach(M, kNone);
            std::vector<char> topic_done(static_cast<std::size_t>(T), 0);
            std::vector<int32_t> queue;
            queue.reserve(M);
            // min_subscriber_reach[t]: the least reach among t's subscribers, which is the reach of the member
            // that expands t: reach values are handed out in ascending order (roots by ascending load) and every
            // member is dequeued, scanning all its topics, before a larger value is handed out. So the search
            // ends once every subscribed topic is expanded (at 10,000 members with 750 topics each, after a few
            // members instead of 7.5M subscriptions, twice).
            std::vector<int64_t> min_subscriber_reach(static_cast<std::size_t>(T), kNone);
            int64_t topics_left = 0;
            for (int32_t t = 0; t < T; ++t) topics_left += topic_subscribed[t] != 0;
            for (std::size_t r = 0; r < by_load.size() && topics_left > 0; ++r) {
                const int32_t v = by_load[r];
                if (reach[v] != kNone) continue;
                reach[v] = load[v];
                queue.assign(1, v);
                for (std::size_t head = 0; head < queue.size() && topics_left > 0; ++head) {
                    const int32_t y = queue[head];
                    for (int64_t i = p.sub_offsets[y]; i < p.sub_offsets[y + 1]; ++i) {
                        const int32_t t = p.sub_topics[i];
                        if (topic_done[t]) continue;
                        topic_done[t] = 1;
                        min_subscriber_reach[t] = load[v];
                        --topics_left;
                        for (int64_t k = holder_off[t]; k < holder_off[t + 1]; ++k)
                            if (reach[holders[k]] == kNone) reach[holders[k]] = load[v], queue.push_back(holders[k]);
                    }
                }
            }
            for (int32_t t = 0; t < T; ++t) {
                if (!topic_subscribed[t]) continue;
                for (int64_t k = holder_off[t]; k < holder_off[t + 1]; ++k)
                    if (min_subscriber_reach[t] <= load[holders[k]] - 2) gap += held[k];
            }
        }
        out.balance_gap = gap;
        // With an optimal load vector the maximum load is the least any valid assignment can have, so a
        // member owning more than it must lose the excess: a valid lower bound on `moved`.
        if (gap == 0 && nothing_withheld) {
            int64_t bound = 0;
            for (int64_t o : owned) bound += std::max<int64_t>(0, o - out.max_load);
            out.moved_lower_bound = bound;
        }
    }
}

PartitionTally::PartitionTally(const Prepared& pr, const PreviousOwners& prev)
    : pr_(pr), prev_(prev), loads_(static_cast<std::size_t>(pr.num_members), 0) {}

namespace {

// One block of now[] against before[] partition by partition: the loads one increment each, the free and
// moved partitions counted in loops of their own that GCC vectorises (compares and sums, no branch): ~14
// instructions a partition on interleaved owners (a range or round-robin result after churn) against ~19 with
// all three in one loop, its branches on every owner.
struct BlockCounts {
    int64_t free = 0, moved = 0;
};
inline BlockCounts count_block(const int32_t* now, const int32_t* before, int32_t begin, int32_t end, int64_t* loads) {
    for (int32_t i = begin; i < end; ++i)
        if (now[i] >= 0) ++loads[now[i]];
    int32_t free = 0, moved = 0;   // (int32: a block is kShortRunBlock partitions)
    for (int32_t i = begin; i < end; ++i) free += now[i] < 0;
    for (int32_t i = begin; i < end; ++i) moved += (before[i] >= 0) & (before[i] != now[i]);
    return BlockCounts{free, moved};
}

// A run shorter than kShortRun starts a block of kShortRunBlock partitions counted one by one (runs.hpp): a
// run scan costs ~25 instructions before it stops, so runs of 2-7 (range over about as many subscribers as
// partitions gives runs of 1 and 2) cost more by runs than one by one.
constexpr int32_t kShortRun = 8;

// Loads, free partitions and moved partitions of now[0..n) against before[0..n) (null: nobody owned
// anything), all in one topic. It goes by runs of partitions with one owner (and one previous owner),
// runs.hpp: a sticky result comes in runs of hundreds, each added once instead of a per-member counter
// increment per partition. The free and moved counts are kept in locals and added to the caller's at the end:
// counted through the references, every ++loads[k] could alias them, a reload and a store of both per
// partition (~14 instructions a partition on interleaved owners, a range or round-robin result).
void count_segment(const int32_t* now, const int32_t* before, int32_t n, int64_t* loads, int64_t& free_out,
                   int64_t& moved_out) {
    int64_t free = 0, moved = 0;
    if (!before) {
        for (int32_t part = 0; part < n;) {
            const int32_t m = now[part];
            const int32_t run = run_end(now, part, n);
            if (run - part < kShortRun) {  // short runs: a block partition by partition
                for (const int32_t stop = std::min(n, part + kShortRunBlock); part < stop; ++part) {
                    if (now[part] >= 0) ++loads[now[part]];
                    else ++free;
                }
                continue;
            }
            if (m >= 0) loads[m] += run - part;
            else free += run - part;
            part = run;
        }
        free_out += free;
        return;
    }
    for (int32_t part = 0; part < n;) {
        const int32_t m = now[part], prev = before[part];
        const int32_t run = run_end(now, before, part, n);
        if (run - part < kShortRun) {  // short runs: a block partition by partition
            const int32_t stop = std::min(n, part + kShortRunBlock);
            const BlockCounts c = count_block(now, before, part, stop, loads);
            free += c.free;
            moved += c.moved;
            part = stop;
            continue;
        }
        const int64_t len = run - part;
        if (m >= 0) loads[m] += len;
        else free += len;
        if (prev >= 0 && prev != m) moved += len;
        part = run;
    }
    free_out += free;
    moved_out += moved;
}

}  // namespace

void PartitionTally::count_stretch(int32_t end, const int32_t* now, const int32_t* before) {
    const Prepared& pr = pr_;
    const int32_t* const base = pr.topic_base.data();
    int64_t* const loads = loads_.data();
    while (next_ < end) {
        while (base[topic_ + 1] <= next_) ++topic_;   // skips empty topics; next_ < P keeps topic_ < T
        const int32_t stop = std::min(end, base[topic_ + 1]);
        int64_t free = 0, moved = 0;   // locals: a reference to moved_ could alias loads[] (reloads)
        count_segment(now, before, stop - next_, loads, free, moved);
        moved_ += moved;
        // A free partition counts as unassigned only in a subscribed topic.
        if (pr.topic_subscribed[topic_]) unassigned_ += free;
        now += stop - next_;
        if (before) before += stop - next_;
        next_ = stop;
    }
}

void PartitionTally::count_known(int32_t end, const int64_t* loads, int64_t unassigned, int64_t moved) {
    for (std::size_t m = 0; m < loads_.size(); ++m) loads_[m] += loads[m];
    unassigned_ += unassigned;
    moved_ += moved;
    next_ = end;
    while (topic_ < pr_.num_topics && pr_.topic_base[topic_ + 1] <= next_) ++topic_;
}

void PartitionTally::count_until(int32_t t_end, const int32_t* now) {
    const int32_t end = pr_.topic_base[t_end];
    if (end <= next_) return;
    const int32_t* const before = prev_.none() ? nullptr : prev_.owner.data() + next_;
    count_stretch(end, now + next_, before);
}

Metrics compute_metrics(const Problem& p, const Prepared& pr, const std::vector<int32_t>& owner,
                        const std::vector<int32_t>& withheld, const PreviousOwners& prev) {
    PartitionTally tally(pr, prev);
    return compute_metrics(p, pr, owner, withheld, prev, tally);
}

Metrics compute_metrics(const Problem& p, const Prepared& pr, const std::vector<int32_t>& owner,
                        const std::vector<int32_t>& withheld, const PreviousOwners& prev, PartitionTally& tally) {
    Metrics out;
    // owned[m]: partitions m validly owned before, as previous_owners() counted them.
    const std::vector<int64_t>& owned = prev.owned;
    int64_t total_owned = 0;
    // A withheld partition (distinct ids, withhold_transfers) was assigned in the sticky target, so its topic
    // is subscribed, and it has no owner now: the pass counts it as free, and `unassigned` is that count less
    // the withheld ones. (No per-partition withheld flags: 4 MB filled and read at 4M partitions.)
    out.withheld = static_cast<int64_t>(withheld.size());
    // Only a partition some member claims can be withheld (withhold_transfers). (Not prev.none(): a builder
    // that wrote owner[] over prev.owner's array took it, having counted every partition, tally below.)
    if (p.owned_partitions.empty() && !withheld.empty())
        throw std::logic_error("compute_metrics: partitions withheld in a group nobody owned");
    if (prev.none() && !p.owned_partitions.empty() && tally.counted() < pr.num_partitions)
        throw std::logic_error("compute_metrics: the previous owners were taken before every partition was counted");
    tally.count_until(pr.num_topics, owner.data());
    const std::vector<int64_t>& load = tally.loads();
    const int64_t unassigned = tally.unassigned(), moved = tally.moved();
    for (int64_t l : load) out.assigned += l;
    for (int64_t o : owned) total_owned += o;
    out.unassigned = unassigned - out.withheld;
    out.moved = moved;
    complete_metrics(p, pr, load, owned, total_owned, withheld.empty(),
                     [&] { return topic_holders(pr, owner, out.assigned); }, out);
    return out;
}

}  // namespace kafkagroup
