// Sticky assignment when subscriptions differ: the optimal (decreasingly minimal) load vector, with the
// fewest moved partitions that load vector allows.
//
// Model. Assigning partition p to member m costs 1 when p has a valid sticky owner other than m, else 0;
// `moved` is the total cost. The balance objective is the square sum of loads: in this transportation
// problem its minimisers are exactly the decreasingly-minimal load vectors (Frank & Murota), and such a
// vector admits no chain of moves from a member to one with >= 2 fewer partitions (so in particular no
// single move, Kafka's isBalanced condition). Balance ranks above cost.
//
// Algorithm (successive shortest paths on a convex-cost flow):
//  1. keep every valid owned partition (cost 0, hence the cheapest assignment for its own load vector);
//  2. hand the free partitions out, topic by topic (fewest subscribers first), by water-filling the
//     subscribers' loads (load_index.hpp); free partitions cost 0 wherever they go;
//  3. while some member u can reach, through a chain of moves, a member v with load(v) <= load(u) - 2,
//     move one partition along the cheapest such chain (Bellman-Ford/SPFA on the residual graph; no
//     negative cycle exists because every intermediate assignment is cheapest for its load vector);
//  4. cost clean-up: move along negative-cost chains from a member at level l + 1 to one at level l
//     (load vector unchanged as a multiset, fewer moved partitions) until none exists.
// After 3 and 4 the residual graph with the convex node costs has no negative cycle, which is the
// optimality condition of convex-cost flow: balance optimal, and `moved` minimal for that balance.
//
// The residual graph has member nodes and topic nodes: member x -> topic t when x holds a partition of t
// (cost 0 if x holds one it does not own, else +1), topic t -> each subscriber (cost 0), and member x ->
// member o (cost -1) for a partition x holds whose sticky owner is o. Edges per search:
// O(sum of held topics + sum of subscriptions + displaced partitions). Step 2 avoids most of step 3:
// fresh groups and groups after members left usually need no chain at all.
#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "kafkagroup/sticky/load_index.hpp"
#include "kafkagroup/sticky/sticky_input.hpp"

namespace kafkagroup {
namespace sticky {
namespace {

constexpr int64_t kInf = std::numeric_limits<int64_t>::max() / 4;

struct Held {
    int32_t topic;
    int32_t count;    // partitions of `topic` the member holds
    int32_t foreign;  // of those, partitions whose sticky owner is not this member
};

class GeneralBuilder {
public:
    explicit GeneralBuilder(const Input& in)
        : in_(in), M_(in.M), T_(in.T), owner_(static_cast<std::size_t>(in.P), kUnassigned),
          load_(static_cast<std::size_t>(in.M), 0), held_(static_cast<std::size_t>(in.M)),
          displaced_(static_cast<std::size_t>(in.M)) {}

    std::vector<int32_t> build() {
        keep_owned();
        fill_free();
        drop_empty_entries();
        balance();
        reduce_moves();
        return std::move(owner_);
    }

private:
    // ---- bookkeeping -------------------------------------------------------------------------
    Held& held_entry(int32_t m, int32_t t) {
        // Builders add partitions topic by topic, so the entry is usually the last one appended.
        if (!held_[m].empty() && held_[m].back().topic == t) return held_[m].back();
        for (Held& h : held_[m])
            if (h.topic == t) return h;
        held_[m].push_back(Held{t, 0, 0});
        return held_[m].back();
    }

    void give(int32_t part, int32_t t, int32_t m) {
        owner_[part] = m;
        ++load_[m];
        Held& h = held_entry(m, t);
        ++h.count;
        const int32_t so = in_.sticky_owner[part];
        if (so != m) {
            ++h.foreign;
            if (so >= 0) displaced_[m].push_back(part);
        }
    }

    void take(int32_t part, int32_t t, int32_t m) {
        owner_[part] = kUnassigned;
        --load_[m];
        Held& h = held_entry(m, t);
        --h.count;
        const int32_t so = in_.sticky_owner[part];
        if (so != m) {
            --h.foreign;
            if (so >= 0) {
                auto& d = displaced_[m];
                d.erase(std::find(d.begin(), d.end(), part));
            }
        }
    }

    // ---- 1. keep, 2. fill --------------------------------------------------------------------
    void keep_owned() {
        for (int32_t t = 0; t < T_; ++t)
            for (int32_t part = in_.topic_begin(t); part < in_.topic_end(t); ++part)
                if (in_.sticky_owner[part] >= 0) give(part, t, in_.sticky_owner[part]);
    }

    void fill_free() {
        std::vector<int32_t> topics;
        for (int32_t t = 0; t < T_; ++t)
            if (in_.subscribed(t)) topics.push_back(t);
        // Kafka's TopicComparator: fewest potential consumers first, then topic order.
        std::stable_sort(topics.begin(), topics.end(),
                         [&](int32_t a, int32_t b) { return in_.subscribers.count(a) < in_.subscribers.count(b); });
        LoadIndex index;
        std::vector<int64_t> grants;
        std::vector<int32_t> free_parts;
        // has_entry[m] == t: member m already has a Held entry for topic t (it kept owned partitions of
        // t); everyone else gets a fresh entry without a search (members hold up to T topics).
        std::vector<int32_t> has_entry(static_cast<std::size_t>(M_), -1);
        for (int32_t t : topics) {
            free_parts.clear();
            for (int32_t part = in_.topic_begin(t); part < in_.topic_end(t); ++part) {
                if (owner_[part] == kUnassigned) free_parts.push_back(part);
                else has_entry[owner_[part]] = t;
            }
            if (free_parts.empty()) continue;
            const int32_t* sub_begin = in_.subscribers.begin(t);
            for (const int32_t* m = sub_begin; m != in_.subscribers.end(t); ++m)
                if (has_entry[*m] != t) held_[*m].push_back(Held{t, 0, 0}), has_entry[*m] = t;
            const int32_t* subs = in_.subscribers.begin(t);
            const std::size_t s = static_cast<std::size_t>(in_.subscribers.count(t));
            if (in_.rack_aware) {
                fill_with_racks(t, subs, s, free_parts);
                continue;
            }
            index.fill_levels(subs, s, load_, static_cast<int64_t>(free_parts.size()), grants);
            std::size_t next = 0;
            for (std::size_t i = 0; i < s; ++i)
                for (int64_t g = 0; g < grants[i]; ++g) give(free_parts[next++], t, subs[i]);
        }
    }

    // Drops the Held entries fill_free opened for topics a member then got nothing of.
    void drop_empty_entries() {
        for (auto& list : held_)
            list.erase(std::remove_if(list.begin(), list.end(), [](const Held& h) { return h.count == 0; }), list.end());
    }

    // KIP-881 (Kafka's maybeAssign with rack info, then without): each partition goes to the least
    // loaded subscriber whose rack holds a replica, else to the least loaded subscriber. O(s) each.
    void fill_with_racks(int32_t t, const int32_t* subs, std::size_t s, const std::vector<int32_t>& free_parts) {
        for (int32_t part : free_parts) {
            int32_t best = -1, any = -1;
            for (std::size_t i = 0; i < s; ++i) {
                const int32_t m = subs[i];
                if (any < 0 || load_[m] < load_[any]) any = m;
                if (in_.problem.member_rack[m] != kNoRack && in_.racks_match(m, part) &&
                    (best < 0 || load_[m] < load_[best]))
                    best = m;
            }
            give(part, t, best >= 0 ? best : any);
        }
    }

    // ---- shortest paths on the residual graph --------------------------------------------------
    // Nodes: members [0, M), topics [M, M + T). Multi-source SPFA from `sources` (distance 0).
    void shortest_paths(const std::vector<int32_t>& sources) {
        const std::size_t V = static_cast<std::size_t>(M_) + static_cast<std::size_t>(T_);
        dist_.assign(V, kInf);
        parent_.assign(V, -1);
        parent_part_.assign(V, -1);
        in_queue_.assign(V, 0);
        queue_.clear();
        for (int32_t s : sources) {
            dist_[s] = 0;
            in_queue_[s] = 1;
            queue_.push_back(s);
        }
        // Relaxations are bounded: without negative cycles SPFA relaxes each node < V times per node.
        const uint64_t budget = static_cast<uint64_t>(V) * static_cast<uint64_t>(V) + 16;
        uint64_t relaxations = 0;
        auto relax = [&](int32_t from, int32_t to, int64_t w, int32_t part) {
            const int64_t d = dist_[from] + w;
            if (d >= dist_[to]) return;
            if (++relaxations > budget) throw std::logic_error("sticky: negative cycle in the residual graph");
            dist_[to] = d;
            parent_[to] = from;
            parent_part_[to] = part;
            if (!in_queue_[to]) {
                in_queue_[to] = 1;
                queue_.push_back(to);
            }
        };
        for (std::size_t head = 0; head < queue_.size(); ++head) {
            const int32_t node = queue_[head];
            in_queue_[node] = 0;
            if (node < M_) {
                for (const Held& h : held_[node])
                    if (h.count > 0 && in_.subscribers.count(h.topic) > 1)
                        relax(node, M_ + h.topic, h.foreign > 0 ? 0 : 1, -1);
                for (int32_t part : displaced_[node]) relax(node, in_.sticky_owner[part], -1, part);
            } else {
                const int32_t t = node - M_;
                for (const int32_t* y = in_.subscribers.begin(t); y != in_.subscribers.end(t); ++y)
                    relax(node, *y, 0, -1);
            }
            // The queue vector only grows; compact it when the consumed prefix dominates.
            if (head > 4096 && head * 2 > queue_.size()) {
                queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(head) + 1);
                head = static_cast<std::size_t>(-1);
            }
        }
    }

    // Moves one partition along the recorded path ending at member `target`.
    void augment(int32_t target) {
        path_.clear();
        for (int32_t v = target; v >= 0; v = parent_[v]) {
            path_.push_back(v);
            if (path_.size() > static_cast<std::size_t>(M_ + T_) + 1)
                throw std::logic_error("sticky: cycle in the shortest-path tree");
        }
        std::reverse(path_.begin(), path_.end());
        // path_: member, (topic, member | member), ... ; apply moves from the source end.
        std::size_t i = 0;
        while (i + 1 < path_.size()) {
            const int32_t from = path_[i];
            const int32_t next = path_[i + 1];
            if (next < M_) {  // displaced partition returning to its sticky owner
                const int32_t part = parent_part_[next];
                const int32_t t = in_.prepared.topic_of(part);
                take(part, t, from);
                give(part, t, next);
                i += 1;
            } else {
                const int32_t t = next - M_;
                const int32_t to = path_[i + 2];
                // Prefer a partition `from` does not own (cost 0) over one of its own (cost 1); among
                // equals, one whose replica racks hold `to` (KIP-881 preference during balancing; racks
                // are a tie-break here, not part of the cost model).
                int32_t chosen = -1;
                int rank_chosen = -1;
                for (int32_t part = in_.topic_begin(t); part < in_.topic_end(t); ++part) {
                    if (owner_[part] != from) continue;
                    const int rank = (in_.sticky_owner[part] != from ? 2 : 0) +
                                     (in_.rack_aware && in_.racks_match(to, part) && !in_.racks_match(from, part) ? 1 : 0);
                    if (rank > rank_chosen) chosen = part, rank_chosen = rank;
                    if (rank_chosen == 3 || (!in_.rack_aware && rank_chosen == 2)) break;
                }
                take(chosen, t, from);
                give(chosen, t, to);
                i += 2;
            }
        }
    }

    // ---- 3. balance ------------------------------------------------------------------------------
    // reach_[x]: the lowest load of any member x can push a partition to through a chain of moves
    // (x itself included). O(M log M + held topics + subscriptions).
    void lowest_reachable() {
        // holders of each topic, CSR
        holder_off_.assign(static_cast<std::size_t>(T_) + 1, 0);
        for (int32_t x = 0; x < M_; ++x)
            for (const Held& h : held_[x])
                if (h.count > 0) ++holder_off_[h.topic + 1];
        for (int32_t t = 0; t < T_; ++t) holder_off_[t + 1] += holder_off_[t];
        holders_.resize(static_cast<std::size_t>(holder_off_[T_]));
        {
            std::vector<int64_t> fill(holder_off_.begin(), holder_off_.end() - 1);
            for (int32_t x = 0; x < M_; ++x)
                for (const Held& h : held_[x])
                    if (h.count > 0) holders_[fill[h.topic]++] = x;
        }
        by_load_.resize(static_cast<std::size_t>(M_));
        std::iota(by_load_.begin(), by_load_.end(), 0);
        std::stable_sort(by_load_.begin(), by_load_.end(), [&](int32_t a, int32_t b) { return load_[a] < load_[b]; });
        reach_.assign(static_cast<std::size_t>(M_), kInf);
        topic_done_.assign(static_cast<std::size_t>(T_), 0);
        const Problem& p = in_.problem;
        for (int32_t v : by_load_) {
            if (reach_[v] != kInf) continue;
            reach_[v] = load_[v];
            queue_.assign(1, v);
            for (std::size_t head = 0; head < queue_.size(); ++head) {
                const int32_t y = queue_[head];
                for (int64_t i = p.sub_offsets[y]; i < p.sub_offsets[y + 1]; ++i) {
                    const int32_t t = p.sub_topics[i];
                    if (topic_done_[t]) continue;
                    topic_done_[t] = 1;
                    for (int64_t k = holder_off_[t]; k < holder_off_[t + 1]; ++k) {
                        const int32_t x = holders_[k];
                        if (reach_[x] == kInf) {
                            reach_[x] = load_[v];
                            queue_.push_back(x);
                        }
                    }
                }
            }
        }
    }

    void balance() {
        std::vector<int32_t> sources;
        bool try_max_level = true;
        for (;;) {
            int64_t top = -1;
            const auto [lo, hi] = std::minmax_element(load_.begin(), load_.end());
            if (*hi - *lo <= 1) return;  // no member can be two below another: optimal
            if (try_max_level) {
                // Usual case first: the fullest members reach a member two below (one search, no labelling).
                top = *std::max_element(load_.begin(), load_.end());
            } else {
                lowest_reachable();
                for (int32_t x = 0; x < M_; ++x)
                    if (load_[x] >= reach_[x] + 2) top = std::max(top, load_[x]);
                if (top < 0) return;
            }
            sources.clear();
            for (int32_t x = 0; x < M_; ++x)
                if (load_[x] == top) sources.push_back(x);
            shortest_paths(sources);
            int32_t target = -1;
            for (int32_t v = 0; v < M_; ++v) {
                if (dist_[v] == kInf || load_[v] > top - 2) continue;
                if (target < 0 || dist_[v] < dist_[target] ||
                    (dist_[v] == dist_[target] && load_[v] < load_[target]))
                    target = v;
            }
            if (target < 0) {
                if (!try_max_level) throw std::logic_error("sticky: improvable member without a reachable target");
                try_max_level = false;
                continue;
            }
            augment(target);
            try_max_level = true;
        }
    }

    // ---- 4. fewer moves at the same balance ------------------------------------------------------
    void reduce_moves() {
        std::vector<int32_t> sources, levels;
        for (;;) {
            bool any_displaced = false;
            for (int32_t x = 0; x < M_ && !any_displaced; ++x) any_displaced = !displaced_[x].empty();
            if (!any_displaced) return;  // cost 0: nothing can be cheaper
            levels.assign(load_.begin(), load_.end());
            std::sort(levels.begin(), levels.end());
            levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
            bool improved = false;
            for (std::size_t li = levels.size(); li-- > 0 && !improved;) {
                const int64_t level = levels[li];
                sources.clear();
                for (int32_t x = 0; x < M_; ++x)
                    if (load_[x] == level) sources.push_back(x);
                shortest_paths(sources);
                // A negative chain to a member exactly one below swaps the two loads (same multiset).
                // (Chains between two members of one level would unbalance; negative cycles cannot
                // exist, see the file comment.)
                int32_t target = -1;
                for (int32_t v = 0; v < M_; ++v) {
                    if (dist_[v] >= 0 || load_[v] != level - 1) continue;
                    if (target < 0 || dist_[v] < dist_[target]) target = v;
                }
                if (target >= 0) {
                    augment(target);
                    improved = true;
                }
            }
            if (!improved) return;
        }
    }

    const Input& in_;
    const int32_t M_, T_;
    std::vector<int32_t> owner_;
    std::vector<int64_t> load_;
    std::vector<std::vector<Held>> held_;
    std::vector<std::vector<int32_t>> displaced_;  // partitions held whose sticky owner is another member
    // scratch
    std::vector<int64_t> dist_;
    std::vector<int32_t> parent_, parent_part_, queue_, path_, holders_, by_load_;
    std::vector<char> in_queue_, topic_done_;
    std::vector<int64_t> holder_off_, reach_;
};

}  // namespace

std::vector<int32_t> build_general(const Input& in) { return GeneralBuilder(in).build(); }

}  // namespace sticky
}  // namespace kafkagroup
