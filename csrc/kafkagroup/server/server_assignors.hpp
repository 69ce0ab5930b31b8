// Kafka 4's server-side assignors (KIP-848), run by the group coordinator rather than by a member:
// `range` and `uniform` of org.apache.kafka.coordinator.group.assignor, exposed as the strategies
// "server-range" and "server-uniform" (engine.cpp) so they never clash with the classic "range".
//
// Their input, in the compact problem's terms: a member's subscription is its subscribed topic ids that
// exist in the metadata (the coordinator resolves names against its metadata image before calling an
// assignor); its owned partitions are its previous *target* assignment (not what it reports owning);
// generations and racks play no part (Kafka 4.4.0's server assignors read neither). Members are in the
// compact problem's MemberInfo order (static members by group.instance.id, then member id), which is
// exactly the order Kafka's RangeAssignor sorts them into.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kafkagroup/assignors.hpp"
#include "kafkagroup/problem.hpp"
#include "kafkagroup/result.hpp"

namespace kafkagroup {
namespace server {

// Throws std::invalid_argument when two members' previous target assignments hold the same partition:
// Kafka's coordinator never produces that, and Kafka's assignors would return the partition to both.
// A member listing a partition twice is one claim. prev_owner is previous_owners()'s: when it records every
// claim (the usual case) that proves the claims distinct in one vectorised pass over it; otherwise O(P + claims).
void check_single_owner(const Problem& problem, const Prepared& prepared, const std::vector<int32_t>& prev_owner);

// The partitions prev_owner gives an owner: equal to the number of claims exactly when every claim was
// recorded (on a topic its member subscribes to, no partition claimed twice).
int64_t recorded_claims(const std::vector<int32_t>& prev_owner);

// RangeAssignor (server/range.cpp): input-only, the previous assignment is ignored. Exactly Kafka's.
std::vector<int32_t> assign_range(const Problem& problem, const Prepared& prepared);

// The whole call (owner and metrics, equal to the general path's) when the previous target assignment is
// clean (clean_claims.hpp); nullopt otherwise, and the engine takes the general path (previous_owners, the
// assignor, compute_metrics). range_direct: any subscriptions, and claims on topics a member left are
// skipped rather than refused (only two counted claims on one partition send it to the general path). uniform_direct (server/uniform.cpp): different
// subscriptions, or equal ones (homogeneous_direct, server/uniform_homogeneous.cpp) whose row lists its topics
// with partitions in ascending order; nullopt for anything else (and for a group without members).
std::optional<AssignResult> range_direct(const Problem& problem, const Prepared& prepared);
std::optional<AssignResult> uniform_direct(const Problem& problem, const Prepared& prepared);
std::optional<AssignResult> homogeneous_direct(const Problem& problem, const Prepared& prepared);

// UniformAssignor (server/uniform.cpp): the homogeneous builder when every member subscribes to the same
// topics, the heterogeneous one otherwise; both incremental from prev_owner (ownership.hpp's rules:
// claims on topics the member still subscribes to).
std::vector<int32_t> assign_uniform(const Problem& problem, const Prepared& prepared,
                                    const std::vector<int32_t>& prev_owner);

// Every member subscribes to the same topics (server/uniform_homogeneous.cpp). Moves are minimal among
// assignments whose loads differ by at most one.
std::vector<int32_t> uniform_homogeneous(const Problem& problem, const Prepared& prepared,
                                         const std::vector<int32_t>& prev_owner);

// Different subscriptions (server/uniform_heterogeneous.cpp): Kafka's three phases (keep, fill the
// least loaded, balance topic by topic).
std::vector<int32_t> uniform_heterogeneous(const Problem& problem, const Prepared& prepared,
                                           const std::vector<int32_t>& prev_owner);

// The same builder with each member's final load beside owner[] (the loads compute_metrics would count).
// `subscribers`: topic_subscribers(problem, prepared); `held`: each member's partitions in prev_owner when
// the caller knows them (else they are counted).
struct HeterogeneousResult {
    std::vector<int32_t> owner;
    std::vector<int32_t> load;
    int64_t moved = 0;   // partitions held before by one member and now by another
};
// `track_writes` false: every pass that looks for changed partitions scans them all (what tracking falls back
// to past P/16 writes); the result is the same, which csrc/tests/server_direct_test.cpp checks.
HeterogeneousResult build_heterogeneous(const Problem& problem, const Prepared& prepared, TopicSubscribers subscribers,
                                        const std::vector<int32_t>& prev_owner, const std::vector<int64_t>* held,
                                        bool track_writes = true);


}  // namespace server
}  // namespace kafkagroup
