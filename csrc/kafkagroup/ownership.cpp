#include "kafkagroup/ownership.hpp"

namespace kafkagroup {

std::vector<int32_t> previous_owners(const Problem& p, const Prepared& pr) {
    std::vector<int32_t> owner(static_cast<std::size_t>(pr.num_partitions), kUnassigned);
    if (!pr.has_owned) return owner;
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
    int32_t* const own = owner.data();
    const int32_t* const base = pr.topic_base.data();
    for (int32_t m = 0; m < pr.num_members; ++m) {
        for (int64_t i = p.sub_offsets[m]; i < p.sub_offsets[m + 1]; ++i) subscribed_by[p.sub_topics[i]] = m;
        const int32_t gen = generation_of[m];
        int32_t t = 0;  // topic of the previous claim: claims usually come sorted, so the next one is in the
                        // same topic or the next one (binary search otherwise); an empty topic t+1 falls back too
        for (int64_t i = p.owned_offsets[m]; i < p.owned_offsets[m + 1]; ++i) {
            const int32_t part = p.owned_partitions[i];
            if (part < base[t] || part >= base[t + 1]) {
                if (part >= base[t + 1] && t + 2 <= pr.num_topics && part < base[t + 2]) ++t;
                else t = pr.topic_of(part);
            }
            if (subscribed_by[t] != m) continue;
            const int32_t current = own[part];
            if (current == kUnassigned || gen > generation_of[current]) {
                own[part] = m;
                if (!contested.empty()) contested[part] = 0;
            } else if (gen == generation_of[current] && current != m) {
                if (contested.empty()) contested.assign(owner.size(), 0);
                contested[part] = 1;
            }
        }
    }
    if (!contested.empty())
        for (std::size_t part = 0; part < owner.size(); ++part)
            if (contested[part]) owner[part] = kUnassigned;
    return owner;
}

}  // namespace kafkagroup
