#include "kafkagroup/ownership.hpp"

#include <algorithm>

#include "kafkagroup/huge_pages.hpp"
#include "kafkagroup/runs.hpp"
#include "kafkagroup/topic_search.hpp"

namespace kafkagroup {
namespace {

// owner[] is written by appending (see previous_owners): entries below owner.size() are set, those at
// and above it are unassigned and not yet written.
//
// Member m takes `part`, unassigned: written in place, or appended after -1s up to it.
inline void take(std::vector<int32_t>& owner, int32_t* own, int32_t part, int32_t m) {
    const int32_t size = static_cast<int32_t>(owner.size());
    if (part < size) {
        own[part] = m;
        return;
    }
    if (part > size) owner.insert(owner.end(), static_cast<std::size_t>(part - size), kUnassigned);
    owner.push_back(m);
}

// The claims from i on that lie in [lo, lo + span) on partitions nobody claimed yet: member m takes them.
// Returns the first claim that is not such. A loop of its own, so that it runs with its handful of values
// in registers (inside previous_owners' loop the compiler kept the claims' end, own and m on the stack:
// about 17 instructions per claim at 4M partitions, 13 with this loop). Claims past owner[]'s end (the
// usual case: sorted claims, members in the order the last assignment handed partitions out) come in runs
// of consecutive ids, appended with one insert each: a push_back per claim kept the vector's end in memory
// (a store and a reload per claim).
int64_t take_unclaimed(const int32_t* claims, int64_t i, int64_t end, int32_t lo, uint32_t span,
                       std::vector<int32_t>& owner, int32_t* own, int32_t m) {
    while (i < end) {
        const int32_t part = claims[i];
        if (static_cast<uint32_t>(part - lo) >= span) break;
        const int32_t size = static_cast<int32_t>(owner.size());
        if (part >= size) {
            // claims part, part + 1, ... up to the topic's end
            const int64_t limit = std::min<int64_t>(end, i + (static_cast<int64_t>(lo) + span - part));
            const int64_t j = consecutive_end(claims, i, limit);
            if (part > size) owner.insert(owner.end(), static_cast<std::size_t>(part - size), kUnassigned);
            owner.insert(owner.end(), static_cast<std::size_t>(j - i), m);
            i = j;
            continue;
        }
        if (own[part] != kUnassigned) break;
        own[part] = m;
        ++i;
    }
    return i;
}

// The claims [i, end) of member m, which subscribes to every topic of the group (so every claim counts:
// prepare() checked each names a partition of 0..P-1), on partitions nobody claimed yet; the first claim that
// finds an earlier claimant is returned for the caller's general step. Range- and round-robin-shaped claims (one
// or a few partitions of each topic per member) change topic at almost every claim, and the general loop's
// topic tracking (bounds, the next topic's search, the subscription test) was most of its ~68 instructions per
// claim at 1M x 2,000; none of it is needed when the member subscribes to every topic. Claims past owner[]'s
// end (appended, see previous_owners) come in runs of consecutive ids, appended with one insert each.
int64_t take_all_topics(const int32_t* claims, int64_t i, int64_t end, std::vector<int32_t>& owner, int32_t* own,
                        int32_t m, int64_t& taken) {
    int64_t size = static_cast<int64_t>(owner.size());
    int64_t count = 0;
    while (i < end) {
        const int32_t part = claims[i];
        if (part < size) {
            if (own[part] != kUnassigned) break;
            if (i + 1 < end && claims[i + 1] == part + 1) {
                // A run of consecutive claims below owner[]'s end (a member's share when an earlier member's claims
                // reached past it, as after churn): its unclaimed prefix found and written as blocks (runs.hpp), not
                // a test and a store per claim (at 4M partitions after churn, a third of the call went there).
                const int64_t j = consecutive_end(claims, i, std::min<int64_t>(end, i + (size - part)));
                const int32_t free = run_end(own, part, part + static_cast<int32_t>(j - i)) - part;
                std::fill_n(own + part, free, m);
                count += free;
                i += free;
                continue;
            }
            own[part] = m;
            ++count;
            ++i;
            continue;
        }
        const int64_t j = consecutive_end(claims, i, end);
        if (part > size) owner.insert(owner.end(), static_cast<std::size_t>(part - size), kUnassigned);
        owner.insert(owner.end(), static_cast<std::size_t>(j - i), m);
        size = static_cast<int64_t>(owner.size());
        count += j - i;
        i = j;
    }
    taken += count;
    return i;
}

}  // namespace

PreviousOwners previous_owners(const Problem& p, const Prepared& pr) {
    PreviousOwners out;
    out.owned.assign(static_cast<std::size_t>(pr.num_members), 0);
    // No claim (prepare() checked each names a partition of 0..P-1): nobody owned anything, owner[] stays empty.
    if (p.owned_partitions.empty()) return out;
    // owner[] is built by appending, not filled with -1 first and then written: claims usually come in
    // partition order (a member's share in order, members in the order the last assignment handed partitions
    // out), so a claim past the end appends -1s up to it and then its member, and a claim below the end is
    // read and written in place. One sequential write of P entries instead of two (16 MB each at 4M
    // partitions: the fill was a tenth of the cache misses of a 4M-partition call after churn). The
    // capacity is reserved: own stays valid.
    std::vector<int32_t>& owner = out.owner;
    const std::size_t P = static_cast<std::size_t>(pr.num_partitions);
    reserve_advised(owner, P);
    int64_t* const owned = out.owned.data();
    // The winning claim on a partition is always its current owner[part]'s, so the best generation seen
    // is generation_of[owner[part]]: no per-partition generation array (4 bytes per partition) to fill.
    std::vector<int32_t> generation_of(static_cast<std::size_t>(pr.num_members), kUnknownGeneration);
    if (!p.generation.empty())
        for (int32_t m = 0; m < pr.num_members; ++m) generation_of[m] = p.generation[m];
    // contested[part]: two members tie in the highest generation so far. Ties are rare (they need two
    // members claiming one partition in one generation), so the array is allocated on the first one; `ties`
    // lists the partitions flagged (a partition again after a higher claim cleared it: listed twice), so the
    // end settles them without a pass over P flags (a byte per partition, three quarters of previous_owners at
    // 4M partitions with one tie).
    std::vector<char> contested;
    std::vector<int32_t> ties;
    // subscribed_by[t] == m while member m's claims are examined: O(1) subscription test.
    std::vector<int32_t> subscribed_by(static_cast<std::size_t>(pr.num_topics), -1);
    // Raw pointers and locals: stores into owner[] (int32) could otherwise alias every int32 read
    // through `p`/`pr` and force reloads in the loop that runs once per claim.
    int32_t* const own = owner.data();
    int32_t* const sub_by = subscribed_by.data();
    const int32_t* const gen_of = generation_of.data();
    const int32_t* const base = pr.topic_base.data();
    const int32_t* const claims = p.owned_partitions.data;
    const int32_t* const topics = p.sub_topics.data;
    const int32_t T = pr.num_topics;
    // Equal subscriptions: member 0's topics are everyone's, stamped once (key 0 for every member) instead
    // of once per member (at 8,000 members x 2,000 topics that was 16M stores for 4M partitions).
    const bool uniform = pr.uniform;
    if (uniform)
        for (int64_t i = p.sub_offsets[0], end = p.sub_offsets[1]; i < end; ++i) sub_by[topics[i]] = 0;
    // [lo, hi): the partitions of topic t, the topic of the previous claim. Claims usually come sorted,
    // so the next one is in the same topic, the next one, or a later one found by doubling steps from t
    // (two or three steps when a member holds one partition of every other topic, as range gives). Kept
    // from one member to the next: a uniform member's claims continue the previous member's (a binary
    // search per member was a third of the pass at 1,000 members x 1,000 topics); a range member's start
    // again at topic 0, tested before a binary search over all topics.
    int32_t t = 0, lo = base[0], hi = base[1];
    for (int32_t m = 0; m < pr.num_members; ++m) {
        if (p.owned_offsets[m] == p.owned_offsets[m + 1]) continue;   // no claim: its topics need no stamp
        if (!uniform)
            for (int64_t i = p.sub_offsets[m], end = p.sub_offsets[m + 1]; i < end; ++i) sub_by[topics[i]] = m;
        const int32_t key = uniform ? 0 : m;
        const int32_t gen = gen_of[m];
        // m subscribes to every topic (no topic is listed twice, prepare() checked): no claim needs its topic
        const bool every_topic = p.sub_offsets[uniform ? 1 : m + 1] - p.sub_offsets[uniform ? 0 : m] == T;
        bool in_subscription = sub_by[t] == key;   // m subscribes to t: read when t changes, not per claim
        for (int64_t i = p.owned_offsets[m], end = p.owned_offsets[m + 1]; i < end;) {
            if (every_topic) {
                i = take_all_topics(claims, i, end, owner, own, m, owned[m]);
                if (i == end) break;
                // claims[i] has an earlier claimant: the general step below settles it (with its topic, which
                // it looks up since [lo, hi) was not kept up to date)
            }
            const int32_t part = claims[i];
            if (static_cast<uint32_t>(part - lo) >= static_cast<uint32_t>(hi - lo)) {  // part outside [lo, hi)
                if (part >= hi)   // the next topic (range gives a member one partition of each), or further on
                    t = t + 2 > T || part < base[t + 2] ? t + 1 : topic_after(base, T, t + 2, part);
                else              // back to the first topic (the next member's first claim, after range), or a search
                    t = part < base[1] ? 0 : pr.topic_of(part);
                lo = base[t];
                hi = base[t + 1];
                in_subscription = sub_by[t] == key;
            }
            if (!in_subscription) {
                ++i;
                continue;
            }
            const int32_t current = part < static_cast<int32_t>(owner.size()) ? own[part] : kUnassigned;
            ++i;
            // The usual case, the first claim on a partition: never contested (a tie leaves an owner). When
            // the next claim is in the same topic (sorted claims: a member's whole share of it), the run goes
            // through take_unclaimed; a claim alone in its topic (range-shaped claims) costs one compare more.
            if (current == kUnassigned) {
                take(owner, own, part, m);
                const int64_t first = i;
                const uint32_t span = static_cast<uint32_t>(hi - lo);
                if (i < end && static_cast<uint32_t>(claims[i] - lo) < span)
                    i = take_unclaimed(claims, i, end, lo, span, owner, own, m);
                owned[m] += 1 + (i - first);
                continue;
            }
            if (gen > gen_of[current]) {
                own[part] = m;
                ++owned[m];
                --owned[current];
                if (!contested.empty()) contested[part] = 0;
            } else if (gen == gen_of[current] && current != m) {
                if (contested.empty()) contested.assign(P, 0);
                if (!contested[part]) ties.push_back(part);
                contested[part] = 1;
            }
        }
    }
    owner.resize(P, kUnassigned);   // the partitions past the last claimed one
    for (const int32_t part : ties)
        if (contested[part]) {
            contested[part] = 0;      // (listed twice: settled once)
            --owned[owner[part]];   // a tie leaves the first tied claimant in owner[] until here
            owner[part] = kUnassigned;
        }
    return out;
}

}  // namespace kafkagroup
