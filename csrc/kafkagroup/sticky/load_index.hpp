// Water filling of one topic's free partitions over its subscribers, solved in one step: how many
// partitions each subscriber gets, as a level and a remainder. There is no heap, bucket queue or other
// index of members by load here (the name is historical); it replaces handing the partitions out one by
// one from such a structure. Used by the general sticky builder's fill without racks
// (general_builder.cpp, fill_free); the rack-aware fill keeps one min-heap per rack instead.
//
// Handing n partitions one at a time to the subscriber with the fewest partitions (ties: lower member
// id) ends in a known shape: with L the highest level such that raising every subscriber below L to L
// needs at most n partitions, every subscriber below L is raised to L, and the rem = n - need(L)
// partitions left over go, one each, to the lowest ids among the subscribers then at L (rem is smaller
// than their number, else L + 1 would fit). water_level computes that shape directly from a histogram
// of the loads when they span a small range (the usual case: subscribers' loads differ by a few
// partitions), from the sorted loads otherwise. O(s + range) or O(s log s) per topic for s subscribers,
// independent of n; buffers are reused across calls (no allocation once warm). The caller hands the
// partitions out in the same pass that reads each subscriber's grant (no per-subscriber grant array).
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "kafkagroup/stable_order.hpp"

namespace kafkagroup {
namespace sticky {

class LoadIndex {
public:
    struct Level {
        int64_t level;  // every subscriber below it rises to it
        int64_t rem;    // then the `rem` lowest ids among those at or below it get one more
    };

    // The water level for n partitions over subscribers[0..s) (ascending ids; `load` indexed by member id).
    // A subscriber with load l gets 0 if l > level, else level - l, plus one while `rem` lasts in id
    // order (see grant()). Keeps a copy of the loads for the caller's pass (loads()).
    Level water_level(const int32_t* subscribers, std::size_t s, const int32_t* load, int64_t n) {
        loads_.resize(s);
        if (s == 0 || n <= 0) return {std::numeric_limits<int64_t>::min(), 0};
        int64_t lo = load[subscribers[0]], hi = lo, at_lo = 0;
        for (std::size_t i = 0; i < s; ++i) {
            const int64_t l = load[subscribers[i]];
            loads_[i] = l;
            if (l < lo) lo = l, at_lo = 0;
            at_lo += l == lo;
            hi = std::max(hi, l);
        }
        // Fewer partitions than subscribers at the lowest load (e.g. a few freed by departed members):
        // the lowest ids among those take one each.
        if (n < at_lo) return {lo, n};
        const auto [level, rem] = solve(s, lo, hi, n);
        return {level, rem};
    }

    const std::vector<int64_t>& loads() const { return loads_; }

    // Partitions for a subscriber of load l, in id order (consumes `rem`).
    static int64_t grant(int64_t l, Level& w) {
        if (l > w.level) return 0;
        int64_t g = w.level - l;
        if (w.rem > 0) ++g, --w.rem;
        return g;
    }

private:
    // (L, rem) for loads_[0..s) with minimum lo and maximum hi.
    std::pair<int64_t, int64_t> solve(std::size_t s, int64_t lo, int64_t hi, int64_t n) {
        const int64_t range = hi - lo + 1;
        const int64_t S = static_cast<int64_t>(s);
        int64_t level = lo, need = 0, at_or_below = 0;  // need(level); subscribers with load <= level
        if (counting_sort_pays(range, S)) {
            hist_.assign(static_cast<std::size_t>(range), 0);
            for (std::size_t i = 0; i < s; ++i) ++hist_[static_cast<std::size_t>(loads_[i] - lo)];
            at_or_below = hist_[0];
            // need(level + 1) = need(level) + at_or_below(level)
            while (level < hi && need + at_or_below <= n) {
                need += at_or_below;
                ++level;
                at_or_below += hist_[static_cast<std::size_t>(level - lo)];
            }
        } else {
            sorted_.assign(loads_.begin(), loads_.begin() + static_cast<std::ptrdiff_t>(s));
            std::sort(sorted_.begin(), sorted_.end());
            std::size_t i = 0;
            while (i < s && sorted_[i] == level) ++i;
            at_or_below = static_cast<int64_t>(i);
            while (level < hi) {
                const int64_t next = sorted_[i];  // next distinct load above `level`
                const int64_t step = (next - level) * at_or_below;
                if (need + step > n) {
                    const int64_t levels = (n - need) / at_or_below;
                    level += levels;
                    need += levels * at_or_below;
                    return {level, n - need};
                }
                need += step;
                level = next;
                while (i < s && sorted_[i] == level) ++i;
                at_or_below = static_cast<int64_t>(i);
            }
        }
        if (level == hi || need + at_or_below > n) {
            // Every subscriber at or below `level` (all of them once level == hi) rises together.
            const int64_t levels = (n - need) / at_or_below;
            level += levels;
            need += levels * at_or_below;
        }
        return {level, n - need};
    }

    std::vector<int64_t> loads_, sorted_;
    std::vector<int32_t> hist_;
};

}  // namespace sticky
}  // namespace kafkagroup
