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
//   stretch_writer.hpp        owner[] written over the previous owners' array, a cache-resident stretch at a time
//   hand_out.hpp              equal subscriptions without racks: quotas and the keep-and-hand-out walk (one home)
//   clean_claims.cpp          the same walk read straight from clean claims: by sorted runs, or a window at a time
//   claim_runs.hpp/.cpp       clean claims as sorted runs of consecutive partitions (what clean_claims.cpp walks)
//   cooperative.cpp           withhold every partition whose owner changes (KIP-429)
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "kafkagroup/metrics.hpp"
#include "kafkagroup/ownership.hpp"
#include "kafkagroup/problem.hpp"
#include "kafkagroup/result.hpp"

namespace kafkagroup {

// owner[P] of the eager sticky assignment. `prev` is previous_owners(problem, prepared). `tally`, when
// given, counts the metrics of the partitions whose owners are final as they are written (metrics.hpp).
std::vector<int32_t> assign_sticky(const Problem& problem, const Prepared& prepared, const PreviousOwners& prev,
                                   PartitionTally* tally = nullptr);

// The engine's sticky (cooperative = false) or cooperative-sticky call: owner[] and, for cooperative, the
// partitions withheld (withhold_transfers' rule). `tally` counts every partition it can as owner[] is written
// (metrics.hpp); compute_metrics counts the rest. With equal subscriptions, no racks and some partition owned,
// owner[] is written over prev.owner's own array, which it takes (prev.owner is then empty, every partition
// counted): one P-sized array per call instead of two, the second one's page faults included (a 16 MB array
// at 4M partitions, glibc maps most of them afresh per call), and the previous owners are read where they
// are overwritten.
AssignResult assign_sticky_call(const Problem& problem, const Prepared& prepared, PreviousOwners& prev,
                                PartitionTally& tally, bool cooperative);

// The sticky (cooperative = false) or cooperative-sticky call, metrics included, read straight from the claims
// when they are clean (server/clean_claims.hpp: every claim names a partition of a topic its member subscribes
// to, no partition is named twice; then every rule of ownership.hpp agrees that a claimed partition's previous
// owner is its claimant) and the group takes the uniform builder without racks, every member subscribing to
// every topic that has partitions. Else nullopt, and nothing of the attempt is kept: the general path
// (previous_owners, assign_sticky_call, compute_metrics) runs from the start and stays the one home of the
// rules for everything else. The claims need not be checked by prepare(): a claim out of 0..P-1 makes them
// not clean (it is read, never used as an index), and the general path names it.
//
// What it saves (clean_claims.cpp): the claims are read once, and owner[] is written once into fresh memory,
// as the memory-pass floor does; the general path writes the previous owners' array and reads it back.
// `claims_in_range` (may be null) is set to true when it read every claim and found each in 0..P-1, whether it
// then finished or gave way (a partition named twice): the claims' check is then done, and the general path
// need not read the claims once more for it (engine.cpp).
std::optional<AssignResult> assign_sticky_clean(const Problem& problem, const Prepared& prepared, bool cooperative,
                                                bool* claims_in_range = nullptr);

// The cooperative adjustment of a sticky target: every partition assigned to a member other than its
// valid previous owner while some other member still claims it (raw claims, any generation, as Kafka's
// CooperativeStickyAssignor computes "partitions transferring ownership") is taken out of `owner`
// (set to kUnassigned) and returned, sorted. The follow-up rebalance, after the claimant revoked it,
// assigns it.
std::vector<int32_t> withhold_transfers(const Problem& problem, const Prepared& prepared, const PreviousOwners& prev,
                                        std::vector<int32_t>& owner);

// withhold_transfers in steps: withhold() on the partitions in order, a stretch at a time (while that stretch
// of owner[] and of the previous owners is in the cache), then finish() once owner[] is complete.
class Transfers {
public:
    // prev: previous_owners' (only its owned counts are read: prev.owner may be taken after this).
    Transfers(const Problem& problem, const Prepared& prepared, const PreviousOwners& prev);
    // Partitions begin .. begin + n - 1, with new owners now[0..n) and previous owners before[0..n): each
    // transfer with a valid previous owner is withheld (now[i] = kUnassigned) and recorded; the others that
    // change owner are remembered for finish() when some claim is invalid.
    void withhold(int32_t begin, int32_t n, int32_t* now, const int32_t* before);
    // The transfers only the claims show (see withhold_transfers), withheld in owner[]; `tally` (may be null)
    // counts them as free. Returns every withheld partition, sorted. Call once, after every partition.
    std::vector<int32_t> finish(const Prepared& prepared, std::vector<int32_t>& owner, PartitionTally* tally);

private:
    const Problem& problem_;
    std::vector<int32_t> withheld_;    // ascending: stretches come in partition order
    std::vector<uint64_t> unsure_;     // [P bits] only when some claim is invalid
    bool any_unsure_ = false;
};

}  // namespace kafkagroup
