#include "kafkagroup/engine.hpp"

#include <algorithm>
#include <climits>
#include <optional>
#include <stdexcept>

#include "kafkagroup/assignors.hpp"
#include "kafkagroup/metrics.hpp"
#include "kafkagroup/ownership.hpp"
#include "kafkagroup/rack_ids.hpp"
#include "kafkagroup/server/server_assignors.hpp"
#include "kafkagroup/sticky/sticky.hpp"

namespace kafkagroup {
namespace {

// `tally`: a strategy whose builder writes the final owner[] in partition order counts the metrics'
// per-partition part as it goes (metrics.hpp); compute_metrics counts the rest. `prev` is not const: the
// sticky builder may take prev.owner's array to write owner[] over it (sticky.hpp, assign_sticky_call).
using AssignFn = AssignResult (*)(const Problem&, const Prepared&, PreviousOwners& prev, const AssignOptions&,
                                  PartitionTally& tally);

AssignResult run_range(const Problem& p, const Prepared& pr, PreviousOwners&, const AssignOptions&,
                       PartitionTally&) {
    return AssignResult{assign_range(p, pr), {}, {}};
}
AssignResult run_roundrobin(const Problem& p, const Prepared& pr, PreviousOwners&, const AssignOptions&,
                            PartitionTally&) {
    return AssignResult{assign_roundrobin(p, pr), {}, {}};
}

AssignResult run_sticky(const Problem& p, const Prepared& pr, PreviousOwners& prev, const AssignOptions&,
                        PartitionTally& tally) {
    return assign_sticky_call(p, pr, prev, tally, /*cooperative=*/false);
}
AssignResult run_cooperative_sticky(const Problem& p, const Prepared& pr, PreviousOwners& prev,
                                    const AssignOptions&, PartitionTally& tally) {
    return assign_sticky_call(p, pr, prev, tally, /*cooperative=*/true);
}

// Kafka 4's server-side assignors (KIP-848): the previous target assignment is the members' `owned`.
// With AssignOptions::server_racks and racks given, the classic strategies' KIP-881 rack code runs instead
// (the same code, not a second copy): range's rack-aware split (which is server range's split when no rack
// matters) and the sticky's rack-aware balance over the previous target (balanced as server uniform is).
AssignResult run_server_range(const Problem& p, const Prepared& pr, PreviousOwners&,
                              const AssignOptions& options, PartitionTally&) {
    if (options.server_racks && pr.has_racks) return AssignResult{assign_range(p, pr), {}, {}};
    return AssignResult{server::assign_range(p, pr), {}, {}};
}
AssignResult run_server_uniform(const Problem& p, const Prepared& pr, PreviousOwners& prev,
                                const AssignOptions& options, PartitionTally&) {
    // The server code indexes prev_owner per partition: it gets P entries of -1 when nobody owned anything.
    std::vector<int32_t> none;
    if (prev.none()) none.assign(static_cast<std::size_t>(pr.num_partitions), kUnassigned);
    const std::vector<int32_t>& prev_owner = prev.none() ? none : prev.owner;
    server::check_single_owner(p, pr, prev_owner);
    if (options.server_racks && pr.has_racks) return AssignResult{assign_sticky(p, pr, prev), {}, {}};
    return AssignResult{server::assign_uniform(p, pr, prev_owner), {}, {}};
}

// A strategy's whole call (owner and metrics) when it can do better than the general path on this input,
// else nullopt. The server assignors' direct paths for clean previous targets (server/clean_claims.hpp); the
// sticky ones' for clean claims (sticky.hpp, assign_sticky_clean), which set `claims_checked` when they found
// every claim in range before giving way.
using DirectFn = std::optional<AssignResult> (*)(const Problem&, const Prepared&, const AssignOptions&,
                                                 bool& claims_checked);

std::optional<AssignResult> direct_server_range(const Problem& p, const Prepared& pr, const AssignOptions& options,
                                                bool&) {
    if (options.server_racks && pr.has_racks) return std::nullopt;
    if (!options.metrics) return AssignResult{server::assign_range(p, pr), {}, {}};
    return server::range_direct(p, pr);
}
std::optional<AssignResult> direct_sticky(const Problem& p, const Prepared& pr, const AssignOptions&,
                                          bool& claims_checked) {
    return assign_sticky_clean(p, pr, /*cooperative=*/false, &claims_checked);
}
std::optional<AssignResult> direct_cooperative_sticky(const Problem& p, const Prepared& pr, const AssignOptions&,
                                                      bool& claims_checked) {
    return assign_sticky_clean(p, pr, /*cooperative=*/true, &claims_checked);
}
std::optional<AssignResult> direct_server_uniform(const Problem& p, const Prepared& pr, const AssignOptions& options,
                                                  bool&) {
    if (options.server_racks && pr.has_racks) return std::nullopt;
    return server::uniform_direct(p, pr);
}

struct Entry {
    const char* name;
    AssignFn run;
    bool reads_shared_form;   // reads Problem::shared_members as it is (else expanded to the CSR first)
    DirectFn direct = nullptr;
    // `direct` checks each claim before it uses it (the sticky ones): prepare() leaves the claims to it, and
    // check_claims runs only when it gives way without having read them all in range, so a call it finishes
    // reads the claims once, and one it gives way on (a partition named twice) reads them once less.
    bool direct_checks_claims = false;
    // The answer never depends on the previous assignment (Kafka's server RangeAssignor ignores it): with
    // AssignOptions::metrics false, whose only reader of the claims is gone, they are not read or checked at all.
    bool ignores_claims = false;
};
// Registration order is the order strategy_names() reports. The sticky assignors read the homogeneous form
// as it is: a homogeneous group has equal subscriptions (Prepared::uniform), and with equal subscriptions
// nothing of theirs reads a member's row but member 0's (previous_owners, the uniform builder and its rack
// passes, the metrics); only the general builder reads every row, and it runs for different subscriptions.
// At 8,000 members x 2,000 topics the expansion wrote a 64 MB CSR that prepare() then read back.
const Entry kStrategies[] = {
    {"range", run_range, false},
    {"roundrobin", run_roundrobin, false},
    {"sticky", run_sticky, true, direct_sticky, true},
    {"cooperative-sticky", run_cooperative_sticky, true, direct_cooperative_sticky, true},
    {"server-uniform", run_server_uniform, true, direct_server_uniform},
    {"server-range", run_server_range, true, direct_server_range, false, /*ignores_claims=*/true},
};

// The homogeneous form (Problem::shared_members) as the CSR the classic assignors read: every member's
// row is the shared one. O(M x topics), what the caller would have built; a malformed form is left for
// prepare() to refuse with its message.
struct SharedFormStorage {
    std::vector<int64_t> offsets;
    std::vector<int32_t> topics;
};
void expand_shared_form(Problem& p, SharedFormStorage& s) {
    if (p.shared_members < 0 || p.shared_members > INT32_MAX || p.sub_offsets.size != 2 || p.sub_offsets[0] != 0 ||
        static_cast<std::size_t>(p.sub_offsets[1]) != p.sub_topics.size)
        return;
    const std::size_t M = static_cast<std::size_t>(p.shared_members), k = p.sub_topics.size;
    s.offsets.resize(M + 1);
    s.topics.resize(M * k);
    for (std::size_t m = 0; m <= M; ++m) s.offsets[m] = static_cast<int64_t>(m * k);
    for (std::size_t m = 0; m < M; ++m) std::copy(p.sub_topics.begin(), p.sub_topics.end(), s.topics.begin() + m * k);
    p.sub_offsets = View<int64_t>{s.offsets.data(), s.offsets.size()};
    p.sub_topics = View<int32_t>{s.topics.data(), s.topics.size()};
    p.shared_members = -1;
}

}  // namespace

std::vector<std::string> strategy_names() {
    std::vector<std::string> names;
    for (const Entry& e : kStrategies) names.emplace_back(e.name);
    return names;
}

std::vector<std::string> strategies_ignoring_claims() {
    std::vector<std::string> names;
    for (const Entry& e : kStrategies)
        if (e.ignores_claims) names.emplace_back(e.name);
    return names;
}

AssignResult assign(std::string_view strategy, const Problem& input, const AssignOptions& options) {
    for (const Entry& e : kStrategies) {
        if (strategy != e.name) continue;
        Problem problem = input;
        if (!options.metrics && e.ignores_claims) {   // (the claims' only reader, the metrics, is not run)
            problem.owned_offsets = {};
            problem.owned_partitions = {};
            problem.generation = {};
        }
        SharedFormStorage shared_storage;
        // (a memberless group has no row to share: the CSR of nobody)
        // (the rack-aware server options run the classic code, which reads the CSR)
        if (!e.reads_shared_form || problem.shared_members == 0 || options.server_racks)
            expand_shared_form(problem, shared_storage);
        // (validates the rack ids compact_rack_ids reads)
        const Prepared prepared = prepare(problem, /*check_claims_now=*/!e.direct_checks_claims);
        CompactRackIds rack_storage;
        compact_rack_ids(problem, rack_storage);
        bool claims_checked = prepared.claims_checked;
        if (e.direct)
            if (std::optional<AssignResult> direct = e.direct(problem, prepared, options, claims_checked))
                return std::move(*direct);
        if (!claims_checked) check_claims(problem, prepared);
        PreviousOwners prev = previous_owners(problem, prepared);
        PartitionTally tally(prepared, prev);
        AssignResult result = e.run(problem, prepared, prev, options, tally);
        if (options.metrics) result.metrics = compute_metrics(problem, prepared, result.owner, result.withheld, prev, tally);
        return result;
    }
    throw std::invalid_argument("unknown assignment strategy '" + std::string(strategy) + "'");
}

}  // namespace kafkagroup
