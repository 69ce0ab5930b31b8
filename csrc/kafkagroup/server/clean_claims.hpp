// Clean previous target assignments: the claims walk of the server assignors' direct paths
// (server/range.cpp, server/uniform_homogeneous.cpp).
//
// previous_owners() (ownership.hpp) decides by its rules which claim on a partition counts. When the claims
// are *clean* -- every claim names a partition of a topic its member subscribes to, and no partition is named
// twice (by two members, or twice by one) -- all those rules agree: a claimed partition's previous owner is
// its claimant, whatever the generations, and a member's valid previous partitions are exactly its claims.
// Kafka's coordinator keeps target assignments that are clean, so that is the usual input. The direct paths
// walk the claims once, doing their own work on each, and give way to the general path (previous_owners,
// the assignor, compute_metrics) when the claims turn out not to be clean: the general path stays the one
// home of the rules for everything else.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>


#include "kafkagroup/assignors.hpp"
#include "kafkagroup/problem.hpp"
#include "kafkagroup/runs.hpp"

namespace kafkagroup {
namespace server {

// list[0] < list[1] < ...: one compare per entry, no early exit (the loop vectorises).
inline bool ascending(const int32_t* list, int64_t size) {
    int32_t descending = 0;
    for (int64_t i = 1; i < size; ++i) descending |= list[i - 1] >= list[i];
    return descending == 0;
}

// Every member subscribes to every topic that has partitions: any claim prepare() accepted is on a
// subscribed topic.
inline bool subscribes_everything(const Prepared& pr) {
    if (!pr.uniform) return false;
    for (int32_t t = 0; t < pr.num_topics; ++t)
        if (!pr.topic_subscribed[t] && pr.topic_base[t + 1] > pr.topic_base[t]) return false;
    return true;
}

// Calls take(m, first, last) with each member's claims [first, last), in member order, and returns true;
// returns false, before calling take for that member, when a member claims a partition of a topic it does not
// subscribe to. Whether a partition is named twice is take's to notice (it knows what it writes); take runs a
// loop of its own over the claims, its counters in registers. O(claims) when every member subscribes to every
// topic; otherwise O(claims + subscriptions of the members with claims), with a topic lookup where consecutive
// claims change topic (sorted claims: once per topic; the next few topics are tried before a binary search).
template <class Take>
bool walk_claims_subscribed(const Problem& p, const Prepared& pr, Take&& take) {
    if (!pr.has_owned) return true;
    const int32_t* const claims = p.owned_partitions.data;
    const int64_t* const offsets = p.owned_offsets.data;
    const int32_t M = pr.num_members;
    if (subscribes_everything(pr)) {
        for (int32_t m = 0; m < M; ++m) take(m, claims + offsets[m], claims + offsets[m + 1]);
        return true;
    }
    // subscribed_by[t] == key while member m's claims are checked (key 0 for everyone when subscriptions
    // are equal: member 0's row is stamped once).
    std::vector<int32_t> subscribed_by(static_cast<std::size_t>(pr.num_topics), -1);
    const int32_t* const topics = p.sub_topics.data;
    const int32_t* const base = pr.topic_base.data();
    const int32_t T = pr.num_topics;
    if (pr.uniform)
        for (int64_t i = p.sub_offsets[0], end = p.sub_offsets[1]; i < end; ++i) subscribed_by[topics[i]] = 0;
    for (int32_t m = 0; m < M; ++m) {
        const int32_t* const first = claims + offsets[m];
        const int32_t* const last = claims + offsets[m + 1];
        if (first == last) continue;
        // (equal subscriptions: row 0 was stamped; in the homogeneous form sub_offsets has no row m)
        const int32_t* const row = pr.uniform ? topics : topics + p.sub_offsets[m];
        const int64_t row_size = pr.uniform ? 0 : p.sub_offsets[m + 1] - p.sub_offsets[m];
        // A member with few claims and a long ascending list (10 partitions over 750 topics) is answered by
        // binary searches in its list; others by stamping their list once.
        const bool search = !pr.uniform && (last - first) * 16 < row_size && ascending(row, row_size);
        if (!pr.uniform && !search)
            for (int64_t i = 0; i < row_size; ++i) subscribed_by[row[i]] = m;
        const int32_t key = pr.uniform ? 0 : m;
        int32_t t = -1, lo = 0, hi = 0;   // the topic of the previous claim (m subscribes to it); none at first
        for (const int32_t* c = first; c != last; ++c) {
            const int32_t part = *c;
            if (static_cast<uint32_t>(part - lo) < static_cast<uint32_t>(hi - lo)) continue;
            if (t >= 0 && part >= hi && part < base[std::min(t + 4, T)]) {   // sorted claims: a topic just after
                do ++t;
                while (part >= base[t + 1]);
            } else {
                t = pr.topic_of(part);
            }
            if (search ? !std::binary_search(row, row + row_size, t) : subscribed_by[t] != key) return false;
            lo = base[t];
            hi = base[t + 1];
        }
        take(m, first, last);
    }
    return true;
}

// Writes claims [first, last) of member m into owner[]; `overwritten` stays kUnassigned only while no entry
// written was written before (the AND of everything overwritten). A previous target comes in runs of
// consecutive partitions (a member's share of a topic, 50 partitions at 500 members x 25,000): where 8 claims
// in a row are one run, the run is extended 8 claims per compare and written as a range (an AND and a fill
// that vectorise) instead of a load and a store per claim, which bound the call at 25,000 claims. Elsewhere
// 8 claims at a time go one by one. The same entries are read and written as claim by claim: a run holds
// distinct partitions, so reading all of it before writing it reads what the claim-by-claim loop would.
inline void write_claims(int32_t m, const int32_t* first, const int32_t* last, int32_t* own, int32_t& overwritten) {
    int32_t before = kUnassigned;
    const int32_t* c = first;
    const int32_t n = static_cast<int32_t>(last - first);
    if (n >= 8 && last[-1] - first[0] == n - 1) {
        // Perhaps one run (a member's share of equal subscriptions): tested and read in one loop that
        // vectorises (the entries read lie between two valid claims, so in range either way).
        const int32_t start = first[0];
        int32_t* const run = own + start;
        int32_t differ = 0, read = kUnassigned;
        for (int32_t k = 0; k < n; ++k) differ |= first[k] ^ (start + k), read &= run[k];
        if (differ == 0) {
            before = read;
            std::fill(run, run + n, m);
            overwritten &= before;
            return;
        }
    }
    while (last - c >= 8) {
        const int32_t len = static_cast<int32_t>(consecutive_end(c, 0, last - c));
        if (len < 8) {
            for (const int32_t* stop = c + 8; c != stop; ++c) {
                before &= own[*c];
                own[*c] = m;
            }
            continue;
        }
        int32_t* const run = own + *c;
        const int32_t* const e = c + len;
        for (int32_t k = 0; k < len; ++k) before &= run[k];
        std::fill(run, run + len, m);
        c = e;
    }
    for (; c != last; ++c) {
        before &= own[*c];
        own[*c] = m;
    }
    overwritten &= before;
}

// Writes each claimant into owner[part] (owner: kUnassigned wherever a claim may land) and returns true when
// the claims are clean: then owner[] is what previous_owners() gives. False when they are not (owner[] is then
// partly written). A partition named twice finds its entry already written.
inline bool write_clean_claims(const Problem& p, const Prepared& pr, std::vector<int32_t>& owner) {
    int32_t overwritten = kUnassigned;
    int32_t* const own = owner.data();
    const bool subscribed = walk_claims_subscribed(p, pr, [&](int32_t m, const int32_t* first, const int32_t* last) {
        write_claims(m, first, last, own, overwritten);
    });
    return subscribed && overwritten == kUnassigned;
}

// write_clean_claims without its subscription check: true when no partition is named twice. The claims are
// then clean when every owner in owner[] subscribes to its partition's topic (owners_subscribe): with
// different subscriptions, checked that way over the partitions, where the walk's topic lookup per claim
// cost 5 to 10 times as much (a member's claims change topic every few partitions).
inline bool write_distinct_claims(const Problem& p, const Prepared& pr, std::vector<int32_t>& owner) {
    if (!pr.has_owned) return true;
    int32_t overwritten = kUnassigned;
    int32_t* const own = owner.data();
    const int32_t* const claims = p.owned_partitions.data;
    const int64_t* const offsets = p.owned_offsets.data;
    for (int32_t m = 0; m < pr.num_members; ++m) write_claims(m, claims + offsets[m], claims + offsets[m + 1], own, overwritten);
    return overwritten == kUnassigned;
}

// Every partition with an owner in owner[] (a member or kUnassigned) is of a topic its owner subscribes to
// (`subs`: each topic's subscribers). O(P + subscriptions), a load and a compare per partition, no branch.
inline bool owners_subscribe(const Prepared& pr, const TopicSubscribers& subs, const std::vector<int32_t>& owner) {
    // mark[m + 1] == t while topic t is checked and m subscribes to it; mark[0] (no owner) always
    std::vector<int32_t> mark(static_cast<std::size_t>(pr.num_members) + 1, -1);
    for (int32_t t = 0; t < pr.num_topics; ++t) {
        mark[0] = t;
        for (const int32_t* m = subs.begin(t); m != subs.end(t); ++m) mark[*m + 1] = t;
        int32_t other = 0;
#pragma GCC unroll 4
        for (int32_t part = pr.topic_base[t]; part < pr.topic_base[t + 1]; ++part) other |= mark[owner[part] + 1] ^ t;
        if (other != 0) return false;
    }
    return true;
}

}  // namespace server
}  // namespace kafkagroup
