// Sticky and cooperative-sticky assignors (Apache Kafka's StickyAssignor / CooperativeStickyAssignor,
// KIP-54, KIP-341, KIP-429, KIP-881), re-designed over the compact problem.
//
// Files of this directory, one concern each:
//   sticky.hpp / sticky.cpp   entry points; picks the uniform or the general builder
//   sticky_input.hpp          what both builders read: subscribed topics, sticky owners, racks
//   rack_awareness.cpp        Kafka's rule for when racks matter, and "does member m match partition p"
//   uniform_builder.cpp       every member subscribes to the same topics: quotas, O(P + M log M)
//   load_index.hpp            water filling: the level a topic's free partitions raise its subscribers to, from a
//                             histogram of their loads (no per-partition heap)
//   general_builder.cpp       different subscriptions: fill, then min-cost augmenting paths to the
//                             optimal (decreasingly minimal) load vector, keeping the most owned
//   rack_alignment.cpp        KIP-881, both paths: most rack matches within each topic, counts fixed
//                             (equal subscriptions: across topics, q + 1 slots movable); shifts one level down
//   rack_exchange.cpp         KIP-881, both paths, exact on groups under a work limit: load-keeping chains
//                             for sticky owners, then rack matches, then weak owners (a fixed point)
//   cooperative.cpp           withhold every partition whose owner changes (KIP-429)
#pragma once

#include <cstdint>
#include <vector>

#include "kafkagroup/ownership.hpp"
#include "kafkagroup/problem.hpp"
#include "kafkagroup/result.hpp"

namespace kafkagroup {

// owner[P] of the eager sticky assignment. `prev` is previous_owners(problem, prepared).
std::vector<int32_t> assign_sticky(const Problem& problem, const Prepared& prepared, const PreviousOwners& prev);

// The cooperative adjustment of a sticky target: every partition assigned to a member other than its
// valid previous owner while some other member still claims it (raw claims, any generation, as Kafka's
// CooperativeStickyAssignor computes "partitions transferring ownership") is taken out of `owner`
// (set to kUnassigned) and returned, sorted. The follow-up rebalance, after the claimant revoked it,
// assigns it.
std::vector<int32_t> withhold_transfers(const Problem& problem, const Prepared& prepared, const PreviousOwners& prev,
                                        std::vector<int32_t>& owner);

}  // namespace kafkagroup
