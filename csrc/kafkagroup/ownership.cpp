#include "kafkagroup/ownership.hpp"

#include <algorithm>

namespace kafkagroup {

std::vector<int32_t> previous_owners(const Problem& p, const Prepared& pr) {
    std::vector<int32_t> owner(static_cast<std::size_t>(pr.num_partitions), kUnassigned);
    if (!pr.has_owned || pr.num_partitions == 0) return owner;  // no claim can name a partition
    // The winning claim on a partition is always its current owner[part]'s, so the best generation seen
    // is generation_of[owner[part]]: no per-partition generation array (4 bytes per partition) to fill.
    std::vector<int32_t> generation_of(static_cast<std::size_t>(pr.num_members), kUnknownGeneration);
    if (!p.generation.empty())
        for (int32_t m = 0; m < pr.num_members; ++m) generation_of[m] = p.generation[m];
    // contested[part]: two members tie in the highest generation so far. Ties are rare (they need two
    // members claiming one partition in one generation), so the array is allocated on the first one.
    std::vector<char> contested;
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
    // One counted claim of member m (generation gen) on `part`: rules 2-4.
    const auto claim = [&](int32_t m, int32_t gen, int32_t part) {
        const int32_t current = own[part];
        // The usual case, the first claim on a partition: never contested (a tie leaves an owner).
        if (current == kUnassigned) {
            own[part] = m;
        } else if (gen > gen_of[current]) {
            own[part] = m;
            if (!contested.empty()) contested[part] = 0;
        } else if (gen == gen_of[current] && current != m) {
            if (contested.empty()) contested.assign(owner.size(), 0);
            contested[part] = 1;
        }
    };
    // Equal subscriptions: member 0's topics are everyone's, stamped once (key 0 for every member) instead
    // of once per member (at 8,000 members x 2,000 topics that was 16M stores for 4M partitions).
    const bool uniform = pr.uniform;
    // Equal subscriptions covering every topic that has partitions (the usual group): rule 1 holds for
    // every claim, so no claim needs its topic (finding it was most of the per-claim cost).
    bool every_claim_counts = uniform;
    for (int32_t t = 0; every_claim_counts && t < T; ++t)
        every_claim_counts = pr.topic_subscribed[t] || base[t] == base[t + 1];
    if (every_claim_counts) {
        // Members list their partitions in order, so a claim list is mostly runs of consecutive partitions
        // nobody claimed yet: kBlock of them at once is kBlock first claims, stored without a test each (the
        // test for the block is branch-free, vectorised). A block that is not one is claimed one by one.
        constexpr int64_t kBlock = 32;
        const int64_t P = pr.num_partitions;
        for (int32_t m = 0; m < pr.num_members; ++m) {
            const int32_t gen = gen_of[m];
            for (int64_t i = p.owned_offsets[m], end = p.owned_offsets[m + 1]; i < end;) {
                const int32_t first = claims[i];
                if (end - i >= kBlock && first <= P - kBlock) {  // (claims are in [0, P): prepare())
                    uint32_t differ = 0;
                    for (int64_t k = 0; k < kBlock; ++k)
                        differ |= static_cast<uint32_t>((claims[i + k] - static_cast<int32_t>(k)) ^ first) |
                                  static_cast<uint32_t>(own[first + k] ^ kUnassigned);
                    if (differ == 0) {
                        std::fill_n(own + first, kBlock, m);
                        i += kBlock;
                        continue;
                    }
                }
                for (const int64_t stop = std::min(end, i + kBlock); i < stop; ++i) claim(m, gen, claims[i]);
            }
        }
    } else {
        if (uniform)
            for (int64_t i = p.sub_offsets[0], end = p.sub_offsets[1]; i < end; ++i) sub_by[topics[i]] = 0;
        for (int32_t m = 0; m < pr.num_members; ++m) {
            if (!uniform)
                for (int64_t i = p.sub_offsets[m], end = p.sub_offsets[m + 1]; i < end; ++i) sub_by[topics[i]] = m;
            const int32_t key = uniform ? 0 : m;
            const int32_t gen = gen_of[m];
            // [lo, hi): the partitions of topic t, the topic of the previous claim. Claims usually come sorted,
            // so the next one is in the same topic or the next one (binary search otherwise; an empty topic
            // t+1 falls back too).
            int32_t t = 0, lo = base[0], hi = base[1];
            for (int64_t i = p.owned_offsets[m], end = p.owned_offsets[m + 1]; i < end; ++i) {
                const int32_t part = claims[i];
                if (static_cast<uint32_t>(part - lo) >= static_cast<uint32_t>(hi - lo)) {  // part outside [lo, hi)
                    t = part >= hi && t + 2 <= T && part < base[t + 2] ? t + 1 : pr.topic_of(part);
                    lo = base[t];
                    hi = base[t + 1];
                }
                if (sub_by[t] == key) claim(m, gen, part);
            }
        }
    }
    if (!contested.empty())
        for (std::size_t part = 0; part < owner.size(); ++part)
            if (contested[part]) owner[part] = kUnassigned;
    return owner;
}

}  // namespace kafkagroup
