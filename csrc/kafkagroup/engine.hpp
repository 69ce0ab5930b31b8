// The engine's single entry point: validate, run one assignor, certify the result.
#pragma once

#include <string>
#include <vector>

#include "kafkagroup/problem.hpp"
#include "kafkagroup/result.hpp"

namespace kafkagroup {

// Strategies by Kafka protocol name ("range", "roundrobin", ...), in registration order.
std::vector<std::string> strategy_names();

// Throws std::invalid_argument for an unknown strategy or an invalid problem (see prepare()).
// Pure function of its arguments: no global state, safe to call from many threads at once.
AssignResult assign(const std::string& strategy, const Problem& problem);

}  // namespace kafkagroup
