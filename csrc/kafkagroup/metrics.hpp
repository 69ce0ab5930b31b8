// The quality certificate of an assignment, computed from the problem and owner[] alone.
#pragma once

#include <cstdint>
#include <vector>

#include "kafkagroup/ownership.hpp"
#include "kafkagroup/problem.hpp"
#include "kafkagroup/result.hpp"

namespace kafkagroup {

// Fills every Metrics field (see result.hpp). `prev` is previous_owners(problem, prepared).
// O(P + total subscriptions).
Metrics compute_metrics(const Problem& problem, const Prepared& prepared, const std::vector<int32_t>& owner,
                        const std::vector<int32_t>& withheld, const PreviousOwners& prev);

}  // namespace kafkagroup
