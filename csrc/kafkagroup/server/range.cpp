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
// range_direct is the whole call unless two claims that count (on topics their members subscribe to) name one
// partition: one walk over the claims (RangeClaims) counts those the new ranges keep and skips the claims on
// topics a member left, and the loads and holders come from the split itself,
// so neither previous_owners' array nor compute_metrics' pass over the partitions is made. The metrics are
// compute_metrics' (complete_metrics finishes both).
#include <algorithm>
#include <optional>

#include "kafkagroup/assignors.hpp"
#include "kafkagroup/metrics.hpp"
#include "kafkagroup/server/clean_claims.hpp"
#include "kafkagroup/server/server_assignors.hpp"
#include "kafkagroup/topic_search.hpp"

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
    // A topic lists at most min(P_t, M) takers: slots for more would be zero-filled and never written
    // (500 members x 10 topics of 2,500 partitions: 5,010 slots instead of 25,000).
    std::vector<int32_t> slots(static_cast<std::size_t>(T));
    for (int32_t t = 0; t < T; ++t) {
        slots[t] = std::min(pr.topic_base[t + 1] - pr.topic_base[t], pr.num_members);
        out.first[t] = at;
        at += slots[t];
        open += slots[t] > 0;
    }
    out.members.resize(static_cast<std::size_t>(at));
    // The next free slot of topic t's takers runs from first[t] to first[t] + P_t; a subscriber arriving when
    // it is full settles the topic (over[t]): count(t) is then P_t + 1. Per subscription a load, a compare and
    // two stores (seen[] against the topic's bounds cost twice that).
    std::vector<int64_t> slot(out.first), stop(static_cast<std::size_t>(T));
    std::vector<char> over(static_cast<std::size_t>(T), 0);
    for (int32_t t = 0; t < T; ++t) stop[t] = out.first[t] + slots[t];
    int64_t* const next = slot.data();
    const int64_t* const full = stop.data();
    int32_t* const takers = out.members.data();
    const int32_t* const topics = p.sub_topics.data;
    for (int32_t m = 0; m < pr.num_members && open > 0; ++m)
        for (int64_t i = p.sub_offsets[m], end = p.sub_offsets[m + 1]; i < end; ++i) {
            const int32_t t = topics[i];
            const int64_t s = next[t];
            if (s < full[t]) {
                takers[s] = m;
                next[t] = s + 1;
            } else if (!over[t] && full[t] > out.first[t]) {   // one more subscriber than partitions: settled
                over[t] = 1;
                --open;
            }
        }
    for (int32_t t = 0; t < T; ++t) out.size[t] = slot[t] - out.first[t] + over[t];
    return out;
}

// The claims walk of range_direct. range ignores the previous assignment, so claims feed only the metrics:
// how many each member validly held (owned) and how many of those the new ranges give to someone else
// (moved). ownership.hpp's rules count a claim when its member subscribes to the partition's topic (rule 1);
// when no counted claim shares its partition with another (rules 2-4 then have nothing to decide) the
// counted claims are exactly the previous owners, which is all this walk handles: a partition named twice
// by counted claims returns false and the engine takes the general path.
//
// The common claim is one the new ranges give back to its claimant (owner[part] == m): a load, a compare
// and a store that marks the partition as claimed (the sign bit of owner[part]; member ids are below
// 2^31 - 1, so a marked entry is negative and never kUnassigned). Any other claim goes to claim_elsewhere,
// which finds the topic and whether m subscribes to it; a claim on an unsubscribed topic is skipped without
// a mark (it does not count). A counted claim meeting a marked entry is a second counted claim on the
// partition. The marks are cleared after the walk (a vectorised pass over owner[]).
//
// Limit, measured (callgrind, 1,001 members x 50,000 partitions x 10 topics, the previous target this very
// split): the walk is ~7 instructions a claim and the unmark pass ~1.5 a partition, ~400k of the call's
// ~860k; prepare()'s range check of the claims ~2.25 a claim. Two alternatives cost as much or more and were
// not kept: comparing each member's claims with its new ranges (a vectorised ascending test, then the two
// ends of each range: ~25 instructions a range, worse where ranges are one partition long), and leaving
// the kept claims of members with ascending claims unmarked (4.5 a claim plus 2 for the ascending test).
// Kafka's RangeAssignor never reads the previous assignment (its cost is members x topics RangeSets); the
// claims here feed only the metrics (moved, and owned for moved_lower_bound).
class RangeClaims {
public:
    RangeClaims(const Problem& p, const Prepared& pr, int32_t* owner)
        : p_(p), pr_(pr), owner_(owner), everything_(subscribes_everything(pr)),
          stamp_(everything_ || pr.uniform ? 0 : static_cast<std::size_t>(pr.num_topics), -1) {}

    // Walks every member's claims; false when two counted claims name one partition.
    bool walk(std::vector<int64_t>& owned, int64_t& counted, int64_t& moved) {
        const int32_t* const claims = p_.owned_partitions.data;
        const int64_t* const offsets = p_.owned_offsets.data;
        for (int32_t m = 0; m < pr_.num_members; ++m) {
            const int32_t* const first = claims + offsets[m];
            const int32_t* const end = claims + offsets[m + 1];
            int64_t elsewhere = 0, skipped = 0;
            for (const int32_t* c = kept_claims(first, end, owner_, m); c != end; c = kept_claims(c + 1, end, owner_, m)) {
                const int verdict = claim_elsewhere(m, *c);
                if (verdict < 0) return false;
                elsewhere += verdict;
                skipped += verdict == 0;
            }
            owned[m] = (end - first) - skipped;
            counted += owned[m];
            moved += elsewhere;
        }
        return true;
    }

    // Clears the marks the walk left in owner[] (also after a walk that returned false). With every
    // partition assigned (no kUnassigned to keep) that is one AND an entry.
    static void unmark(std::vector<int32_t>& owner, bool all_assigned) {
        if (all_assigned) {
            for (int32_t& v : owner) v &= ~kMarked;
            return;
        }
        for (int32_t& v : owner) v = v < kUnassigned ? v & ~kMarked : v;
    }

private:
    static constexpr int32_t kMarked = INT32_MIN;

    // Marks the claims from c on that the new ranges give back to m; returns the first claim that is not
    // such. A loop of its own, its few values in registers (inside walk's loop the compiler kept the counters
    // on the stack), four claims a step: a load, a compare and a store a claim. Each claim is compared
    // before the next is read, so a partition listed twice in one step meets its own mark.
    static const int32_t* kept_claims(const int32_t* c, const int32_t* end, int32_t* own, int32_t m) {
        const int32_t mark = m | kMarked;
        for (; end - c >= 4; c += 4) {
            if (own[c[0]] != m) return c;
            own[c[0]] = mark;
            if (own[c[1]] != m) return c + 1;
            own[c[1]] = mark;
            if (own[c[2]] != m) return c + 2;
            own[c[2]] = mark;
            if (own[c[3]] != m) return c + 3;
            own[c[3]] = mark;
        }
        for (; c != end; ++c) {
            if (own[*c] != m) break;
            own[*c] = mark;
        }
        return c;
    }

    // A claim by m on `part` that the new ranges do not give m (or that m named before): 1 when it counts
    // (m subscribes to its topic) and the partition is marked now, 0 when it does not count, -1 when the
    // partition was marked by an earlier counted claim.
    int claim_elsewhere(int32_t m, int32_t part) {
        if (!subscribes(m, part)) return 0;
        const int32_t v = owner_[part];
        if (v < 0) return -1;   // marked (an unassigned partition is on a topic nobody subscribes to)
        owner_[part] = v | kMarked;
        return 1;
    }

    bool subscribes(int32_t m, int32_t part) {
        if (everything_) return true;
        const int32_t* const base = pr_.topic_base.data();
        if (part < base[topic_] || part >= base[topic_ + 1]) topic_ = topic_from(part < base[topic_] ? 0 : topic_, part);
        if (pr_.uniform) return pr_.topic_subscribed[topic_] != 0;
        if (stamped_ != m) {   // m's first claim elsewhere: its row is stamped once
            for (int64_t i = p_.sub_offsets[m], end = p_.sub_offsets[m + 1]; i < end; ++i)
                stamp_[p_.sub_topics[i]] = m;
            stamped_ = m;
        }
        return stamp_[topic_] == m;
    }

    // The topic of `part` given topic_base[from] <= part: the last u >= from with topic_base[u] <= part. The
    // next few topics are tried one by one (a member's sorted claims move forward a topic or a few at a time),
    // then topic_after's doubling steps and binary search.
    int32_t topic_from(int32_t from, int32_t part) const {
        const int32_t* const base = pr_.topic_base.data();
        const int32_t T = pr_.num_topics;
        for (const int32_t near = std::min(from + 4, T); from < near; ++from)
            if (part < base[from + 1]) return from;
        return topic_after(base, T, from, part);
    }

    const Problem& p_;
    const Prepared& pr_;
    int32_t* const owner_;
    const bool everything_;
    std::vector<int32_t> stamp_;   // stamp_[t] == m: member stamped_ subscribes to t
    int32_t stamped_ = -1;
    int32_t topic_ = 0;            // the topic of the last claim looked up
};

}  // namespace

std::vector<int32_t> assign_range(const Problem& p, const Prepared& pr) {
    return contiguous_ranges(pr, range_takers(p, pr));
}

std::optional<AssignResult> range_direct(const Problem& p, const Prepared& pr) {
    const TopicSubscribers takers = range_takers(p, pr);
    const std::size_t M = static_cast<std::size_t>(pr.num_members);
    AssignResult result;
    result.owner = contiguous_ranges(pr, takers);
    std::vector<int64_t> owned(M, 0);
    int64_t claims = 0, moved = 0;
    if (pr.has_owned) {
        RangeClaims walk(p, pr, result.owner.data());
        const bool single = walk.walk(owned, claims, moved);
        bool all_assigned = true;   // every topic with partitions has a taker
        for (int32_t t = 0; t < pr.num_topics; ++t)
            all_assigned = all_assigned && (takers.count(t) > 0 || pr.topic_base[t + 1] == pr.topic_base[t]);
        RangeClaims::unmark(result.owner, all_assigned);
        if (!single) return std::nullopt;
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
        for (int64_t i = 0; i < std::min(extra, listed); ++i) load[members[i]] += per + 1;
        for (int64_t i = extra; i < listed; ++i) load[members[i]] += per;
        metrics.assigned += count;
    }
    metrics.moved = moved;
    // (each topic's takers copied as a block, their counts filled: no per-holder push_back)
    const auto holders = [&] {
        const int32_t T = pr.num_topics;
        TopicHolders h;
        h.offsets.resize(static_cast<std::size_t>(T) + 1);
        h.offsets[0] = 0;
        for (int32_t t = 0; t < T; ++t) {
            const int64_t n = takers.count(t), count = pr.topic_base[t + 1] - pr.topic_base[t];
            h.offsets[t + 1] = h.offsets[t] + (n == 0 ? 0 : count / n == 0 ? count % n : n);
        }
        h.members.resize(static_cast<std::size_t>(h.offsets[T]));
        h.held.resize(static_cast<std::size_t>(h.offsets[T]));
        for (int32_t t = 0; t < T; ++t) {
            const int64_t n = takers.count(t), count = pr.topic_base[t + 1] - pr.topic_base[t];
            const int64_t from = h.offsets[t], listed = h.offsets[t + 1] - from;
            if (listed == 0) continue;
            const int64_t per = count / n, extra = std::min(count % n, listed);
            std::copy_n(takers.begin(t), listed, h.members.begin() + from);
            std::fill_n(h.held.begin() + from, extra, static_cast<int32_t>(per + 1));
            std::fill_n(h.held.begin() + from + extra, listed - extra, static_cast<int32_t>(per));
        }
        return h;
    };
    complete_metrics(p, pr, load, owned, claims, true, holders, metrics);
    return result;
}

}  // namespace server
}  // namespace kafkagroup
