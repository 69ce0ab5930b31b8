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
#include <functional>
#include <utility>

#include "kafkagroup/assignors.hpp"
#include "kafkagroup/server/server_assignors.hpp"
#include "kafkagroup/sticky/load_index.hpp"

namespace kafkagroup {
namespace server {
namespace {

constexpr int kMaxBalanceRounds = 16;   // Kafka's MAX_ITERATION_COUNT

// Non-zero exactly when a partition now held by `now` was held by another member before (`was`): both
// members, different. Branch-free, so that a block's test vectorises (marked_blocks).
struct MovedBits {
    int32_t operator()(int32_t now, int32_t was) const { return (now ^ was) & ~((now | was) >> 31); }
};
// Non-zero exactly when the partition is held now by a member that did not hold it before.
struct ForeignBits {
    int32_t operator()(int32_t now, int32_t was) const { return (now ^ was) & ~(now >> 31); }
};

// Calls take(part) for every partition of [0, n) whose bits(now, was) is non-zero, ascending. Blocks of 64
// with none are passed over with one test (the OR over a block: a loop GCC vectorises, where it does not
// vectorise a fixed-count inner loop of 16): after balancing, the partitions that changed hands are a few
// among many (49 of 500,000 when one member joins), and the per-partition loop with its branches was a
// third of such a call.
template <class Bits, class Take>
void marked_blocks(const int32_t* now, const int32_t* was, int32_t n, Bits bits, Take&& take) {
    constexpr int32_t kBlock = 64;
    for (int32_t part = 0; part < n; part += kBlock) {
        const int32_t stop = std::min(n, part + kBlock);
        int32_t any = 0;
        for (int32_t k = part; k < stop; ++k) any |= bits(now[k], was[k]);
        if (any == 0) continue;
        for (int32_t k = part; k < stop; ++k)
            if (bits(now[k], was[k]) != 0) take(k);
    }
}

class Heterogeneous {
public:
    // keep (Kafka's phase 1): every member keeps its previous partitions, so owner[] starts as the previous
    // owners (prev_owner holds a member or kUnassigned) and the loads as what each held: `held` when the
    // caller counted it (the direct path: a member's claims), else counted here.
    Heterogeneous(const Problem& p, const Prepared& pr, TopicSubscribers subs, const std::vector<int32_t>& prev_owner,
                  const std::vector<int64_t>* held, bool track_writes)
        : p_(p), pr_(pr), prev_(prev_owner), subs_(std::move(subs)), owner_(prev_owner),
          load_(static_cast<std::size_t>(pr.num_members), 0),
          local_(static_cast<std::size_t>(pr.num_members), -1), tracking_(track_writes) {
        if (held) {
            for (int32_t m = 0; m < pr.num_members; ++m) load_[m] = static_cast<int32_t>((*held)[m]);
        } else {
            for (const int32_t m : prev_) if (m >= 0) ++load_[m];
        }
        for (const int32_t l : load_) any_held_ |= l > 0;
    }

    HeterogeneousResult run() {
        fill();
        balance();
        level_by_chains();
        // With nothing held before (a first assignment), no partition can be taken from a previous owner:
        // restore's and restore_by_chains' lists would be empty and the count 0, after two scans of every
        // partition each (tracking ends during fill, which writes them all).
        if (!any_held_) return {std::move(owner_), std::move(load_), 0};
        restore();
        restore_by_chains();
        int64_t moved = 0;
        if (tracking_) {
            for (const int32_t part : changed()) moved += MovedBits{}(owner_[part], prev_[part]) != 0;
        } else {
            int32_t n = 0;   // at most kMaxPartitions (2^28); an int32 count vectorises
            for (int32_t part = 0; part < pr_.num_partitions; ++part) n += MovedBits{}(owner_[part], prev_[part]) != 0;
            moved = n;
        }
        return {std::move(owner_), std::move(load_), moved};
    }

private:
    int32_t count(int32_t t) const { return pr_.topic_base[t + 1] - pr_.topic_base[t]; }

    // Where owner_ may differ from prev_. fill, balance_topic and give record each partition they write, until
    // there are more than P/16 records (then every pass scans all partitions instead); restore and
    // restore_by_chains write only partitions already recorded, and level_by_chains' undo brings back an
    // earlier owner_, whose differences were recorded. After balancing, the partitions that changed hands are
    // a few among many (49 of 500,000 when one member joins): what follows reads those, not every partition.
    void record(int32_t part) { record_run(part, 1); }
    // record(part) for part in [first, first + n), in one step.
    void record_run(int32_t first, int32_t n) {
        if (!tracking_) return;
        if (static_cast<int64_t>(written_.size()) + n > pr_.num_partitions / 16 + 64) {   // the limit crossed
            tracking_ = false;
            std::vector<int32_t>().swap(written_);
            return;
        }
        for (int32_t k = 0; k < n; ++k) written_.push_back(first + k);
        written_sorted_ = false;
    }
    // The recorded partitions, ascending, each once (tracking_ only).
    const std::vector<int32_t>& changed() {
        if (!written_sorted_) {
            std::sort(written_.begin(), written_.end());
            written_.erase(std::unique(written_.begin(), written_.end()), written_.end());
            written_sorted_ = true;
        }
        return written_;
    }

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

    void fill() {
        // The free partitions of each subscribed topic, counted without a branch per partition (the loop
        // vectorises); filling one topic leaves the others' counts as they are.
        std::vector<int32_t> topics, free_in(static_cast<std::size_t>(pr_.num_topics), 0);
        for (int32_t t = 0; t < pr_.num_topics; ++t) {
            if (subs_.count(t) == 0) continue;
            int32_t free = any_held_ ? 0 : count(t);   // (nothing held before: every partition is free)
            if (any_held_)
                for (int32_t part = pr_.topic_base[t]; part < pr_.topic_base[t + 1]; ++part) free += owner_[part] < 0;
            free_in[t] = free;
            if (free > 0) topics.push_back(t);
        }
        sort_topics(topics);
        sticky::LoadIndex index;
        for (int32_t t : topics) {
            const int64_t free = free_in[t];
            const std::size_t s = static_cast<std::size_t>(subs_.count(t));
            const int32_t* const subs = subs_.begin(t);
            sticky::LoadIndex::Level level = index.water_level(subs, s, load_.data(), free);
            const int64_t* const loads = index.loads().data();
            int32_t part = pr_.topic_base[t];
            if (free == count(t)) {   // nothing of t kept (a first assignment, a new topic): runs of partitions
                int32_t* const owner = owner_.data();
                for (std::size_t i = 0; i < s; ++i) {
                    const int32_t g = static_cast<int32_t>(sticky::LoadIndex::grant(loads[i], level));
                    if (g == 0) continue;
                    const int32_t m = subs[i];
                    // (a grant is mostly one or two partitions: the first written alone, so that the loop's
                    // vectorised set-up is paid only by the rest)
                    owner[part] = m;
                    for (int32_t k = part + 1; k < part + g; ++k) owner[k] = m;
                    record_run(part, g);
                    part += g;
                    load_[m] += g;
                }
                continue;
            }
            for (std::size_t i = 0; i < s; ++i) {
                const int32_t m = subs[i];
                for (int64_t g = sticky::LoadIndex::grant(loads[i], level); g > 0; --g) {
                    while (owner_[part] != kUnassigned) ++part;
                    owner_[part] = m;
                    record(part);
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
        // A topic moves partitions only when two of its subscribers are two or more apart. While every member
        // that subscribes to anything is within one of every other, no topic can: balance_topic would return 0
        // after its O(subscribers) scan, so it is not called (the check is O(M), made again only after a topic
        // moved something). At 10,000 members x 750 topics each, one joining member, the scans were 7.5M
        // subscriptions a round for the few topics that give the newcomer its share.
        bool level = subscribers_within_one();
        for (int round = 0; round < kMaxBalanceRounds; ++round)
            for (std::size_t i = 0; i < topics.size(); ++i) {
                if (static_cast<int64_t>(i) == last_changed) return;   // a whole round without a move
                const int64_t moved = level ? 0 : balance_topic(topics[i]);
                if (moved > 0) level = subscribers_within_one();
                if (moved > 0 || last_changed == -1) last_changed = static_cast<int64_t>(i);
            }
    }

    // The loads of the members with a subscription differ by at most one.
    bool subscribers_within_one() const {
        int32_t lo = 0, hi = 0;
        bool any = false;
        for (int32_t m = 0; m < pr_.num_members; ++m) {
            if (p_.sub_offsets[m] == p_.sub_offsets[m + 1]) continue;
            lo = any ? std::min(lo, load_[m]) : load_[m];
            hi = any ? std::max(hi, load_[m]) : load_[m];
            any = true;
        }
        return hi - lo <= 1;
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
        // (with nothing held before, pass 0 would find nothing)
        for (int pass = any_held_ ? 0 : 1; pass < 2; ++pass)   // pass 0: previously held (ascending), pass 1: the others
            for (int32_t part = pr_.topic_base[t]; part < pr_.topic_base[t + 1]; ++part)
                if ((prev_[part] == owner_[part]) == (pass == 0)) grouped_[end_[local_[owner_[part]]]++] = part;

        // Most loaded holder first (ties: the higher member, as Kafka takes from the end of its sorted
        // list); least loaded subscriber first (ties: the lower member). Entries carry the load they were
        // pushed with; a stale entry is dropped when it surfaces, so each top is the extreme (load, position)
        // over the current loads whatever the heap's layout. Loads stay within [lo, hi]: a giver keeps at
        // least ll + 1 >= lo + 1, a taker gets at most hl - 1 <= hi - 1. So a subscriber starting at hi - 1 or
        // above never takes (the loop stops before), and a holder starting below lo + 2 gives nothing before
        // it has taken (and is pushed then): the heaps start without them, built in O(s) rather than by a
        // push each (at 750 subscribers and 3 moves, the pushes were most of the topic's cost).
        using Entry = std::pair<int32_t, int32_t>;   // (load, member position)
        std::vector<Entry>& most = most_;
        std::vector<Entry>& least = least_;
        const std::less<Entry> most_order;       // max-heap: the top is the most loaded
        const std::greater<Entry> least_order;   // min-heap: the top is the least loaded
        most.clear();
        least.clear();
        for (int32_t i = 0; i < s; ++i) {
            const int32_t l = load_[subs[i]];
            if (end_[i] > start_[i] && l >= lo + 2) most.emplace_back(l, i);
            if (l <= hi - 2) least.emplace_back(l, i);
        }
        std::make_heap(most.begin(), most.end(), most_order);
        std::make_heap(least.begin(), least.end(), least_order);
        const auto push = [](std::vector<Entry>& heap, Entry e, auto order) {
            heap.push_back(e);
            std::push_heap(heap.begin(), heap.end(), order);
        };
        const auto pop = [](std::vector<Entry>& heap, auto order) {
            std::pop_heap(heap.begin(), heap.end(), order);
            heap.pop_back();
        };
        int64_t moved = 0;
        while (!most.empty() && !least.empty()) {
            const auto [hl, h] = most.front();
            if (hl != load_[subs[h]] || end_[h] == start_[h]) { pop(most, most_order); continue; }
            const auto [ll, l] = least.front();
            if (ll != load_[subs[l]]) { pop(least, least_order); continue; }
            if (hl - ll <= 1) break;
            pop(most, most_order);
            pop(least, least_order);
            const int32_t part = grouped_[--end_[h]];
            owner_[part] = subs[l];
            record(part);
            --load_[subs[h]];
            ++load_[subs[l]];
            ++moved;
            if (end_[h] > start_[h]) push(most, Entry(load_[subs[h]], h), most_order);
            if (end_[l] > start_[l]) push(most, Entry(load_[subs[l]], l), most_order);
            push(least, Entry(load_[subs[h]], h), least_order);
            push(least, Entry(load_[subs[l]], l), least_order);
        }
        for (int32_t i = 0; i < s; ++i) local_[subs[i]] = -1;
        return moved;
    }

    // Kafka's per-topic balancing can stop with members two or more apart when no single topic joins them:
    // member A (4 partitions) holds none of topic x, the only topic of member C (2), while B (3) holds x and
    // shares topic y with A. A chain fixes it: A gives B a partition of y, B gives C one of x. Here,
    // breadth-first search over "u can give v a partition of a topic v subscribes to" from every least
    // loaded member finds the shortest chain from a member two or more above them and shifts one partition
    // along it (each intermediate member keeps its count; a partition it did not hold before moves first);
    // then the same from the most loaded members down. Ends when no chain exists: then no least loaded
    // member can gain and no most loaded member can lose without another member crossing them, so the spread
    // cannot shrink by such moves. O(chains * (P + subscriptions)); none when the loads are within one.
    void level_by_chains() {
        if (pr_.num_members < 2) return;
        std::vector<int32_t> parent(static_cast<std::size_t>(pr_.num_members));
        std::vector<int32_t> via(static_cast<std::size_t>(pr_.num_members));
        std::vector<char> topic_seen(static_cast<std::size_t>(pr_.num_topics));
        std::vector<int32_t> queue;
        // Chains cost moves; they are kept only where they narrow the spread: the work done at one level
        // (say, raising the least loaded members from 2 to 3) is undone when some member at that level cannot
        // be raised (the minimum stays 2, the moves would buy nothing the spread shows).
        std::vector<int32_t> saved_owner, saved_load;
        for (int direction = 0; direction < 2; ++direction) {   // 0: raise the least loaded, 1: lower the most
            int32_t saved_level = -1;
            while (true) {
                const auto [lo_it, hi_it] = std::minmax_element(load_.begin(), load_.end());
                const int32_t lo = *lo_it, hi = *hi_it;
                if (hi - lo <= 1) return;
                const int32_t level = direction == 0 ? lo : hi;
                if (level != saved_level) {   // a new level reached: keep what got us here
                    saved_owner = owner_;
                    saved_load = load_;
                    saved_level = level;
                }
                std::fill(parent.begin(), parent.end(), -2);
                std::fill(topic_seen.begin(), topic_seen.end(), 0);
                queue.clear();
                for (int32_t m = 0; m < pr_.num_members; ++m)
                    if (load_[m] == level) parent[m] = -1, queue.push_back(m);
                int32_t found = -1;
                for (std::size_t head = 0; head < queue.size() && found < 0; ++head) {
                    const int32_t v = queue[head];
                    if (direction == 0) {
                        // who can give v a partition: holders of v's topics
                        for (int64_t i = p_.sub_offsets[v]; i < p_.sub_offsets[v + 1] && found < 0; ++i) {
                            const int32_t t = p_.sub_topics[i];
                            if (topic_seen[t]) continue;
                            topic_seen[t] = 1;
                            for (int32_t part = pr_.topic_base[t]; part < pr_.topic_base[t + 1]; ++part) {
                                const int32_t u = owner_[part];
                                if (u < 0 || parent[u] != -2) continue;
                                parent[u] = v, via[u] = t;
                                if (load_[u] >= lo + 2) { found = u; break; }
                                queue.push_back(u);
                            }
                        }
                    } else {
                        // whom v can give a partition: subscribers of the topics v holds
                        for (int64_t i = p_.sub_offsets[v]; i < p_.sub_offsets[v + 1] && found < 0; ++i) {
                            const int32_t t = p_.sub_topics[i];
                            if (topic_seen[t] || !holds(v, t)) continue;
                            topic_seen[t] = 1;
                            for (const int32_t* u = subs_.begin(t); u != subs_.end(t); ++u) {
                                if (parent[*u] != -2) continue;
                                parent[*u] = v, via[*u] = t;
                                if (load_[*u] <= hi - 2) { found = *u; break; }
                                queue.push_back(*u);
                            }
                        }
                    }
                }
                if (found < 0) {   // this side is as level as chains make it: undo the partial level
                    owner_ = saved_owner;
                    load_ = saved_load;
                    break;
                }
                // shift one partition along the chain
                for (int32_t u = found; parent[u] >= 0; u = parent[u]) {
                    const int32_t giver = direction == 0 ? u : parent[u];
                    const int32_t taker = direction == 0 ? parent[u] : u;
                    give(giver, taker, via[u]);
                }
            }
        }
    }

    bool holds(int32_t m, int32_t t) const {
        for (int32_t part = pr_.topic_base[t]; part < pr_.topic_base[t + 1]; ++part)
            if (owner_[part] == m) return true;
        return false;
    }

    // One partition of topic t from `giver` to `taker`: one the giver did not hold before, if any.
    void give(int32_t giver, int32_t taker, int32_t t) {
        int32_t chosen = -1;
        for (int32_t part = pr_.topic_base[t]; part < pr_.topic_base[t + 1]; ++part) {
            if (owner_[part] != giver) continue;
            chosen = part;
            if (prev_[part] != giver) break;
        }
        owner_[chosen] = taker;
        record(chosen);
        --load_[giver];
        ++load_[taker];
    }

    // What restore() and restore_by_chains() start from: per member, the partitions it holds but did not hold
    // before (`foreign`), and the partitions taken from a previous owner (`moved`). False when none was.
    // The moved partitions are found first: with none (a first assignment, or nothing taken from anyone)
    // no per-member list is built (a vector per member was a third of a 1,000-member first assignment).
    bool collect_moved(std::vector<std::vector<int32_t>>& foreign, std::vector<int32_t>& moved) {
        moved.clear();
        const int32_t* const now = owner_.data();
        const int32_t* const was = prev_.data();
        if (tracking_) {
            for (const int32_t part : changed())
                if (MovedBits{}(now[part], was[part]) != 0) moved.push_back(part);
        } else {
            marked_blocks(now, was, pr_.num_partitions, MovedBits{}, [&](int32_t part) { moved.push_back(part); });
        }
        if (moved.empty()) return false;
        // One list per member, kept between the two calls and emptied in place (assigning M fresh vectors
        // each time was a twentieth of a 1,000-member call).
        if (foreign.size() != static_cast<std::size_t>(pr_.num_members)) foreign.resize(static_cast<std::size_t>(pr_.num_members));
        else for (std::vector<int32_t>& list : foreign) list.clear();
        if (tracking_) {
            for (const int32_t part : changed())
                if (ForeignBits{}(now[part], was[part]) != 0) foreign[now[part]].push_back(part);
        } else {
            marked_blocks(now, was, pr_.num_partitions, ForeignBits{}, [&](int32_t part) { foreign[now[part]].push_back(part); });
        }
        return true;
    }

    // After balancing: gives partitions back to their previous owner where that leaves the balance as good
    // or better (Kafka has no such step; its cascading per-topic moves often take more than needed):
    //   - p went from a to b and a holds fewer than b: p goes back (the two loads move towards each other,
    //     never past each other, so no load leaves the range it was in and nothing gets less balanced);
    //   - otherwise, if a holds a partition r it did not hold before, of a topic b subscribes to: p goes
    //     back to a and r to b (loads unchanged; one move fewer, two when r was b's).
    // Each step removes at least one move, so the passes end; they stop early after a pass without a step.
    // O(passes * (P + moved * foreign partitions scanned)).
    void restore() {
        std::vector<std::vector<int32_t>>& foreign = foreign_;
        std::vector<int32_t> moved;
        if (!collect_moved(foreign, moved)) return;
        // b's topics stamped once per partition examined: O(b's subscriptions) instead of sorting every list
        std::vector<int32_t> stamp(static_cast<std::size_t>(pr_.num_topics), -1);
        int32_t stamped_for = -1;
        auto subscribes = [&](int32_t m, int32_t t) {
            if (stamped_for != m) {
                ++stamp_epoch_;
                for (int64_t i = p_.sub_offsets[m]; i < p_.sub_offsets[m + 1]; ++i) stamp[p_.sub_topics[i]] = stamp_epoch_;
                stamped_for = m;
            }
            return stamp[t] == stamp_epoch_;
        };
        for (bool changed = true; changed;) {
            changed = false;
            for (int32_t part : moved) {
                const int32_t a = prev_[part], b = owner_[part];
                if (a == b) continue;
                if (load_[a] < load_[b]) {
                    owner_[part] = a, ++load_[a], --load_[b];
                    changed = true;
                    continue;
                }
                std::vector<int32_t>& mine = foreign[a];
                for (std::size_t k = 0; k < mine.size(); ++k) {
                    const int32_t r = mine[k];
                    if (owner_[r] != a) {   // no longer a's: drop the stale entry
                        mine[k--] = mine.back();
                        mine.pop_back();
                        continue;
                    }
                    if (!subscribes(b, pr_.topic_of(r))) continue;
                    owner_[part] = a;
                    owner_[r] = b;
                    mine[k] = mine.back();
                    mine.pop_back();
                    if (prev_[r] != b) foreign[b].push_back(r);
                    changed = true;
                    break;
                }
            }
        }
    }

    // restore()'s swap along a chain: p went from a to b; p goes back to a, a passes on a partition it did not
    // hold before to u1, u1 one it did not hold before to u2, ..., ending at b (loads unchanged) or at a member
    // below b (b loses one, that member gains one: the two move towards each other). Partitions passed on were
    // already moved away from their previous owner (or had none), so each chain is at least one move fewer.
    // Breadth-first over "u holds such a partition of a topic v subscribes to". Bounded: at most
    // kChainSearchBudget member visits in all, so a large group with many moves pays O(budget) at most.
    void restore_by_chains() {
        constexpr int64_t kChainSearchBudget = 4'000'000;
        const int32_t M = pr_.num_members;
        std::vector<std::vector<int32_t>>& foreign = foreign_;
        std::vector<int32_t> moved;
        if (!collect_moved(foreign, moved)) return;
        std::vector<int32_t> parent(static_cast<std::size_t>(M), -2), via(static_cast<std::size_t>(M), -1);
        std::vector<int32_t> topic_stamp(static_cast<std::size_t>(pr_.num_topics), -1);
        std::vector<int32_t> queue, visited;
        int64_t budget = kChainSearchBudget;
        int32_t search = 0;
        for (int32_t part : moved) {
            const int32_t a = prev_[part], b = owner_[part];
            if (a == b || budget <= 0) continue;
            ++search;
            queue.assign(1, a);
            visited.assign(1, a);
            parent[a] = -1;
            int32_t found = -1;
            for (std::size_t head = 0; head < queue.size() && found < 0 && budget > 0; ++head) {
                const int32_t u = queue[head];
                std::vector<int32_t>& mine = foreign[u];
                for (std::size_t k = 0; k < mine.size() && found < 0; ++k) {
                    const int32_t r = mine[k];
                    if (owner_[r] != u || prev_[r] == u) {   // stale: no longer u's, or back home
                        mine[k--] = mine.back();
                        mine.pop_back();
                        continue;
                    }
                    const int32_t t = pr_.topic_of(r);
                    if (topic_stamp[t] == search) continue;
                    topic_stamp[t] = search;
                    for (const int32_t* v = subs_.begin(t); v != subs_.end(t); ++v) {
                        --budget;
                        if (parent[*v] != -2) continue;
                        parent[*v] = u, via[*v] = r;
                        visited.push_back(*v);
                        if (*v == b || load_[*v] < load_[b]) { found = *v; break; }
                        queue.push_back(*v);
                    }
                }
            }
            if (found >= 0) {
                owner_[part] = a;
                ++load_[a];
                --load_[b];
                for (int32_t v = found; parent[v] >= 0; v = parent[v]) {
                    const int32_t r = via[v];
                    owner_[r] = v;
                    --load_[parent[v]];
                    ++load_[v];
                    if (prev_[r] != v) foreign[v].push_back(r);
                }
            }
            for (int32_t v : visited) parent[v] = -2;
        }
    }

    const Problem& p_;
    const Prepared& pr_;
    const std::vector<int32_t>& prev_;
    int32_t stamp_epoch_ = 0;
    const TopicSubscribers subs_;
    std::vector<int32_t> owner_;
    std::vector<int32_t> load_;
    std::vector<int32_t> local_;              // member -> position in the topic being balanced, else -1
    std::vector<int32_t> start_, end_, grouped_;
    std::vector<std::pair<int32_t, int32_t>> most_, least_;   // balance_topic's heaps
    std::vector<std::vector<int32_t>> foreign_;   // restore's and restore_by_chains' lists (collect_moved)
    std::vector<int32_t> written_;   // record()'s partitions
    bool tracking_, written_sorted_ = false;
    bool any_held_ = false;   // some member held a partition before (prev_ names an owner)
};

}  // namespace

HeterogeneousResult build_heterogeneous(const Problem& p, const Prepared& pr, TopicSubscribers subs,
                                        const std::vector<int32_t>& prev_owner, const std::vector<int64_t>* held,
                                        bool track_writes) {
    return Heterogeneous(p, pr, std::move(subs), prev_owner, held, track_writes).run();
}

std::vector<int32_t> uniform_heterogeneous(const Problem& p, const Prepared& pr, const std::vector<int32_t>& prev_owner) {
    return build_heterogeneous(p, pr, topic_subscribers(p, pr), prev_owner, nullptr).owner;
}

}  // namespace server
}  // namespace kafkagroup
