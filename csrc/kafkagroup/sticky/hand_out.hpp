// The rule of equal subscriptions without racks once the owned counts are known: quotas, then one walk over
// the partitions in order that keeps owned partitions up to the quota and hands out the rest. Its one home,
// shared by the builder that reads the previous owners' array (uniform_builder.cpp) and the one that reads
// clean claims a window at a time (clean_claims.cpp). Internal to sticky/.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kafkagroup/runs.hpp"

namespace kafkagroup {
namespace sticky {

// Quotas of M = owned.size() members for N partitions: q = N / M each, q + 1 for r = N % M of them, those
// owning the most (ties: the lower id), so that the kept count, sum(min(owned, quota)), is the largest any
// balanced assignment keeps. O(M) (nth_element; a partial sort took O(M log r)).
std::vector<int64_t> quotas_by_owned(const std::vector<int64_t>& owned, int64_t N);

// The walk (uniform_builder.cpp explains the rule): member m keeps the first min(owned[m], quota[m]) of its
// previous partitions in partition order, so its load after keeping is known before the walk; a partition not
// kept goes to the lowest id below quota counting those loads. The walk may be fed the partitions in pieces
// of any length (a topic, a window of one): a run cut in two is kept and handed out as it would be whole.
class HandOut {
public:
    HandOut(const std::vector<int64_t>& owned, std::vector<int64_t> quota)
        : quota_(std::move(quota)), load_(owned.size()), kept_(owned.size(), 0) {
        for (std::size_t m = 0; m < owned.size(); ++m) load_[m] = std::min(owned[m], quota_[m]);
    }

    // The next n partitions, whose previous owners are before[0..n) (-1: none), all of subscribed topics.
    // Calls emit(count, member, previous) for each segment in partition order: `count` partitions, all going
    // to `member`, all previously owned by `previous`. O(n) by runs of one previous owner (runs.hpp).
    // Returns false, having stopped, when no member is left below quota for a partition: that happens only when
    // the owned counts say more than `before` holds (clean_claims.cpp's counts of claims named twice); with
    // counts of what `before` holds, the quotas sum to the partitions and some member is always below quota.
    template <class Emit>
    bool walk(const int32_t* before, int32_t n, Emit&& emit) {
        const int32_t members = static_cast<int32_t>(quota_.size());
        int64_t* const quota = quota_.data();
        int64_t* const load = load_.data();
        int64_t* const kept = kept_.data();
        int32_t next = next_;   // lowest member that may still be below quota
        for (int32_t i = 0; i < n;) {
            const int32_t o = before[i];
            const int32_t run = run_end(before, i, n);
            if (run - i == 1) {  // short runs: a block partition by partition, as one run each
                for (const int32_t stop = std::min(n, i + kShortRunBlock); i < stop; ++i) {
                    const int32_t k = before[i];
                    if (k >= 0 && kept[k] < quota[k]) {
                        emit(1, k, k);
                        ++kept[k];
                        continue;
                    }
                    while (load[next] >= quota[next])
                        if (++next == members) return false;
                    emit(1, next, k);
                    ++load[next];
                }
                continue;
            }
            if (!hand(run - i, o, next, emit)) return false;
            i = run;
        }
        next_ = next;
        return true;
    }

    // The next n partitions, all previously owned by o (-1: none), all of subscribed topics: walk() on a run
    // of n copies of o, without the array (clean_claims.cpp's runs of claims). O(segments emitted).
    template <class Emit>
    bool take(int64_t n, int32_t o, Emit&& emit) {
        int32_t next = next_;
        const bool placed = hand(n, o, next, emit);
        next_ = next;
        return placed;
    }

    // Each member's load: what it keeps plus what it was handed so far (after the last walk: its final load).
    const std::vector<int64_t>& loads() const { return load_; }

private:
    // A run of n partitions previously owned by o: o keeps up to its quota, the rest go out in blocks to the
    // members below quota from `next` up (a local of the caller's, in a register). False: nobody left below quota.
    template <class Emit>
    bool hand(int64_t n, int32_t o, int32_t& next, Emit& emit) {
        const int32_t members = static_cast<int32_t>(quota_.size());
        int64_t* const quota = quota_.data();
        int64_t* const load = load_.data();
        int64_t* const kept = kept_.data();
        if (o >= 0 && kept[o] < quota[o]) {
            const int64_t c = std::min<int64_t>(quota[o] - kept[o], n);
            emit(c, o, o);
            kept[o] += c;
            n -= c;
        }
        while (n > 0) {
            while (load[next] >= quota[next])
                if (++next == members) return false;
            const int64_t c = std::min<int64_t>(quota[next] - load[next], n);
            emit(c, next, o);
            load[next] += c;
            n -= c;
        }
        return true;
    }

    std::vector<int64_t> quota_, load_, kept_;
    int32_t next_ = 0;
};

}  // namespace sticky
}  // namespace kafkagroup
