#include "kafkagroup/claim_runs.hpp"

#include <algorithm>

#include "kafkagroup/runs.hpp"

namespace kafkagroup {

ClaimRunsVerdict claim_runs(const Problem& p, const Prepared& pr, std::size_t limit, std::vector<ClaimRun>& out) {
    out.clear();
    const int32_t* const claims = p.owned_partitions.data;
    const uint32_t P = static_cast<uint32_t>(pr.num_partitions);
    bool sorted = true;
    int32_t last_end = 0;   // the end of the run made last (sorted: no run so far begins below it)
    for (int32_t m = 0; m < pr.num_members; ++m) {
        for (int64_t i = p.owned_offsets[m], end = p.owned_offsets[m + 1]; i < end;) {
            const int32_t first = claims[i];
            // (first in 0..P-1 first: consecutive_end compares claims with first + k, which must not overflow)
            if (static_cast<uint32_t>(first) >= P) return ClaimRunsVerdict::kNotClean;
            const int64_t j = consecutive_end(claims, i, std::min<int64_t>(end, i + (P - first)));
            // claims[i .. j) are first, first + 1, ..., all below P (the bound above); a claim past P ends the run
            // and is the next run's first
            if (out.size() == limit) return ClaimRunsVerdict::kTooMany;
            const int32_t run_end = first + static_cast<int32_t>(j - i);
            sorted &= first >= last_end;
            out.push_back(ClaimRun{first, run_end, m});
            last_end = run_end;
            i = j;
        }
    }
    if (!sorted)
        std::sort(out.begin(), out.end(), [](const ClaimRun& a, const ClaimRun& b) { return a.begin < b.begin; });
    // Sorted by begin, a run overlapping another begins below the end of the one before it.
    for (std::size_t k = 1; k < out.size(); ++k)
        if (out[k].begin < out[k - 1].end) return ClaimRunsVerdict::kNotClean;
    return ClaimRunsVerdict::kRuns;
}

}  // namespace kafkagroup
