// Clean claims as runs of consecutive partitions, sorted by first partition: what the sticky path for clean
// claims (clean_claims.cpp) walks when the claims come in long runs, as after a sticky or range assignment.
// Internal to sticky/.
//
// Why: the walk (hand_out.hpp) needs each partition's previous owner in partition order. A member's claims
// after a sticky rebalance are a few runs of hundreds or thousands of consecutive ids (two per member after one
// churn: ~16,000 runs for 3.6M claims at 4M partitions), so the claims, read once in the order they lie in
// memory, reduce to a list of runs a few hundred KB long; sorted, it gives the previous owners in partition
// order without any per-partition array: no window to fill and scan, and owner[] is the only P-sized write.
// Interleaved claims (runs of one or a few, after range or round robin) make a list as long as the claims:
// claim_runs gives up past a limit and the windows (clean_claims.cpp) take them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "kafkagroup/problem.hpp"

namespace kafkagroup {
namespace sticky {

// Partitions begin .. begin + length - 1, claimed by `member` (consecutive claims of that member).
struct ClaimRun {
    int32_t begin;
    int32_t length;
    int32_t member;
};

enum class RunsRead {
    sorted,      // `sorted` holds every claim, as runs sorted by begin (runs may overlap: a partition named twice)
    not_clean,   // a claim out of 0..P-1
    too_many,    // more than `limit` runs: read that far, then given up
};

// The runs below this mean length (in partitions) are left to the windows: at most P / kMinMeanRun runs.
// Measured at 4M partitions: runs of ~230 partitions on average (after churn) take 1.7 ms here against 3.6 ms
// through the windows; a run costs a few tens of ns (its sort and its walk step) where the windows cost about
// half a ns per partition, so runs much shorter than 32 partitions gain nothing.
constexpr int64_t kMinMeanRun = 32;
inline std::size_t claim_runs_limit(int64_t partitions) { return static_cast<std::size_t>(partitions / kMinMeanRun); }

// Reads the claims once, member after member, forward (runs.hpp's consecutive_end, 8 claims per step): each
// run's first claim is compared with P before it is used, and a run is cut at P, so any claim >= P or < 0
// gives not_clean. Then a counting sort on begin >> shift, with about as many buckets as runs (a bucket holding
// several sorted by std::sort; clean runs never share a partition, so a bucket of 2^shift partitions holds
// few). O(claims / 8 + runs); whether two runs overlap is the caller's to see in the sorted order.
RunsRead claim_runs(const Problem& problem, const Prepared& prepared, std::size_t limit, std::vector<ClaimRun>& sorted);

}  // namespace sticky
}  // namespace kafkagroup
