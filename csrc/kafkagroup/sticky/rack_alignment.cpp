// KIP-881, after balance and stickiness are settled (either builder): the partitions not held by their sticky
// owner are redistributed among the members holding them, each member keeping its count, so that as many
// as possible sit on a member in one of their replica racks (Kafka's "rack-matching first, as long as
// balance does not suffer", made exact for those partitions). With different subscriptions this is done
// within each topic (a member keeps its count per topic, so only subscribed topics move); with equal
// subscriptions across all topics at once (a member keeps its total). Loads and quotas are unchanged, the
// moved count never grows (a pooled partition is already away from its sticky owner, or has none), and
// partitions kept by their sticky owner are not touched. Kafka's own builders fill racks greedily (first
// match, round robin) and can leave partitions off-rack where a matching placement exists; this pass
// removes those.
//
// Each pool is a b-matching between partitions and member slots, solved as a min-cost max-flow on classes:
// partitions grouped by which of the holders' racks their replicas cover, members grouped by rack (a
// member without rack matches every partition, as Kafka's racksMismatch says). Most matches first; then
// (costs) the fewest partitions taken from an owner whose racks do not match them (Input::weak_owner), then
// the fewest changes to the current matches. An aligned pool is therefore returned unchanged, and a
// result fed back as owned is not reshuffled (its pool is a subset of the pool that was aligned): a fixed
// point. Cost per pool: O(n * racks) for n such partitions plus the flow, whose graph has at most (distinct
// replica-rack classes) x (holder racks + 1) edges. Limits: a pool whose holders span more than 63
// distinct racks, or whose partitions form more than 256 classes, is left as it is.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "kafkagroup/rack_ids.hpp"
#include "kafkagroup/sticky/sticky_input.hpp"

namespace kafkagroup {
namespace sticky {
namespace {

// Min-cost max-flow on a small graph (successive shortest paths, Bellman-Ford with a queue: residual
// costs may be negative). Parallel edges allowed. O(augmentations * nodes * edges); the graphs here have
// at most a few hundred nodes, and an augmentation carries a whole bottleneck, not one unit.
class SmallFlow {
public:
    explicit SmallFlow(std::size_t n) : out_(n) {}
    void add(std::size_t a, std::size_t b, int64_t cap, int64_t cost) {
        if (cap <= 0) return;
        out_[a].push_back(edges_.size());
        edges_.push_back({b, cap, cost, 0});
        out_[b].push_back(edges_.size());
        edges_.push_back({a, 0, -cost, 0});
    }
    // Total flow on the edges a -> b.
    int64_t flow(std::size_t a, std::size_t b) const {
        int64_t f = 0;
        for (std::size_t e : out_[a])
            if (edges_[e].to == b && edges_[e].cap > 0) f += edges_[e].flow;
        return f;
    }

    void run(std::size_t s, std::size_t t) {
        const std::size_t n = out_.size();
        constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;
        std::vector<int64_t> dist(n);
        std::vector<std::ptrdiff_t> via(n);
        std::vector<char> queued(n);
        std::vector<std::size_t> queue;
        for (;;) {
            std::fill(dist.begin(), dist.end(), kInf);
            std::fill(via.begin(), via.end(), -1);
            dist[s] = 0;
            queue.assign(1, s);
            std::fill(queued.begin(), queued.end(), 0);
            queued[s] = 1;
            for (std::size_t h = 0; h < queue.size(); ++h) {
                const std::size_t a = queue[h];
                queued[a] = 0;
                for (std::size_t e : out_[a]) {
                    const Edge& x = edges_[e];
                    if (x.cap - x.flow <= 0 || dist[a] + x.cost >= dist[x.to]) continue;
                    dist[x.to] = dist[a] + x.cost;
                    via[x.to] = static_cast<std::ptrdiff_t>(e);
                    if (!queued[x.to]) queued[x.to] = 1, queue.push_back(x.to);
                }
            }
            if (via[t] < 0) return;
            int64_t push = kInf;
            for (std::size_t b = t; b != s; b = edges_[static_cast<std::size_t>(via[b]) ^ 1].to)
                push = std::min(push, edges_[static_cast<std::size_t>(via[b])].cap - edges_[static_cast<std::size_t>(via[b])].flow);
            for (std::size_t b = t; b != s; b = edges_[static_cast<std::size_t>(via[b]) ^ 1].to) {
                edges_[static_cast<std::size_t>(via[b])].flow += push;
                edges_[static_cast<std::size_t>(via[b]) ^ 1].flow -= push;
            }
        }
    }

private:
    struct Edge {
        std::size_t to;
        int64_t cap, cost, flow;
    };
    std::vector<std::vector<std::size_t>> out_;
    std::vector<Edge> edges_;
};

}  // namespace

namespace {

class PoolAligner {
public:
    explicit PoolAligner(const Input& in) : in_(in), p_(in.problem), holder_index_(static_cast<std::size_t>(in.M), -1) {}

    // Adds topic t's partitions not held by their sticky owner to the pool.
    void collect(int32_t t, const std::vector<int32_t>& owner) {
        for (int32_t part = in_.topic_begin(t); part < in_.topic_end(t); ++part) {
            const int32_t m = owner[part];
            if (m < 0 || in_.sticky_owner[part] == m) continue;
            pool_.push_back(part);
            mismatch_ = mismatch_ || !in_.racks_match(m, part);
            if (holder_index_[m] < 0) holder_index_[m] = static_cast<int32_t>(holders_.size()), holders_.push_back(m);
        }
    }

    // Equal subscriptions only (across topics): the members at q + 1 that keep at most q partitions on
    // their sticky owner hold a "floating" extra slot, which may go to any member keeping at most q
    // (loads stay q or q + 1, the same number at q + 1, and no kept partition moves). Those members join
    // the holders, and the flow decides where the floating slots sit. `load` and `kept` per member.
    void float_quota(const std::vector<int64_t>& load, const std::vector<int64_t>& kept, int64_t q) {
        floating_ = true;
        float_cur_.assign(static_cast<std::size_t>(in_.M), 0);
        for (int32_t m = 0; m < in_.M; ++m) {
            if (kept[m] > q) continue;
            float_cur_[m] = load[m] > q;
            if (holder_index_[m] < 0) holder_index_[m] = static_cast<int32_t>(holders_.size()), holders_.push_back(m);
        }
    }

    // Redistributes the pool among its holders, then empties it.
    void align(std::vector<int32_t>& owner) {
        // Every pooled partition already on a matching member: nothing can improve (the usual case).
        if (mismatch_ && !pool_.empty() && holders_.size() >= 2 && (floating_ || pool_.size() >= 2)) solve(owner);
        for (int32_t m : holders_) holder_index_[m] = -1;
        pool_.clear();
        holders_.clear();
        mismatch_ = false;
        floating_ = false;
    }

private:
    std::size_t rack_node(int32_t m) const {
        const int32_t r = p_.member_rack[m];
        if (r == kNoRack) return racks_.size();
        return static_cast<std::size_t>(std::lower_bound(racks_.begin(), racks_.end(), r) - racks_.begin());
    }

    // Holders are in order of first appearance in the pool (deterministic; no sort needed).
    void solve(std::vector<int32_t>& owner) {
        slots_.assign(holders_.size(), 0);
        for (int32_t part : pool_) ++slots_[holder_index_[owner[part]]];
        // Distinct racks of the holders (ascending): rack nodes [0, R); node R is "no rack" (matches all).
        racks_.clear();
        for (int32_t m : holders_)
            if (p_.member_rack[m] != kNoRack) racks_.push_back(p_.member_rack[m]);
        std::sort(racks_.begin(), racks_.end());
        racks_.erase(std::unique(racks_.begin(), racks_.end()), racks_.end());
        const std::size_t R = racks_.size();
        if (R > kMaxRacks) return;
        // Class of each pooled partition: the mask of holder racks among its replica racks.
        masks_.clear();
        class_of_.resize(pool_.size());
        for (std::size_t i = 0; i < pool_.size(); ++i) {
            uint64_t mask = 0;
            for (int64_t k = p_.replica_offsets[pool_[i]]; k < p_.replica_offsets[pool_[i] + 1]; ++k) {
                auto it = std::lower_bound(racks_.begin(), racks_.end(), p_.replica_racks[k]);
                if (it != racks_.end() && *it == p_.replica_racks[k]) mask |= uint64_t{1} << (it - racks_.begin());
            }
            if (in_.weak(pool_[i]) == owner[pool_[i]]) mask |= kAnchored;
            auto c = std::find(masks_.begin(), masks_.end(), mask);
            if (c == masks_.end()) {
                if (masks_.size() == kMaxClasses) return;
                masks_.push_back(mask);
                c = masks_.end() - 1;
            }
            class_of_[i] = static_cast<std::size_t>(c - masks_.begin());
        }
        const std::size_t C = masks_.size(), W = R + 1;
        // Nodes: source 0, classes 1..C, rack nodes C+1..C+W, floating slots C+W+1, sink C+W+2. The flow
        // is the set of rack matches (a class to a rack node it matches, the no-rack node matching all):
        // its value is maximal first; among maximal ones the cost counts, in this order of weight,
        //   kDisplace  a partition taken from its weak owner (anchored: held by its owner whose racks do not
        //              match), whether it is sent to a match or its slot is taken by one (a transfer),
        //   1          a match that is not one of the current placement's (so an aligned pool, whose
        //              matches all stay, is a cost-0 maximum and comes back unchanged: a fixed point),
        //   1          a floating slot moved to a rack node that does not hold it now.
        const std::size_t src = 0, F = C + W + 1, sink = C + W + 2;
        const int64_t n = static_cast<int64_t>(pool_.size());
        const int64_t kDisplace = 2 * n + 2;
        std::vector<int64_t> class_size(C, 0), node_slots(W, 0), node_members(W, 0), node_float(W, 0),
            node_anchored(W, 0), current(C * W, 0);
        int64_t floats = 0;
        for (std::size_t i = 0; i < pool_.size(); ++i) {
            ++class_size[class_of_[i]];
            const int32_t m = owner[pool_[i]];
            const std::size_t r = rack_node(m);
            if (in_.weak(pool_[i]) == m) ++node_anchored[r];
            if (r == R || masks_[class_of_[i]] >> r & 1) ++current[class_of_[i] * W + r];
        }
        for (std::size_t h = 0; h < holders_.size(); ++h) {
            const std::size_t r = rack_node(holders_[h]);
            const int64_t f = floating_ ? float_cur_[holders_[h]] : 0;
            node_slots[r] += slots_[h] - f;  // fixed slots
            node_float[r] += f;
            node_members[r] += 1;
            floats += f;
        }
        SmallFlow net(C + W + 3);
        for (std::size_t c = 0; c < C; ++c) {
            net.add(src, 1 + c, class_size[c], 0);
            for (std::size_t r = 0; r < W; ++r) {
                if (r < R && !(masks_[c] >> r & 1)) continue;
                // An anchored partition matches nowhere now; sending it anywhere takes it from its weak owner.
                const int64_t leave = masks_[c] & kAnchored ? kDisplace : 0;
                net.add(1 + c, C + 1 + r, current[c * W + r], leave);
                net.add(1 + c, C + 1 + r, n, 1 + leave);
            }
        }
        for (std::size_t r = 0; r < W; ++r) {
            const int64_t spare = std::max<int64_t>(0, node_slots[r] - node_anchored[r]);
            net.add(C + 1 + r, sink, spare, 0);
            net.add(C + 1 + r, sink, node_slots[r] - spare, kDisplace);
            if (floats > 0) {
                net.add(C + 1 + r, F, node_float[r], 0);
                net.add(C + 1 + r, F, node_members[r] - node_float[r], 1);
            }
        }
        net.add(F, sink, floats, 0);
        net.run(src, sink);
        if (floating_) place_floating(net, C, W, floats);
        // quota[c * W + r]: partitions of class c the flow matches to rack node r.
        quota_.assign(C * W, 0);
        for (std::size_t c = 0; c < C; ++c)
            for (std::size_t r = 0; r < W; ++r) quota_[c * W + r] = std::max<int64_t>(0, net.flow(1 + c, C + 1 + r));

        next_owner_.assign(pool_.size(), -1);
        // 1. A partition stays on its holder when that is a matched place the flow grants.
        for (std::size_t i = 0; i < pool_.size(); ++i) {
            const int32_t m = owner[pool_[i]];
            const std::size_t h = static_cast<std::size_t>(holder_index_[m]);
            int64_t& q = quota_[class_of_[i] * W + rack_node(m)];
            if (q > 0 && slots_[h] > 0) --q, --slots_[h], next_owner_[i] = m;
        }
        // 2. The remaining matched quota goes to holders of the rack node with free slots (in holder order),
        // first slots their holder does not need for the partitions it weakly owns (anchored: held by the
        // owner whose racks do not match; moving one away is a transfer that gains no match over moving a
        // partition nobody owns), and taken by unanchored partitions first.
        reserve_.assign(holders_.size(), 0);
        for (int32_t part : pool_)
            if (in_.weak(part) == owner[part]) ++reserve_[holder_index_[owner[part]]];
        node_holders_.assign(W, {});
        for (std::size_t h = 0; h < holders_.size(); ++h) node_holders_[rack_node(holders_[h])].push_back(h);
        // Two cursors per rack node (spare slots, any slot): a holder passed by one never qualifies again,
        // since slots only fall (reserve_ is not lowered meanwhile), so each step is O(1) amortised.
        std::vector<std::size_t> cursor(2 * W, 0);
        auto take_slot = [&](std::size_t r) -> int32_t {
            const auto& list = node_holders_[r];
            for (int spare = 1; spare >= 0; --spare) {
                std::size_t& c = cursor[2 * r + static_cast<std::size_t>(spare)];
                while (c < list.size() && slots_[list[c]] <= (spare ? reserve_[list[c]] : 0)) ++c;
                if (c == list.size()) continue;
                --slots_[list[c]];
                return holders_[list[c]];
            }
            return -1;
        };
        for (int pass = 0; pass < 2; ++pass)
            for (std::size_t i = 0; i < pool_.size(); ++i) {
                if (next_owner_[i] >= 0 || (in_.weak(pool_[i]) == owner[pool_[i]]) != (pass == 1)) continue;
                for (std::size_t r = 0; r < W && next_owner_[i] < 0; ++r) {
                    int64_t& q = quota_[class_of_[i] * W + r];
                    if (q == 0) continue;
                    const int32_t m = take_slot(r);
                    if (m >= 0) --q, next_owner_[i] = m;
                }
            }
        // 3. The unmatched rest fills the remaining slots, in place where the holder still has one: first
        // partitions held by their weak owner (a move away from it gains no match), then the others.
        for (int pass = 0; pass < 2; ++pass)
            for (std::size_t i = 0; i < pool_.size(); ++i) {
                if (next_owner_[i] >= 0) continue;
                const int32_t m = owner[pool_[i]];
                if ((in_.weak(pool_[i]) == m) != (pass == 0)) continue;
                const std::size_t h = static_cast<std::size_t>(holder_index_[m]);
                if (slots_[h] > 0) --slots_[h], next_owner_[i] = m;
            }
        std::size_t any = 0;
        for (std::size_t i = 0; i < pool_.size(); ++i) {
            if (next_owner_[i] >= 0) continue;
            while (slots_[any] == 0) ++any;  // slots sum to the pool size, so one is free
            --slots_[any];
            next_owner_[i] = holders_[any];
        }
        for (std::size_t i = 0; i < pool_.size(); ++i) owner[pool_[i]] = next_owner_[i];
    }

    // Hands out the floating slots: each rack node first gets what its matches through F need, to its
    // members already holding one first; the rest stay where they are, as far as they can.
    void place_floating(const SmallFlow& net, std::size_t C, std::size_t W, int64_t floats) {
        const std::size_t F = C + W + 1;
        std::vector<char> got(holders_.size(), 0);
        for (std::size_t h = 0; h < holders_.size(); ++h) slots_[h] -= float_cur_[holders_[h]];
        auto give = [&](std::size_t h) { got[h] = 1, ++slots_[h], --floats; };
        for (std::size_t r = 0; r < W; ++r) {
            int64_t need = std::max<int64_t>(0, net.flow(C + 1 + r, F));
            for (int pass = 0; pass < 2 && need > 0; ++pass)
                for (std::size_t h = 0; h < holders_.size() && need > 0; ++h)
                    if (!got[h] && rack_node(holders_[h]) == r && float_cur_[holders_[h]] == (pass == 0)) give(h), --need;
        }
        for (int pass = 0; pass < 2 && floats > 0; ++pass)
            for (std::size_t h = 0; h < holders_.size() && floats > 0; ++h)
                if (!got[h] && float_cur_[holders_[h]] == (pass == 0)) give(h);
    }

    static constexpr uint64_t kAnchored = uint64_t{1} << 63;  // class flag: held by its weak owner
    static constexpr std::size_t kMaxRacks = 63;     // the class key is a 64-bit mask
    static constexpr std::size_t kMaxClasses = 256;  // keeps the flow matrix small

    const Input& in_;
    const Problem& p_;
    std::vector<int32_t> holder_index_, pool_, holders_, racks_, next_owner_;
    std::vector<int64_t> slots_, quota_, reserve_;
    std::vector<uint64_t> masks_;
    std::vector<std::size_t> class_of_;
    std::vector<std::vector<std::size_t>> node_holders_;
    std::vector<char> float_cur_;  // [M] holds a floating slot now (float_quota)
    bool mismatch_ = false, floating_ = false;
};

}  // namespace

void align_racks(const Input& in, std::vector<int32_t>& owner, bool across_topics) {
    PoolAligner aligner(in);
    std::vector<int64_t> load, kept;
    if (across_topics) load.assign(static_cast<std::size_t>(in.M), 0), kept.assign(static_cast<std::size_t>(in.M), 0);
    int64_t n = 0;
    for (int32_t t = 0; t < in.T; ++t) {
        if (!in.subscribed(t)) continue;
        aligner.collect(t, owner);
        if (!across_topics) {
            aligner.align(owner);
            continue;
        }
        for (int32_t part = in.topic_begin(t); part < in.topic_end(t); ++part) {
            const int32_t m = owner[part];
            if (m < 0) continue;
            ++n, ++load[m];
            kept[m] += in.sticky_owner[part] == m;
        }
    }
    if (across_topics) {
        aligner.float_quota(load, kept, n / in.M);
        aligner.align(owner);
    }
}

bool shift_to_matching_racks(const Input& in, std::vector<int32_t>& owner, std::vector<int32_t>& load,
                             const std::vector<int64_t>& tsub_off, const std::vector<int32_t>& tsub_member) {
    const Problem& p = in.problem;
    const int32_t max_rack = max_member_rack(p);
    // at_low[r]: this topic's subscribers with rack r (0: no rack) at the topic's lowest load.
    std::vector<std::vector<int32_t>> at_low(static_cast<std::size_t>(max_rack) + 1);
    bool shifted = false;
    for (int32_t t = 0; t < in.T; ++t) {
        if (!in.subscribed(t) || tsub_off[t + 1] - tsub_off[t] < 2) continue;
        int32_t low = std::numeric_limits<int32_t>::max();
        for (int64_t k = tsub_off[t]; k < tsub_off[t + 1]; ++k) low = std::min(low, load[tsub_member[k]]);
        for (auto& list : at_low) list.clear();
        bool any_mismatch = false;
        for (int32_t part = in.topic_begin(t); part < in.topic_end(t) && !any_mismatch; ++part)
            any_mismatch = owner[part] >= 0 && load[owner[part]] == low + 1 && !in.racks_match(owner[part], part);
        if (!any_mismatch) continue;
        for (int64_t k = tsub_off[t]; k < tsub_off[t + 1]; ++k)
            if (load[tsub_member[k]] == low) at_low[p.member_rack[tsub_member[k]]].push_back(tsub_member[k]);
        // Lists keep ascending ids; the lowest id is taken last-in-first-out by reversing once.
        for (auto& list : at_low) std::reverse(list.begin(), list.end());
        auto take = [&](int32_t rack) -> int32_t {
            auto& list = at_low[rack];
            while (!list.empty() && load[list.back()] != low) list.pop_back();  // rose meanwhile
            if (list.empty()) return -1;
            const int32_t x = list.back();
            list.pop_back();
            return x;
        };
        for (int32_t part = in.topic_begin(t); part < in.topic_end(t); ++part) {
            const int32_t w = owner[part];
            if (w < 0 || load[w] != low + 1 || in.racks_match(w, part)) continue;
            int32_t x = take(kNoRack);
            for (int64_t i = p.replica_offsets[part]; i < p.replica_offsets[part + 1] && x < 0; ++i)
                if (p.replica_racks[i] <= max_rack) x = take(p.replica_racks[i]);
            if (x < 0) continue;
            owner[part] = x, ++load[x], --load[w];
            at_low[p.member_rack[w]].push_back(w);  // now at the lowest load itself
            shifted = true;
        }
    }
    return shifted;
}

}  // namespace sticky
}  // namespace kafkagroup
