// Water-filling of one topic's free partitions over its subscribers: the array-based replacement of a
// per-partition min-heap of members by load.
//
// Handing n partitions one at a time to the subscriber with the fewest partitions (ties: lower member
// id) ends in a known shape: the k least-loaded subscribers are raised to a common level L (and
// `extra` of them, the lowest ids, to L + 1). fill_levels computes that shape directly from the loads
// sorted by (load, id): a counting sort when loads span a small range (the usual case: loads of
// subscribers differ by a few partitions), std::sort otherwise. O(s + range) or O(s log s) per topic
// for s subscribers, independent of n.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace kafkagroup {
namespace sticky {

class LoadIndex {
public:
    // grants[i] receives how many of the n partitions subscribers[i] gets. `subscribers` must be in
    // ascending id order; `load` is indexed by member id.
    void fill_levels(const int32_t* subscribers, std::size_t s, const std::vector<int64_t>& load, int64_t n,
                     std::vector<int64_t>& grants) {
        grants.assign(s, 0);
        if (s == 0 || n <= 0) return;
        sort_by_load(subscribers, s, load);
        // Largest k with k * load(order[k-1]) - sum(loads of order[0..k)) <= n.
        int64_t prefix = 0;
        std::size_t k = 0;
        while (k < s) {
            const int64_t l = load[subscribers[order_[k]]];
            if (static_cast<int64_t>(k) * l - prefix > n) break;
            prefix += l;
            ++k;
        }
        const int64_t total = n + prefix;  // shared by the k lowest
        const int64_t level = total / static_cast<int64_t>(k);
        int64_t extra = total % static_cast<int64_t>(k);
        // The lowest ids among the k raised members get one more (the greedy breaks ties by id).
        if (extra > 0) std::sort(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(k));
        for (std::size_t i = 0; i < k; ++i) {
            const std::size_t idx = order_[i];
            grants[idx] = level - load[subscribers[idx]] + (extra > 0 ? 1 : 0);
            if (extra > 0) --extra;
        }
    }

private:
    // order_[0..s): subscriber indexes sorted by (load, index); index order is id order.
    void sort_by_load(const int32_t* subscribers, std::size_t s, const std::vector<int64_t>& load) {
        int64_t lo = load[subscribers[0]], hi = lo;
        for (std::size_t i = 1; i < s; ++i) {
            lo = std::min(lo, load[subscribers[i]]);
            hi = std::max(hi, load[subscribers[i]]);
        }
        order_.resize(s);
        const int64_t range = hi - lo + 1;
        if (range <= static_cast<int64_t>(4 * s + 64)) {
            bucket_.assign(static_cast<std::size_t>(range) + 1, 0);
            for (std::size_t i = 0; i < s; ++i) ++bucket_[static_cast<std::size_t>(load[subscribers[i]] - lo) + 1];
            for (std::size_t b = 1; b < bucket_.size(); ++b) bucket_[b] += bucket_[b - 1];
            for (std::size_t i = 0; i < s; ++i)
                order_[static_cast<std::size_t>(bucket_[static_cast<std::size_t>(load[subscribers[i]] - lo)]++)] = i;
        } else {
            for (std::size_t i = 0; i < s; ++i) order_[i] = i;
            std::sort(order_.begin(), order_.end(), [&](std::size_t a, std::size_t b) {
                const int64_t la = load[subscribers[a]], lb = load[subscribers[b]];
                return la != lb ? la < lb : a < b;
            });
        }
    }

    std::vector<std::size_t> order_;
    std::vector<int64_t> bucket_;
};

}  // namespace sticky
}  // namespace kafkagroup
