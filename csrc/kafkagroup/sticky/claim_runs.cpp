// Clean claims as sorted runs of consecutive partitions (claim_runs.hpp).
#include "kafkagroup/sticky/claim_runs.hpp"

#include <algorithm>

#include "kafkagroup/runs.hpp"

namespace kafkagroup {
namespace sticky {

RunsRead claim_runs(const Problem& p, const Prepared& pr, std::size_t limit, std::vector<ClaimRun>& sorted) {
    const int32_t* const claims = p.owned_partitions.data;
    const int64_t* const offsets = p.owned_offsets.data;
    const int64_t P = pr.num_partitions;
    // (room for two runs per member, what one churn leaves, up to the limit: a group of 90 members grew it
    // through eight reallocations per call)
    std::vector<ClaimRun> runs;
    runs.reserve(std::min(limit, 2 * static_cast<std::size_t>(pr.num_members) + 1));
    for (int32_t m = 0; m < pr.num_members; ++m) {
        for (int64_t i = offsets[m], end = offsets[m + 1]; i < end;) {
            const int32_t first = claims[i];
            if (static_cast<uint32_t>(first) >= static_cast<uint32_t>(P)) return RunsRead::not_clean;
            // (cut at P: first + the run's length stays within 0..P, no overflow, no id past the last partition)
            const int64_t run = consecutive_end(claims, i, std::min(end, i + (P - first)));
            if (runs.size() == limit) return RunsRead::too_many;
            runs.push_back(ClaimRun{first, static_cast<int32_t>(run - i), m});
            i = run;
        }
    }
    sorted.resize(runs.size());
    if (runs.empty()) return RunsRead::sorted;
    int shift = 0;   // buckets of 2^shift partitions, about as many buckets as runs
    while ((P >> shift) > static_cast<int64_t>(runs.size()) + 1) ++shift;
    const std::size_t buckets = static_cast<std::size_t>(((P - 1) >> shift) + 1);
    std::vector<int32_t> start(buckets + 1, 0);
    for (const ClaimRun& r : runs) ++start[static_cast<std::size_t>(r.begin >> shift) + 1];
    for (std::size_t b = 0; b < buckets; ++b) start[b + 1] += start[b];
    {
        std::vector<int32_t> fill(start.begin(), start.end() - 1);
        for (const ClaimRun& r : runs) sorted[static_cast<std::size_t>(fill[static_cast<std::size_t>(r.begin >> shift)]++)] = r;
    }
    for (std::size_t b = 0; b < buckets; ++b)
        if (start[b + 1] - start[b] > 1)
            std::sort(sorted.begin() + start[b], sorted.begin() + start[b + 1],
                      [](const ClaimRun& a, const ClaimRun& c) { return a.begin < c.begin; });
    for (std::size_t k = 1; k < sorted.size(); ++k)
        if (sorted[k].begin < sorted[k - 1].begin + sorted[k - 1].length) return RunsRead::named_twice;
    return RunsRead::sorted;
}

}  // namespace sticky
}  // namespace kafkagroup
