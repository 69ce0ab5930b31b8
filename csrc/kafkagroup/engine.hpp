// The engine's single entry point: validate, run one assignor, certify the result.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "kafkagroup/problem.hpp"
#include "kafkagroup/result.hpp"

namespace kafkagroup {

// Strategies by Kafka protocol name ("range", "roundrobin", ...), in registration order.
std::vector<std::string> strategy_names();
// The strategies whose answer never depends on the previous assignment (Kafka's server RangeAssignor): with
// AssignOptions::metrics false they never read the claims.
std::vector<std::string> strategies_ignoring_claims();

// Choices beyond Kafka's behaviour, all off by default (what Kafka does).
struct AssignOptions {
    // server-uniform / server-range take the members' and replicas' racks into account (Kafka 4.4.0's
    // server assignors ignore racks): server-range becomes the classic range's KIP-881 rack-aware split,
    // server-uniform the classic sticky's KIP-881 rack-aware balance (both keep the previous target where
    // balance allows). Without member and replica racks both given, the output is the default's.
    bool server_racks = false;
    // false: the caller does not read AssignResult::metrics (left at their defaults), so the engine skips the
    // work that only feeds them: compute_metrics' pass, and the strategies whose answer never depends on the
    // previous assignment (server-range, as Kafka's RangeAssignor) do not read, check or keep the claims and
    // generations at all. The owner[] and withheld[] are the same either way. (A strategy whose direct path
    // counts its metrics inside its walk -- the sticky ones, server-uniform -- still counts them.)
    bool metrics = true;
};

// Throws std::invalid_argument for an unknown strategy or an invalid problem (see prepare()).
// Pure function of its arguments: no global state, safe to call from many threads at once.
// (A string_view: the Python entry passes the name's UTF-8 as it lies in the str, no std::string made, which for
// a name past the short-string buffer, "cooperative-sticky", was a heap allocation per call.)
AssignResult assign(std::string_view strategy, const Problem& problem, const AssignOptions& options = {});

}  // namespace kafkagroup
