// KIP-429 cooperative rebalancing on top of the sticky target: a partition may only change hands after
// its current holder revoked it, so every transfer is withheld from this round's assignment.
#include <algorithm>

#include "kafkagroup/sticky/sticky.hpp"

namespace kafkagroup {

std::vector<int32_t> withhold_transfers(const Problem& p, const Prepared& pr, const std::vector<int32_t>& prev_owner,
                                        std::vector<int32_t>& owner) {
    std::vector<int32_t> withheld;
    if (!pr.has_owned) return withheld;
    // Kafka (CooperativeStickyAssignor.computePartitionsTransferringOwnership): a partition transfers
    // when it is newly assigned to a member that did not own it while another member listed it as owned.
    // Claims count as listed, whatever their generation or subscription; a partition kept by its valid
    // previous owner is not a transfer even if a stale member still lists it (Kafka keeps it there too).
    std::vector<char> mark(owner.size(), 0);
    for (int32_t m = 0; m < pr.num_members; ++m) {
        for (int64_t i = p.owned_offsets[m]; i < p.owned_offsets[m + 1]; ++i) {
            const int32_t part = p.owned_partitions[i];
            const int32_t now = owner[part];
            if (now >= 0 && now != m && now != prev_owner[part] && !mark[part]) {
                mark[part] = 1;
                withheld.push_back(part);
            }
        }
    }
    std::sort(withheld.begin(), withheld.end());
    for (int32_t part : withheld) owner[part] = kUnassigned;
    return withheld;
}

}  // namespace kafkagroup
