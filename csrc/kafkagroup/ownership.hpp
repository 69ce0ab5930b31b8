// Previous ownership: which member validly owned each partition before this rebalance.
#pragma once

#include <cstdint>
#include <vector>

#include "kafkagroup/problem.hpp"

namespace kafkagroup {

// prev_owner[P]: the member whose claim on the partition is valid, or kUnassigned.
// Rules (Kafka's AbstractStickyAssignor): a claim counts only if the member still subscribes to the
// partition's topic; among claims on one partition the highest generation wins (an unknown generation,
// -1, is the lowest); two different members claiming it in the same highest generation invalidate each
// other (neither keeps it). A member listing one partition twice is one claim. O(P + claims).
std::vector<int32_t> previous_owners(const Problem& problem, const Prepared& prepared);

}  // namespace kafkagroup
