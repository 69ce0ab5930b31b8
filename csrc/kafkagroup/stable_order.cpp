#include "kafkagroup/stable_order.hpp"

#include <algorithm>
#include <numeric>

namespace kafkagroup {

std::vector<int32_t> stable_order_by_key(const std::vector<int64_t>& keys) {
    const std::size_t n = keys.size();
    std::vector<int32_t> order(n);
    if (n == 0) return order;
    const auto [lo_it, hi_it] = std::minmax_element(keys.begin(), keys.end());
    const int64_t lo = *lo_it, hi = *hi_it;
    if (counting_sort_pays(hi - lo + 1, static_cast<int64_t>(n))) {
        std::vector<int64_t> start(static_cast<std::size_t>(hi - lo) + 2, 0);
        for (int64_t k : keys) ++start[static_cast<std::size_t>(k - lo) + 1];
        for (std::size_t b = 1; b < start.size(); ++b) start[b] += start[b - 1];
        for (std::size_t i = 0; i < n; ++i)
            order[static_cast<std::size_t>(start[static_cast<std::size_t>(keys[i] - lo)]++)] = static_cast<int32_t>(i);
    } else {
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return keys[a] < keys[b]; });
    }
    return order;
}

}  // namespace kafkagroup
