// Finding the topic of a global partition id in topic_base (Prepared::topic_base: T+1 non-decreasing
// offsets), starting from a topic known not to be past it. One home for the search the ownership pass and
// server-range's claims walk both do: their claims come sorted by partition within a member, so the topic
// moves forward a little at a time and a search from the topic before beats a binary search of all T.
#pragma once

#include <algorithm>
#include <cstdint>

namespace kafkagroup {

// The last u >= from with base[u] <= part, given base[from] <= part < base[T]: doubling steps from `from`,
// then a binary search in the last step.
inline int32_t topic_after(const int32_t* base, int32_t T, int32_t from, int32_t part) {
    int32_t step = 1;
    while (from + step < T && base[from + step] <= part) {
        from += step;
        step *= 2;
    }
    const int32_t end = std::min(from + step, T);
    return static_cast<int32_t>(std::upper_bound(base + from, base + end, part) - base) - 1;
}

}  // namespace kafkagroup
