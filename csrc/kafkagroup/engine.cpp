#include "kafkagroup/engine.hpp"

#include <stdexcept>

#include "kafkagroup/assignors.hpp"
#include "kafkagroup/metrics.hpp"
#include "kafkagroup/ownership.hpp"
#include "kafkagroup/rack_ids.hpp"
#include "kafkagroup/server/server_assignors.hpp"
#include "kafkagroup/sticky/sticky.hpp"

namespace kafkagroup {
namespace {

using AssignFn = AssignResult (*)(const Problem&, const Prepared&, const std::vector<int32_t>& prev_owner);

AssignResult run_range(const Problem& p, const Prepared& pr, const std::vector<int32_t>&) {
    return AssignResult{assign_range(p, pr), {}, {}};
}
AssignResult run_roundrobin(const Problem& p, const Prepared& pr, const std::vector<int32_t>&) {
    return AssignResult{assign_roundrobin(p, pr), {}, {}};
}

AssignResult run_sticky(const Problem& p, const Prepared& pr, const std::vector<int32_t>& prev_owner) {
    return AssignResult{assign_sticky(p, pr, prev_owner), {}, {}};
}
AssignResult run_cooperative_sticky(const Problem& p, const Prepared& pr, const std::vector<int32_t>& prev_owner) {
    std::vector<int32_t> owner = assign_sticky(p, pr, prev_owner);
    std::vector<int32_t> withheld = withhold_transfers(p, pr, prev_owner, owner);
    return AssignResult{std::move(owner), std::move(withheld), {}};
}

// Kafka 4's server-side assignors (KIP-848): the previous target assignment is the members' `owned`.
AssignResult run_server_range(const Problem& p, const Prepared& pr, const std::vector<int32_t>&) {
    return AssignResult{server::assign_range(p, pr), {}, {}};
}
AssignResult run_server_uniform(const Problem& p, const Prepared& pr, const std::vector<int32_t>& prev_owner) {
    server::check_single_owner(p, pr);
    return AssignResult{server::assign_uniform(p, pr, prev_owner), {}, {}};
}

struct Entry {
    const char* name;
    AssignFn run;
};
// Registration order is the order strategy_names() reports.
const Entry kStrategies[] = {
    {"range", run_range},
    {"roundrobin", run_roundrobin},
    {"sticky", run_sticky},
    {"cooperative-sticky", run_cooperative_sticky},
    {"server-uniform", run_server_uniform},
    {"server-range", run_server_range},
};

}  // namespace

std::vector<std::string> strategy_names() {
    std::vector<std::string> names;
    for (const Entry& e : kStrategies) names.emplace_back(e.name);
    return names;
}

AssignResult assign(const std::string& strategy, const Problem& input) {
    for (const Entry& e : kStrategies) {
        if (strategy != e.name) continue;
        const Prepared prepared = prepare(input);  // validates the rack ids compact_rack_ids reads
        Problem problem = input;
        CompactRackIds rack_storage;
        compact_rack_ids(problem, rack_storage);
        const std::vector<int32_t> prev_owner = previous_owners(problem, prepared);
        AssignResult result = e.run(problem, prepared, prev_owner);
        result.metrics = compute_metrics(problem, prepared, result.owner, result.withheld, prev_owner);
        return result;
    }
    throw std::invalid_argument("unknown assignment strategy '" + strategy + "'");
}

}  // namespace kafkagroup
