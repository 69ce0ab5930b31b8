#include "kafkagroup/metrics.hpp"

#include <algorithm>
#include <limits>

#include "kafkagroup/stable_order.hpp"
#include "kafkagroup/subscriptions.hpp"

namespace kafkagroup {
namespace {

// The end of the run of entries equal to m in a[from, end). Compared kScan at a time without a branch
// per entry (vectorised), the last block one by one; the next entry is looked at first, so a run of one
// (roundrobin) costs no block.
constexpr std::size_t kScan = 32;

std::size_t run_end(const int32_t* a, std::size_t from, std::size_t end, int32_t m) {
    std::size_t i = from;
    if (i < end && a[i] == m) {
        for (++i; end - i >= kScan; i += kScan) {
            uint32_t differ = 0;
            for (std::size_t k = 0; k < kScan; ++k) differ |= static_cast<uint32_t>(a[i + k] ^ m);
            if (differ != 0) break;
        }
        while (i < end && a[i] == m) ++i;
    }
    return i;
}

}  // namespace

Metrics compute_metrics(const Problem& p, const Prepared& pr, const std::vector<int32_t>& owner,
                        const std::vector<int32_t>& withheld, const std::vector<int32_t>& prev_owner) {
    Metrics out;
    const std::size_t M = static_cast<std::size_t>(pr.num_members);
    std::vector<int64_t> load(M, 0);
    // owned[m]: partitions m validly owned before (prev_owner), counted in the same pass for both bounds.
    std::vector<int64_t> owned(M, 0);
    int64_t total_owned = 0;
    out.withheld = static_cast<int64_t>(withheld.size());
    const std::vector<char>& topic_subscribed = pr.topic_subscribed;

    // One pass over the partitions: loads, moved, previous loads and unassigned. Assignors hand out runs
    // of consecutive partitions and a sticky one keeps runs, so each run of one member, and within it each
    // run of one previous owner, is counted at once (no per-partition increments of one counter).
    const std::size_t P = owner.size();
    const int32_t* const now = owner.data();
    const int32_t* const before = pr.has_owned ? prev_owner.data() : nullptr;  // (all -1 when nothing was)
    int64_t moved = 0, unassigned = 0;
    int64_t* const loads = load.data();
    int64_t* const owned_of = owned.data();
    // Unassigned partitions of [a, b) in subscribed topics; t, the topic holding a, only moves forward
    // (the runs come in partition order): O(T) over the pass.
    const int32_t* const base = pr.topic_base.data();
    int32_t t = 0;
    const auto subscribed_in = [&](int64_t a, int64_t b) {
        while (base[t + 1] <= a) ++t;
        int64_t n = 0;
        for (int32_t u = t; u < pr.num_topics && base[u] < b; ++u)
            if (topic_subscribed[u]) n += std::min<int64_t>(b, base[u + 1]) - std::max<int64_t>(a, base[u]);
        return n;
    };
    for (std::size_t part = 0; part < P;) {
        const int32_t m = now[part];
        if (part + 1 < P && now[part + 1] != m) {
            // No run here (range or roundrobin over many members): the next kScan one by one, no run looked for.
            const std::size_t stop = std::min(P, part + kScan);
            if (!before) {
                for (; part < stop; ++part) {
                    if (now[part] >= 0) ++loads[now[part]];
                    else unassigned += subscribed_in(static_cast<int64_t>(part), static_cast<int64_t>(part) + 1);
                }
                continue;
            }
            for (; part < stop; ++part) {
                const int32_t now_m = now[part], v = before[part];
                if (now_m >= 0) ++loads[now_m];
                else unassigned += subscribed_in(static_cast<int64_t>(part), static_cast<int64_t>(part) + 1);
                if (v >= 0) ++owned_of[v], moved += v != now_m;
            }
            continue;
        }
        const std::size_t end = run_end(now, part + 1, P, m);
        const auto length = static_cast<int64_t>(end - part);
        if (m >= 0) loads[m] += length;
        else unassigned += subscribed_in(static_cast<int64_t>(part), static_cast<int64_t>(end));
        // Within the run, runs of previous owners: kept (v == m), moved (another v), or none (-1).
        for (std::size_t i = part; before && i < end;) {
            const int32_t v = before[i];
            const std::size_t stop = run_end(before, i + 1, end, v);
            if (v >= 0) {
                owned_of[v] += static_cast<int64_t>(stop - i);
                if (v != m) moved += static_cast<int64_t>(stop - i);
            }
            i = stop;
        }
        part = end;
    }
    // A withheld partition has no owner in owner[] but is not unassigned.
    for (int32_t w : withheld)
        if (now[w] < 0 && topic_subscribed[pr.topic_of(w)]) --unassigned;
    for (int64_t l : load) out.assigned += l;
    for (int64_t o : owned) total_owned += o;
    out.unassigned = unassigned;
    out.moved = moved;
    if (M == 0) return out;
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
            // One pass over the partitions (holders of each topic with their counts), two over subscriptions.
            const int32_t T = pr.num_topics;
            std::vector<int64_t> holder_off(static_cast<std::size_t>(T) + 1, 0);
            std::vector<int32_t> holders, held;  // (member, partitions of the topic it holds), topic by topic
            holders.reserve(static_cast<std::size_t>(out.assigned));  // at most one holder per assigned partition
            held.reserve(static_cast<std::size_t>(out.assigned));
            std::vector<int32_t> stamp(M, -1), slot(M, 0);
            for (int32_t t = 0; t < T; ++t) {
                for (int32_t part = pr.topic_base[t]; part < pr.topic_base[t + 1]; ++part) {
                    const int32_t m = owner[part];
                    if (m < 0) continue;
                    if (stamp[m] != t) {
                        stamp[m] = t;
                        slot[m] = static_cast<int32_t>(holders.size());
                        holders.push_back(m);
                        held.push_back(0);
                    }
                    ++held[slot[m]];
                }
                holder_off[t + 1] = static_cast<int64_t>(holders.size());
            }
            // Members by ascending load, ties by id.
            const std::vector<int32_t> by_load = stable_order_by_key(load);
            constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
            std::vector<int64_t> reach(M, kNone);
            std::vector<char> topic_done(static_cast<std::size_t>(T), 0);
            std::vector<int32_t> queue;
            queue.reserve(M);
            for (int32_t v : by_load) {
                if (reach[v] != kNone) continue;
                reach[v] = load[v];
                queue.assign(1, v);
                for (std::size_t head = 0; head < queue.size(); ++head) {
                    const int32_t y = queue[head];
                    for (int64_t i = p.sub_offsets[y]; i < p.sub_offsets[y + 1]; ++i) {
                        const int32_t t = p.sub_topics[i];
                        if (topic_done[t]) continue;
                        topic_done[t] = 1;
                        for (int64_t k = holder_off[t]; k < holder_off[t + 1]; ++k)
                            if (reach[holders[k]] == kNone) reach[holders[k]] = load[v], queue.push_back(holders[k]);
                    }
                }
            }
            std::vector<int64_t> min_subscriber_reach(static_cast<std::size_t>(T), kNone);
            for (std::size_t m = 0; m < M; ++m)
                for (int64_t i = p.sub_offsets[m]; i < p.sub_offsets[m + 1]; ++i) {
                    int64_t& best = min_subscriber_reach[p.sub_topics[i]];
                    best = std::min(best, reach[m]);
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
        if (gap == 0 && withheld.empty()) {
            int64_t bound = 0;
            for (int64_t o : owned) bound += std::max<int64_t>(0, o - out.max_load);
            out.moved_lower_bound = bound;
        }
    }
    return out;
}

}  // namespace kafkagroup
