// KIP-881, exactly (both paths; with equal subscriptions pass empty subscriber lists): after balance and
// stickiness are settled and the cheap passes (alignment, shifts) are done, the assigned partitions are
// rearranged by a min-cost circulation over chains of moves that keep the load vector (as a multiset).
// Objective, in this order: the fewest partitions away from their sticky owner (never worse than the
// builders' minimum), the most rack matches, the fewest partitions away from their weak owner
// (Input::weak_owner). Ties keep the current placement (only strictly improving cycles are applied), so a
// result fed back as owned comes back unchanged, and a cooperative handover round finds nothing to move:
// the earlier round's placement is already optimal over the smaller set of placements that round may
// choose from.
//
// Graph: member nodes; class nodes, one per (topic, member-rack mask of the replicas, weak owner, sticky
// owner); a level node per load value L. Member x -> class k (x gives away one of its class-k partitions),
// class k -> subscriber y (y takes it), costing value(x) - value(y) where value counts S for the sticky
// owner, G for a rack match and 1 for the weak owner (S outweighs all G terms, G all weak terms). Level
// node L -> member at L and member at L - 1 -> level node L (capacity 1 each): a chain may move one
// partition from a member at L to one at L - 1, which swaps their loads; any other change of loads is
// excluded (with a decreasingly minimal load vector no chain reaches a member two below its start).
// Cost: Bellman-Ford negative-cycle cancelling, O(V * E) per improvement. Limits: only groups whose graph
// has V * E <= kMaxWork (4e6) and whose member racks number at most 63 are optimised here, and the
// passes together stop at kMaxTotalWork relaxations (then the improvements found so far are kept, and the
// result is not guaranteed to be a fixed point); larger groups keep the result of the cheap passes.
#include <algorithm>
#include <cstdint>
#include <cstddef>
#include <limits>
#include <map>
#include <tuple>
#include <vector>

#include "kafkagroup/sticky/sticky_input.hpp"

namespace kafkagroup {
namespace sticky {
namespace {

constexpr int64_t kMaxWork = 4'000'000;        // V * E of one Bellman-Ford pass
constexpr int64_t kMaxTotalWork = 200'000'000;  // all passes together (about a second at worst)

struct Arc {
    int32_t to;
    int64_t cap, cost, flow;
};

class Circulation {
public:
    explicit Circulation(std::size_t n) : out_(n) {}
    std::size_t add(int32_t a, int32_t b, int64_t cap, int64_t cost) {
        const std::size_t e = arcs_.size();
        out_[static_cast<std::size_t>(a)].push_back(e);
        arcs_.push_back({b, cap, cost, 0});
        out_[static_cast<std::size_t>(b)].push_back(e + 1);
        arcs_.push_back({a, 0, -cost, 0});
        return e;
    }
    std::size_t arc_count() const { return arcs_.size(); }
    int64_t flow(std::size_t e) const { return arcs_[e].flow; }

    // Cancels negative cycles until none is left, or until `budget` relaxation steps are spent (then the
    // circulation so far is kept: each cancelled cycle is an improvement). Returns whether any was cancelled.
    bool cancel_negative_cycles(int64_t budget) {
        bool any = false;
        const std::size_t n = out_.size();
        std::vector<int64_t> dist(n);
        std::vector<std::ptrdiff_t> pred(n);
        for (;;) {
            std::fill(dist.begin(), dist.end(), 0);
            std::fill(pred.begin(), pred.end(), -1);
            std::ptrdiff_t last = -1;
            for (std::size_t round = 0; round < n; ++round) {
                budget -= static_cast<int64_t>(arcs_.size());
                if (budget < 0) return any;
                last = -1;
                for (std::size_t a = 0; a < n; ++a)
                    for (std::size_t e : out_[a]) {
                        const Arc& x = arcs_[e];
                        if (x.cap - x.flow > 0 && dist[a] + x.cost < dist[static_cast<std::size_t>(x.to)]) {
                            dist[static_cast<std::size_t>(x.to)] = dist[a] + x.cost;
                            pred[static_cast<std::size_t>(x.to)] = static_cast<std::ptrdiff_t>(e);
                            last = x.to;
                        }
                    }
                if (last < 0) return any;
            }
            // A node relaxed in round n lies on, or behind, a negative cycle: walk back n steps into it.
            std::size_t v = static_cast<std::size_t>(last);
            for (std::size_t i = 0; i < n; ++i) v = static_cast<std::size_t>(arcs_[static_cast<std::size_t>(pred[v]) ^ 1].to);
            std::vector<std::size_t> cycle;
            std::size_t u = v;
            do {
                const std::size_t e = static_cast<std::size_t>(pred[u]);
                cycle.push_back(e);
                u = static_cast<std::size_t>(arcs_[e ^ 1].to);
            } while (u != v);
            int64_t push = std::numeric_limits<int64_t>::max();
            for (std::size_t e : cycle) push = std::min(push, arcs_[e].cap - arcs_[e].flow);
            for (std::size_t e : cycle) arcs_[e].flow += push, arcs_[e ^ 1].flow -= push;
            any = true;
        }
    }

private:
    std::vector<std::vector<std::size_t>> out_;
    std::vector<Arc> arcs_;
};

}  // namespace

void exchange_for_racks(const Input& in, std::vector<int32_t>& owner, const std::vector<int64_t>& tsub_off,
                        const std::vector<int32_t>& tsub_member) {
    const Problem& p = in.problem;
    const int32_t M = in.M;
    // Member racks, as bits.
    std::vector<int32_t> racks;
    for (int32_t m = 0; m < M; ++m)
        if (p.member_rack[m] != kNoRack) racks.push_back(p.member_rack[m]);
    std::sort(racks.begin(), racks.end());
    racks.erase(std::unique(racks.begin(), racks.end()), racks.end());
    if (racks.size() > 63) return;
    auto bit_of = [&](int32_t rack) -> uint64_t {
        auto it = std::lower_bound(racks.begin(), racks.end(), rack);
        return it != racks.end() && *it == rack ? uint64_t{1} << (it - racks.begin()) : 0;
    };
    std::vector<uint64_t> member_bit(static_cast<std::size_t>(M), 0);  // 0: no rack (matches all)
    for (int32_t m = 0; m < M; ++m) member_bit[m] = p.member_rack[m] == kNoRack ? 0 : bit_of(p.member_rack[m]);
    auto matches = [&](int32_t m, uint64_t mask) { return member_bit[m] == 0 || (member_bit[m] & mask) != 0; };

    // Equal subscriptions (no per-topic lists given): every member subscribes to every topic in scope.
    const bool everyone = tsub_off.empty();
    auto subscriber_count = [&](int32_t t) -> int64_t { return everyone ? M : tsub_off[t + 1] - tsub_off[t]; };
    auto subscriber = [&](int32_t t, int64_t i) -> int32_t {
        return everyone ? static_cast<int32_t>(i) : tsub_member[static_cast<std::size_t>(tsub_off[t] + i)];
    };
    int64_t edges = 0;  // class -> subscriber arcs

    // Classes of the assigned partitions, and loads.
    using Key = std::tuple<int32_t, uint64_t, int32_t, int32_t>;  // topic, rack mask, weak owner, sticky owner
    std::map<Key, int32_t> class_id;
    std::vector<Key> classes;
    std::vector<int32_t> class_of(static_cast<std::size_t>(in.P), -1);
    std::vector<int64_t> load(static_cast<std::size_t>(M), 0);
    bool mismatch = false;
    for (int32_t t = 0; t < in.T; ++t) {
        if (!in.subscribed(t)) continue;
        for (int32_t part = in.topic_begin(t); part < in.topic_end(t); ++part) {
            const int32_t m = owner[part];
            if (m < 0) continue;
            ++load[m];
            uint64_t mask = 0;
            for (int64_t i = p.replica_offsets[part]; i < p.replica_offsets[part + 1]; ++i) mask |= bit_of(p.replica_racks[i]);
            mismatch = mismatch || !matches(m, mask);
            const Key key{t, mask, in.weak(part), in.sticky_owner[part]};
            auto it = class_id.find(key);
            if (it == class_id.end()) {
                // The graph only grows from here: give up as soon as one pass over it would exceed the limit.
                edges += subscriber_count(t);
                if ((static_cast<int64_t>(classes.size()) + 1 + M) * (2 * edges + 2 * M) > kMaxWork) return;
                it = class_id.emplace(key, static_cast<int32_t>(classes.size())).first;
                classes.push_back(key);
            }
            class_of[part] = it->second;
        }
    }
    // Every partition on a matching member: no rack match to gain, and the builders' sticky count is
    // already minimal; a weak owner alone never justifies a move (its partition would lose its match).
    if (!mismatch) return;
    const int32_t K = static_cast<int32_t>(classes.size());
    std::vector<int64_t> levels(load.begin(), load.end());
    std::sort(levels.begin(), levels.end());
    levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
    const int32_t Lc = static_cast<int32_t>(levels.size());
    // held[x * K + k]: class-k partitions member x holds (dense: K and M are small under the limit).

    const int64_t V = M + K + Lc;
    if (static_cast<int64_t>(M) * K > kMaxWork || V * (2 * edges + 2 * M) > kMaxWork) return;
    std::vector<int64_t> held(static_cast<std::size_t>(M) * K, 0);
    for (int32_t part = 0; part < in.P; ++part)
        if (class_of[part] >= 0) ++held[static_cast<std::size_t>(owner[part]) * K + class_of[part]];

    const int64_t G = 2 * (static_cast<int64_t>(in.P) + 1);
    const int64_t S = G * (static_cast<int64_t>(in.P) + 1);  // outweighs every rack and weak-owner term
    // What holding a class-k partition is worth to member m, negated: a rack match G, its sticky owner S,
    // its weak owner 1.
    auto value = [&](int32_t m, int32_t k) -> int64_t {
        return (matches(m, std::get<1>(classes[k])) ? G : 0) + (std::get<2>(classes[k]) == m ? 1 : 0) +
               (std::get<3>(classes[k]) == m ? S : 0);
    };
    Circulation net(static_cast<std::size_t>(V));
    auto class_node = [&](int32_t k) { return M + k; };
    auto level_node = [&](int64_t level) {
        return M + K + static_cast<int32_t>(std::lower_bound(levels.begin(), levels.end(), level) - levels.begin());
    };
    std::vector<std::size_t> give_arc(static_cast<std::size_t>(M) * K, SIZE_MAX);
    std::vector<std::pair<std::size_t, std::pair<int32_t, int32_t>>> take_arcs;  // arc, (class, member)
    for (int32_t k = 0; k < K; ++k) {
        const int32_t t = std::get<0>(classes[k]);
        for (int64_t i = 0; i < subscriber_count(t); ++i) {
            const int32_t y = subscriber(t, i);
            take_arcs.push_back({net.add(class_node(k), y, in.P, -value(y, k)), {k, y}});
            const int64_t h = held[static_cast<std::size_t>(y) * K + k];
            if (h > 0) give_arc[static_cast<std::size_t>(y) * K + k] = net.add(y, class_node(k), h, value(y, k));
        }
    }
    for (int32_t m = 0; m < M; ++m) {
        net.add(level_node(load[m]), m, 1, 0);
        if (std::binary_search(levels.begin(), levels.end(), load[m] + 1)) net.add(m, level_node(load[m] + 1), 1, 0);
    }
    if (!net.cancel_negative_cycles(kMaxTotalWork)) return;

    // Apply: per class, the partitions given away go to the takers.
    std::vector<std::vector<int32_t>> given(static_cast<std::size_t>(K));
    std::vector<int64_t> to_give(static_cast<std::size_t>(M) * K, 0);
    for (std::size_t i = 0; i < give_arc.size(); ++i)
        if (give_arc[i] != SIZE_MAX) to_give[i] = net.flow(give_arc[i]);
    // Take-arc flow cancels give flow on the same (member, class) pair: net it out.
    std::vector<int64_t> to_take(static_cast<std::size_t>(M) * K, 0);
    for (const auto& [arc, km] : take_arcs) to_take[static_cast<std::size_t>(km.second) * K + km.first] += net.flow(arc);
    for (std::size_t i = 0; i < to_give.size(); ++i) {
        const int64_t both = std::min(to_give[i], to_take[i]);
        to_give[i] -= both, to_take[i] -= both;
    }
    for (int32_t part = 0; part < in.P; ++part) {
        const int32_t k = class_of[part];
        if (k < 0) continue;
        int64_t& g = to_give[static_cast<std::size_t>(owner[part]) * K + k];
        if (g > 0) --g, given[k].push_back(part);
    }
    for (int32_t y = 0; y < M; ++y)
        for (int32_t k = 0; k < K; ++k)
            for (int64_t n = to_take[static_cast<std::size_t>(y) * K + k]; n > 0; --n) {
                owner[given[k].back()] = y;
                given[k].pop_back();
            }
}

}  // namespace sticky
}  // namespace kafkagroup
