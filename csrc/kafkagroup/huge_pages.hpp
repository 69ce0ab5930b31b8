// Transparent huge pages for the engine's large per-partition arrays.
//
// owner[] and the previous owners take 4 bytes per partition: 64 MB each at 16M partitions. glibc serves
// blocks that large with a fresh anonymous mapping per call (above its 32 MB mmap threshold), so every
// call faults in 4 KB pages: 15,600 faults per 64 MB array, ~40 ms of a 16M-partition call on this VM,
// while numpy's arrays (the memory-pass floor) fault in 2 MB pages because numpy asks for them
// (madvise(MADV_HUGEPAGE) on arrays of 4 MB and more; most distributions set THP to "madvise"). The
// engine asks the same, for the same sizes. Advice only: where the kernel or the OS has no such advice,
// or refuses it, nothing changes.
#pragma once

#include <cstddef>
#include <vector>

namespace kafkagroup {

// Below this many bytes the advice is not given (numpy's threshold): a 4 KB-page fault per 4 KB costs
// little next to the work on arrays that small, and most of them come from reused heap memory.
constexpr std::size_t kHugePageAdviceBytes = std::size_t{4} << 20;

// Asks for huge pages on the whole pages inside [data, data + bytes), when bytes >= kHugePageAdviceBytes.
// Give it before the memory is first written: pages already faulted in stay as they are.
void advise_huge_pages(const void* data, std::size_t bytes);

// v.reserve(n), with the advice on the reserved capacity when v had no room (fresh memory, not yet written).
template <class T>
void reserve_advised(std::vector<T>& v, std::size_t n) {
    if (v.capacity() >= n) return;
    v.reserve(n);
    advise_huge_pages(v.data(), v.capacity() * sizeof(T));
}

// n copies of value, in advised memory.
template <class T>
std::vector<T> advised_vector(std::size_t n, const T& value) {
    std::vector<T> v;
    reserve_advised(v, n);
    v.assign(n, value);
    return v;
}

}  // namespace kafkagroup
