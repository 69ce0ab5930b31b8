// The claims as runs: a member's claims on consecutive partition ids (runs.hpp, consecutive_end), in partition
// order. A previous owners' map of a few hundred entries where an array of P would be written and read back.
//
// Why: a group that settled under a sticky (or range) assignment claims its partitions in runs of hundreds (a
// member's share of a topic); after churn a 10k-partition group of 90 members claims ~110 runs. The clean-claims
// sticky call (sticky/clean_claims.cpp) needs each partition's previous owner in partition order; from the runs
// it reads each claim once (in memory order, member by member) and writes nothing but owner[], the memory-pass
// floor's two streams, with no P-sized scratch array (a 10k-partition call spent a third of its time filling,
// scattering into and scanning a 16,384-entry window).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kafkagroup/problem.hpp"

namespace kafkagroup {

// Partitions begin .. end - 1, all claimed by `member`.
struct ClaimRun {
    int32_t begin;
    int32_t end;
    int32_t member;
};

enum class ClaimRunsVerdict {
    kRuns,      // `out` holds every claim as runs, sorted by begin, none overlapping another
    kTooMany,   // more than `limit` runs: `out` is incomplete (a caller reads the claims another way)
    kNotClean,  // a claim outside 0..P-1, or a partition claimed twice (by one member or two)
};

// The claims of `problem` (owned_offsets / owned_partitions; prepare() need not have checked them: each run's
// first and last ids are compared with 0..P-1 before anything uses them) as runs, into `out` (cleared first),
// when there are at most `limit` of them. A member's claims may come in any order: runs are sorted afterwards
// (not at all when they come sorted, as after a fresh sticky or range assignment). Generations, subscriptions and
// racks are not read: whether a claim counts is the caller's rule. Cost: O(claims + R log R) for R runs (the
// run scan tests 8 claims per step); kTooMany comes after at most `limit` + 1 runs' claims were read.
ClaimRunsVerdict claim_runs(const Problem& problem, const Prepared& prepared, std::size_t limit,
                            std::vector<ClaimRun>& out);

}  // namespace kafkagroup
