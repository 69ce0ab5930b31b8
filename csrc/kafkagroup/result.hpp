// What an assignor returns: one owner per partition, plus what cooperative rebalancing withholds.
#pragma once

#include <cstdint>
#include <vector>

namespace kafkagroup {

struct Metrics {
    // max - min assigned count among members of a uniform subscription; for different subscriptions
    // the number of partitions that could still move to an eligible member with >= 2 fewer partitions.
    int64_t balance_gap = 0;
    int64_t max_load = 0;
    int64_t min_load = 0;
    int64_t assigned = 0;
    int64_t unassigned = 0;         // partitions of subscribed topics with no owner and not withheld
    int64_t withheld = 0;           // cooperative: partitions kept back until their owner revokes them
    int64_t moved = 0;              // assigned partitions whose owner differs from a valid previous owner
    int64_t moved_lower_bound = -1; // uniform subscriptions: exact minimum of `moved`; -1 when not known
};

struct AssignResult {
    std::vector<int32_t> owner;     // [P] member id, or kUnassigned
    std::vector<int32_t> withheld;  // global partition ids withheld this round (sorted)
    Metrics metrics;
};

}  // namespace kafkagroup
