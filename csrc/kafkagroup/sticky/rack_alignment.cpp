// KIP-881, after balance and stickiness are settled (either builder): the partitions not held by their sticky
// owner are redistributed among the members holding them, each member keeping its count, so that as many
// as possible sit on a member in one of their replica racks (Kafka's "rack-matching first, as long as
// balance does not suffer", made exact for those partitions). With different subscriptions this is done
// within each topic (a member keeps its count per topic, so only subscribed topics move); with equal
// subscriptions across all topics at once (a member keeps its total). Loads and quotas are unchanged, the
// moved count never grows (a pooled partition is already away from its sticky owner, or has none), and
// partitions kept by their sticky owner are not touched. Kafka's own builders fill racks greedily (first
// match, round robin) and can leave partitions off-rack where a matching placement exists; this pass
// removes those. The flow starts from the current matches, so an aligned placement is returned unchanged:
// a result fed back as owned is not reshuffled (its pool is a subset of the pool that was aligned).
//
// Each pool is a b-matching between partitions and member slots, solved as a max-flow on classes:
// partitions grouped by which of the holders' racks their replicas cover, members grouped by rack (a
// member without rack matches every partition, as Kafka's racksMismatch says). Partitions stay with their
// current holder whenever the flow allows it, so an aligned pool is left as it is.
// Cost per pool: O(n * racks + flow) for n such partitions; the flow graph has at most (distinct
// replica-rack classes) x (holder racks + 1) edges. Limits: a pool whose holders span more than 63
// distinct racks, or whose partitions form more than 256 classes, is left as it is.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "kafkagroup/sticky/sticky_input.hpp"

namespace kafkagroup {
namespace sticky {
namespace {

// Edmonds-Karp on a tiny dense graph (capacities as an n x n matrix).
class SmallFlow {
public:
    explicit SmallFlow(std::size_t n) : n_(n), cap_(n * n, 0), flow_(n * n, 0) {}
    void add(std::size_t a, std::size_t b, int64_t c) { cap_[a * n_ + b] += c; }
    // Sends f along a -> b before run() (a feasible starting flow: run() only augments it).
    void preload(std::size_t a, std::size_t b, int64_t f) { flow_[a * n_ + b] += f, flow_[b * n_ + a] -= f; }
    int64_t flow(std::size_t a, std::size_t b) const { return flow_[a * n_ + b]; }

    void run(std::size_t s, std::size_t t) {
        std::vector<std::ptrdiff_t> parent(n_);
        std::vector<std::size_t> queue;
        for (;;) {
            std::fill(parent.begin(), parent.end(), -1);
            parent[s] = static_cast<std::ptrdiff_t>(s);
            queue.assign(1, s);
            for (std::size_t h = 0; h < queue.size() && parent[t] < 0; ++h) {
                const std::size_t a = queue[h];
                for (std::size_t b = 0; b < n_; ++b)
                    if (parent[b] < 0 && residual(a, b) > 0) parent[b] = static_cast<std::ptrdiff_t>(a), queue.push_back(b);
            }
            if (parent[t] < 0) return;
            int64_t push = std::numeric_limits<int64_t>::max();
            for (std::size_t b = t; b != s; b = static_cast<std::size_t>(parent[b]))
                push = std::min(push, residual(static_cast<std::size_t>(parent[b]), b));
            for (std::size_t b = t; b != s; b = static_cast<std::size_t>(parent[b])) {
                const std::size_t a = static_cast<std::size_t>(parent[b]);
                flow_[a * n_ + b] += push;
                flow_[b * n_ + a] -= push;
            }
        }
    }

private:
    int64_t residual(std::size_t a, std::size_t b) const { return cap_[a * n_ + b] - flow_[a * n_ + b]; }
    std::size_t n_;
    std::vector<int64_t> cap_, flow_;
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

    // Redistributes the pool among its holders, then empties it.
    void align(std::vector<int32_t>& owner) {
        // Every pooled partition already on a matching member: nothing can improve (the usual case).
        if (mismatch_ && pool_.size() >= 2 && holders_.size() >= 2) solve(owner);
        for (int32_t m : holders_) holder_index_[m] = -1;
        pool_.clear();
        holders_.clear();
        mismatch_ = false;
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
            auto c = std::find(masks_.begin(), masks_.end(), mask);
            if (c == masks_.end()) {
                if (masks_.size() == kMaxClasses) return;
                masks_.push_back(mask);
                c = masks_.end() - 1;
            }
            class_of_[i] = static_cast<std::size_t>(c - masks_.begin());
        }
        const std::size_t C = masks_.size(), W = R + 1;
        // Nodes: source 0, classes 1..C, rack nodes C+1..C+W, sink C+W+1.
        const std::size_t src = 0, sink = C + W + 1;
        const int64_t n = static_cast<int64_t>(pool_.size());
        SmallFlow net(C + W + 2);
        std::vector<int64_t> class_size(C, 0), node_slots(W, 0);
        for (std::size_t i = 0; i < pool_.size(); ++i) ++class_size[class_of_[i]];
        for (std::size_t h = 0; h < holders_.size(); ++h) node_slots[rack_node(holders_[h])] += slots_[h];
        for (std::size_t c = 0; c < C; ++c) {
            net.add(src, 1 + c, class_size[c]);
            for (std::size_t r = 0; r < R; ++r)
                if (masks_[c] >> r & 1) net.add(1 + c, C + 1 + r, n);
            net.add(1 + c, C + 1 + R, n);
        }
        for (std::size_t r = 0; r < W; ++r) net.add(C + 1 + r, sink, node_slots[r]);
        // Start from the current placement's matches, so the flow only adds to them: an aligned pool
        // keeps its class-to-rack counts, hence every partition stays where it is (a fixed point).
        for (std::size_t i = 0; i < pool_.size(); ++i) {
            const std::size_t c = class_of_[i], r = rack_node(owner[pool_[i]]);
            if (r < R && !(masks_[c] >> r & 1)) continue;  // held off-rack: no match to carry over
            net.preload(src, 1 + c, 1), net.preload(1 + c, C + 1 + r, 1), net.preload(C + 1 + r, sink, 1);
        }
        net.run(src, sink);
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
        // 2. The remaining matched quota goes to holders of the rack node with free slots (in holder order).
        node_holders_.assign(W, {});
        for (std::size_t h = 0; h < holders_.size(); ++h) node_holders_[rack_node(holders_[h])].push_back(h);
        std::vector<std::size_t> cursor(W, 0);
        auto take_slot = [&](std::size_t r) -> int32_t {
            auto& list = node_holders_[r];
            std::size_t& c = cursor[r];
            while (c < list.size() && slots_[list[c]] == 0) ++c;
            if (c == list.size()) return -1;
            --slots_[list[c]];
            return holders_[list[c]];
        };
        for (std::size_t i = 0; i < pool_.size(); ++i) {
            if (next_owner_[i] >= 0) continue;
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

    static constexpr std::size_t kMaxRacks = 63;     // the class key is a 64-bit mask
    static constexpr std::size_t kMaxClasses = 256;  // keeps the flow matrix small

    const Input& in_;
    const Problem& p_;
    std::vector<int32_t> holder_index_, pool_, holders_, racks_, next_owner_;
    std::vector<int64_t> slots_, quota_;
    std::vector<uint64_t> masks_;
    std::vector<std::size_t> class_of_;
    std::vector<std::vector<std::size_t>> node_holders_;
    bool mismatch_ = false;
};

}  // namespace

void align_racks(const Input& in, std::vector<int32_t>& owner, bool across_topics) {
    PoolAligner aligner(in);
    for (int32_t t = 0; t < in.T; ++t) {
        if (!in.subscribed(t)) continue;
        aligner.collect(t, owner);
        if (!across_topics) aligner.align(owner);
    }
    if (across_topics) aligner.align(owner);
}

}  // namespace sticky
}  // namespace kafkagroup
