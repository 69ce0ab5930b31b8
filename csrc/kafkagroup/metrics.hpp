// The quality certificate of an assignment, computed from the problem and owner[] alone.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "kafkagroup/problem.hpp"
#include "kafkagroup/result.hpp"

namespace kafkagroup {

// Fills every Metrics field (see result.hpp). `prev_owner` is previous_owners(problem, prepared).
// O(P + total subscriptions).
Metrics compute_metrics(const Problem& problem, const Prepared& prepared, const std::vector<int32_t>& owner,
                        const std::vector<int32_t>& withheld, const std::vector<int32_t>& prev_owner);

// The members holding partitions of each topic: members[offsets[t] .. offsets[t + 1]) with held[k] of topic
// t's partitions each, in the order of their first partition. `assigned` (the partitions with an owner) sizes
// the lists. O(P).
struct TopicHolders {
    std::vector<int64_t> offsets;   // [T+1]
    std::vector<int32_t> members;
    std::vector<int32_t> held;
};
TopicHolders topic_holders(const Prepared& prepared, const std::vector<int32_t>& owner, int64_t assigned);

// The Metrics fields that follow from the loads (max_load, min_load, balance_gap, moved_lower_bound), given
// per-member loads and valid previous partitions (`owned`, total_owned their sum): compute_metrics' last step,
// also called by an assignor that knows these counts without a pass over owner[] (the server range). The
// holders are asked for only when the balance gap needs them (different subscriptions, loads more than one
// apart). Leaves out's other fields as they are.
void complete_metrics(const Problem& problem, const Prepared& prepared, const std::vector<int64_t>& load,
                      const std::vector<int64_t>& owned, int64_t total_owned, bool nothing_withheld,
                      const std::function<TopicHolders()>& holders_of, Metrics& out);

}  // namespace kafkagroup
