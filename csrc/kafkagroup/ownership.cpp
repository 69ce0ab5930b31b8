#include "kafkagroup/ownership.hpp"

#include <limits>

namespace kafkagroup {

std::vector<int32_t> previous_owners(const Problem& p, const Prepared& pr) {
    std::vector<int32_t> owner(static_cast<std::size_t>(pr.num_partitions), kUnassigned);
    if (!pr.has_owned) return owner;
    // best_generation[part] is meaningful once owner[part] != kUnassigned (a claim was seen): every int32,
    // INT32_MIN included, is a generation a member may send, so no value can mark "no claim".
    std::vector<int32_t> best_generation(owner.size(), std::numeric_limits<int32_t>::min());
    std::vector<char> contested(owner.size(), 0);
    // subscribed_by[t] == m while member m's claims are examined: O(1) subscription test.
    std::vector<int32_t> subscribed_by(static_cast<std::size_t>(pr.num_topics), -1);
    for (int32_t m = 0; m < pr.num_members; ++m) {
        for (int64_t i = p.sub_offsets[m]; i < p.sub_offsets[m + 1]; ++i) subscribed_by[p.sub_topics[i]] = m;
        const int32_t gen = p.generation.empty() ? kUnknownGeneration : p.generation[m];
        int32_t t = 0;  // topic of the previous claim: claims usually come sorted, so the next one is in the
                        // same topic or the next one (binary search otherwise); an empty topic t+1 falls back too
        for (int64_t i = p.owned_offsets[m]; i < p.owned_offsets[m + 1]; ++i) {
            const int32_t part = p.owned_partitions[i];
            if (part < pr.topic_base[t] || part >= pr.topic_base[t + 1]) {
                if (part >= pr.topic_base[t + 1] && t + 2 <= pr.num_topics && part < pr.topic_base[t + 2]) ++t;
                else t = pr.topic_of(part);
            }
            if (subscribed_by[t] != m) continue;
            if (owner[part] == kUnassigned || gen > best_generation[part]) {
                best_generation[part] = gen;
                owner[part] = m;
                contested[part] = 0;
            } else if (gen == best_generation[part] && owner[part] != m) {
                contested[part] = 1;
            }
        }
    }
    for (std::size_t part = 0; part < owner.size(); ++part)
        if (contested[part]) owner[part] = kUnassigned;
    return owner;
}

}  // namespace kafkagroup
