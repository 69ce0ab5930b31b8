// Kafka 4's server UniformAssignor: which builder runs, and the claims check both server assignors share.
//
// Kafka picks its homogeneous builder when the coordinator says every member subscribes to the same topic
// *names* (existing or not) and the heterogeneous one otherwise. We pick by the topics that exist
// (Prepared::uniform, prepare()'s subscriptions_uniform over the compact problem): members whose lists differ
// only in missing topics get the homogeneous builder, whose result is balanced to within one partition with
// the fewest moves, which Kafka's heterogeneous builder on equal subscriptions cannot beat.
#include <stdexcept>
#include <utility>
#include <string>
#include <vector>

#include "kafkagroup/metrics.hpp"
#include "kafkagroup/server/clean_claims.hpp"
#include "kafkagroup/server/server_assignors.hpp"

namespace kafkagroup {
namespace server {

namespace {

// The exact check: a holder per partition, claims in member order; the first partition two members claim is
// named. O(P + claims).
void find_second_owner(const Problem& p, const Prepared& pr) {
    std::vector<int32_t> holder(static_cast<std::size_t>(pr.num_partitions), kUnassigned);
    for (int32_t m = 0; m < pr.num_members; ++m)
        for (int64_t i = p.owned_offsets[m]; i < p.owned_offsets[m + 1]; ++i) {
            const int32_t part = p.owned_partitions[i];   // prepare() checked the range
            const int32_t other = holder[part];
            if (other == kUnassigned || other == m) {
                holder[part] = m;
                continue;
            }
            const int32_t t = pr.topic_of(part);
            throw std::invalid_argument(
                "members " + std::to_string(other) + " and " + std::to_string(m) +
                " both hold partition " + std::to_string(part - pr.topic_base[t]) + " of topic " + std::to_string(t) +
                " in their previous target assignment (a partition has at most one owner)");
        }
}

}  // namespace

int64_t recorded_claims(const std::vector<int32_t>& prev_owner) {
    int32_t n = 0;   // at most kMaxPartitions (2^28): an int32 count, which vectorises 4 or 8 to an instruction
    for (const int32_t m : prev_owner) n += m >= 0;
    return n;
}

void check_single_owner(const Problem& p, const Prepared& pr, const std::vector<int32_t>& prev_owner) {
    if (!pr.has_owned || pr.num_partitions == 0) return;
    // previous_owners() records at most one claim per partition, so when as many partitions have a previous
    // owner as there are claims, no two claims name one partition. Otherwise (a claim on a topic its member
    // does not subscribe to, a member listing a partition twice, or two members) the exact check decides.
    if (recorded_claims(prev_owner) == static_cast<int64_t>(p.owned_partitions.size)) return;
    find_second_owner(p, pr);
}

std::optional<AssignResult> uniform_direct(const Problem& p, const Prepared& pr) {
    const int32_t M = pr.num_members;
    if (M == 0) return std::nullopt;
    if (pr.uniform) return homogeneous_direct(p, pr);
    // Different subscriptions: the claims written per partition give the previous owners (previous_owners'
    // result, without its stamp of every member's list) and prove no partition held twice
    // (check_single_owner's question); then every owner is checked to subscribe to its partition's topic.
    std::vector<int32_t> prev_owner(static_cast<std::size_t>(pr.num_partitions), kUnassigned);
    if (!write_distinct_claims(p, pr, prev_owner)) return std::nullopt;
    TopicSubscribers subs = topic_subscribers(p, pr);
    if (pr.has_owned && !owners_subscribe(pr, subs, prev_owner)) return std::nullopt;
    // Clean claims are all recorded, each partition once: a member's valid previous partitions are its claims.
    std::vector<int64_t> owned(static_cast<std::size_t>(M), 0);
    if (pr.has_owned)
        for (int32_t m = 0; m < M; ++m) owned[m] = p.owned_offsets[m + 1] - p.owned_offsets[m];
    HeterogeneousResult built = build_heterogeneous(p, pr, std::move(subs), prev_owner, &owned);

    // The metrics compute_metrics would count, from the builder's loads instead of a pass over owner[]: the
    // builder hands out every partition of a subscribed topic, and holds none of another (a clean claim is on
    // a topic its member subscribes to), so no partition held before is left without an owner.
    AssignResult result;
    Metrics& metrics = result.metrics;
    std::vector<int64_t> load(built.load.begin(), built.load.end());
    int64_t subscribed_partitions = 0;
    for (int32_t t = 0; t < pr.num_topics; ++t)
        if (pr.topic_subscribed[t]) subscribed_partitions += pr.topic_base[t + 1] - pr.topic_base[t];
    for (const int64_t l : load) metrics.assigned += l;
    metrics.unassigned = subscribed_partitions - metrics.assigned;
    metrics.moved = built.moved;
    result.owner = std::move(built.owner);
    const int64_t claims = pr.has_owned ? static_cast<int64_t>(p.owned_partitions.size) : 0;
    complete_metrics(p, pr, load, owned, claims, true,
                     [&] { return topic_holders(pr, result.owner, metrics.assigned); }, metrics);
    return result;
}

std::vector<int32_t> assign_uniform(const Problem& p, const Prepared& pr, const std::vector<int32_t>& prev_owner) {
    if (pr.num_members == 0) return std::vector<int32_t>(static_cast<std::size_t>(pr.num_partitions), kUnassigned);
    if (pr.uniform) return uniform_homogeneous(p, pr, prev_owner);
    return uniform_heterogeneous(p, pr, prev_owner);
}

}  // namespace server
}  // namespace kafkagroup
