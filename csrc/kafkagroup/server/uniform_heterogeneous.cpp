// Kafka 4's UniformHeterogeneousAssignmentBuilder (4.4.0), on arrays.
//
// Kafka's three phases, kept as they are:
//   1. keep: every member keeps its previous partitions of topics it still subscribes to (prev_owner);
//   2. fill: topics in Kafka's order (partitions per subscriber descending, then subscriber count
//      ascending, then topic), each topic's unassigned partitions water-filled over its subscribers by
//      load (sticky::LoadIndex, shared with the classic general sticky builder's fill);
//   3. balance: topics with two or more subscribers in the same order, over and over (at most 16 rounds,
//      ending once a whole round changes nothing): while the most loaded subscriber that holds one of the
//      topic's partitions has two more than the least loaded subscriber, one partition moves between them.
//
// Where we differ, and why it is never worse:
//   - Ties. Kafka breaks ties between members by their position in the group's HashMap and between topics
//     by topic id; we use member order and topic order (name). Either choice gives the same loads in the
//     usual patterns; which member or topic is visited first can differ.
//   - Which partition moves in phase 3. Kafka moves the member's highest partition of the topic, sticky or
//     not. We move first a partition the member did not hold before this assignment (filled in phase 2 or
//     received earlier in phase 3), which costs no move from a previous owner, and only then one it held
//     (highest id first, as Kafka). The loads after every step are the same as Kafka's choice would give.
// Phase 3 costs O(subscribers) per topic per round to find the topic's load range, and
// O(P_t + s log s + moves log s) for a topic that needs balancing (two binary heaps over its subscribers).
#include <algorithm>
#include <queue>
#include <utility>

#include "kafkagroup/assignors.hpp"
#include "kafkagroup/server/server_assignors.hpp"
#include "kafkagroup/sticky/load_index.hpp"

namespace kafkagroup {
namespace server {
namespace {

constexpr int kMaxBalanceRounds = 16;   // Kafka's MAX_ITERATION_COUNT

class Heterogeneous {
public:
    Heterogeneous(const Problem& p, const Prepared& pr, const std::vector<int32_t>& prev_owner)
        : pr_(pr), prev_(prev_owner), subs_(topic_subscribers(p, pr)),
          owner_(static_cast<std::size_t>(pr.num_partitions), kUnassigned),
          load_(static_cast<std::size_t>(pr.num_members), 0),
          local_(static_cast<std::size_t>(pr.num_members), -1) {}

    std::vector<int32_t> run() {
        keep();
        fill();
        balance();
        return std::move(owner_);
    }

private:
    int32_t count(int32_t t) const { return pr_.topic_base[t + 1] - pr_.topic_base[t]; }

    // Kafka's topic order: partitions per subscriber descending (compared exactly, by cross products),
    // subscriber count ascending, then topic id (here: topic order).
    void sort_topics(std::vector<int32_t>& topics) const {
        std::sort(topics.begin(), topics.end(), [this](int32_t a, int32_t b) {
            const int64_t pa = count(a), pb = count(b), sa = subs_.count(a), sb = subs_.count(b);
            if (pa * sb != pb * sa) return pa * sb > pb * sa;
            if (sa != sb) return sa < sb;
            return a < b;
        });
    }

    void keep() {
        for (int32_t part = 0; part < pr_.num_partitions; ++part)
            if (prev_[part] >= 0) owner_[part] = prev_[part], ++load_[prev_[part]];
    }

    void fill() {
        std::vector<int32_t> topics;
        for (int32_t t = 0; t < pr_.num_topics; ++t) {
            if (subs_.count(t) == 0) continue;
            for (int32_t part = pr_.topic_base[t]; part < pr_.topic_base[t + 1]; ++part)
                if (owner_[part] == kUnassigned) { topics.push_back(t); break; }
        }
        sort_topics(topics);
        sticky::LoadIndex index;
        for (int32_t t : topics) {
            int64_t free = 0;
            for (int32_t part = pr_.topic_base[t]; part < pr_.topic_base[t + 1]; ++part) free += owner_[part] == kUnassigned;
            const std::size_t s = static_cast<std::size_t>(subs_.count(t));
            sticky::LoadIndex::Level level = index.water_level(subs_.begin(t), s, load_.data(), free);
            int32_t part = pr_.topic_base[t];
            for (std::size_t i = 0; i < s; ++i) {
                const int32_t m = subs_.begin(t)[i];
                for (int64_t g = sticky::LoadIndex::grant(index.loads()[i], level); g > 0; --g) {
                    while (owner_[part] != kUnassigned) ++part;
                    owner_[part] = m;
                    ++load_[m];
                }
            }
        }
    }

    void balance() {
        std::vector<int32_t> topics;
        for (int32_t t = 0; t < pr_.num_topics; ++t)
            if (subs_.count(t) >= 2) topics.push_back(t);
        if (topics.empty()) return;
        sort_topics(topics);
        int64_t last_changed = -1;
        for (int round = 0; round < kMaxBalanceRounds; ++round)
            for (std::size_t i = 0; i < topics.size(); ++i) {
                if (static_cast<int64_t>(i) == last_changed) return;   // a whole round without a move
                if (balance_topic(topics[i]) > 0 || last_changed == -1) last_changed = static_cast<int64_t>(i);
            }
    }

    // Moves partitions of topic t from its most loaded holders to its least loaded subscribers until they
    // differ by at most one. Returns the number moved.
    int64_t balance_topic(int32_t t) {
        const int32_t* subs = subs_.begin(t);
        const int32_t s = static_cast<int32_t>(subs_.count(t));
        int32_t lo = load_[subs[0]], hi = lo;
        for (int32_t i = 1; i < s; ++i) lo = std::min(lo, load_[subs[i]]), hi = std::max(hi, load_[subs[i]]);
        if (hi - lo <= 1) return 0;

        // The topic's partitions grouped by holder (local index i = position in subs): each group holds
        // the partitions its member already held before this assignment first, then the others, so that
        // taking from the back moves a newly given partition first.
        for (int32_t i = 0; i < s; ++i) local_[subs[i]] = i;
        start_.assign(static_cast<std::size_t>(s) + 1, 0);
        for (int32_t part = pr_.topic_base[t]; part < pr_.topic_base[t + 1]; ++part) ++start_[local_[owner_[part]] + 1];
        for (int32_t i = 0; i < s; ++i) start_[i + 1] += start_[i];
        end_.assign(start_.begin(), start_.end() - 1);
        grouped_.resize(static_cast<std::size_t>(count(t)));
        for (int pass = 0; pass < 2; ++pass)   // pass 0: previously held (ascending), pass 1: the others
            for (int32_t part = pr_.topic_base[t]; part < pr_.topic_base[t + 1]; ++part)
                if ((prev_[part] == owner_[part]) == (pass == 0)) grouped_[end_[local_[owner_[part]]]++] = part;

        // Most loaded holder first (ties: the higher member, as Kafka takes from the end of its sorted
        // list); least loaded subscriber first (ties: the lower member). Entries carry the load they were
        // pushed with; a stale entry is dropped when it surfaces.
        using Entry = std::pair<int32_t, int32_t>;   // (load, member position)
        std::priority_queue<Entry> most;
        std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> least;
        for (int32_t i = 0; i < s; ++i) {
            if (end_[i] > start_[i]) most.emplace(load_[subs[i]], i);
            least.emplace(load_[subs[i]], i);
        }
        int64_t moved = 0;
        while (!most.empty() && !least.empty()) {
            const auto [hl, h] = most.top();
            if (hl != load_[subs[h]] || end_[h] == start_[h]) { most.pop(); continue; }
            const auto [ll, l] = least.top();
            if (ll != load_[subs[l]]) { least.pop(); continue; }
            if (hl - ll <= 1) break;
            most.pop();
            least.pop();
            const int32_t part = grouped_[--end_[h]];
            owner_[part] = subs[l];
            --load_[subs[h]];
            ++load_[subs[l]];
            ++moved;
            if (end_[h] > start_[h]) most.emplace(load_[subs[h]], h);
            if (end_[l] > start_[l]) most.emplace(load_[subs[l]], l);
            least.emplace(load_[subs[h]], h);
            least.emplace(load_[subs[l]], l);
        }
        for (int32_t i = 0; i < s; ++i) local_[subs[i]] = -1;
        return moved;
    }

    const Prepared& pr_;
    const std::vector<int32_t>& prev_;
    const TopicSubscribers subs_;
    std::vector<int32_t> owner_;
    std::vector<int32_t> load_;
    std::vector<int32_t> local_;              // member -> position in the topic being balanced, else -1
    std::vector<int32_t> start_, end_, grouped_;
};

}  // namespace

std::vector<int32_t> uniform_heterogeneous(const Problem& p, const Prepared& pr, const std::vector<int32_t>& prev_owner) {
    return Heterogeneous(p, pr, prev_owner).run();
}

}  // namespace server
}  // namespace kafkagroup
