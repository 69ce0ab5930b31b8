// Indices in ascending order of an integer key, ties by index: the stable sort several passes need
// (members by load, partitions by rack weight), with the choice between a counting sort and a
// comparison sort made in one place.
#pragma once

#include <cstdint>
#include <vector>

namespace kafkagroup {

// Does a counting sort (or a histogram) over keys spanning `key_range` distinct values pay for `n`
// items? Its table costs O(key_range): yes while that stays within a few times n (+64 so that tiny
// inputs always take it). Above that, O(n log n) sorting is cheaper than the table.
inline bool counting_sort_pays(int64_t key_range, int64_t n) { return key_range <= 4 * n + 64; }

// 0..keys.size()-1 ordered by ascending keys[i], equal keys in ascending i (what std::stable_sort on
// the indices gives). A counting sort when counting_sort_pays, else std::stable_sort: the same order
// either way, O(n + range) or O(n log n). Limits: keys.size() fits int32 (callers order members or
// partitions, both int32 ids) and max - min of the keys fits int64 (they are loads and counts, >= 0).
std::vector<int32_t> stable_order_by_key(const std::vector<int64_t>& keys);

}  // namespace kafkagroup
