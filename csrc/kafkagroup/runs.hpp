// Runs of equal entries in per-partition arrays (owner[], prev_owner[]): where a run that starts at
// `begin` ends. The passes over millions of partitions that count per member (loads, owned, kept) go run
// by run instead of partition by partition: an increment of a per-member counter per partition waits on
// the previous partition's store to the same counter (a store-to-load round trip each), while a run is
// counted in a register and added once. Sticky results come in runs of hundreds of partitions per member.
//
// The scan tests 8 entries per step with one branch (two entries per 64-bit word), then finishes entry by
// entry: under two instructions per partition on long runs; a run of one (interleaved ownership, e.g. a
// range or round-robin result) is settled by the first compare.
#pragma once

#include <cstdint>
#include <cstring>

namespace kafkagroup {

// Where a run of one is found, the passes go partition by partition for this many partitions before they
// look for runs again: interleaved ownership (a range or round-robin result, Java leaders' assignments)
// then costs what the per-partition loop costs, plus one run test per block.
constexpr int32_t kShortRunBlock = 64;

namespace runs_detail {
// Two entries as one 64-bit word (memcpy: no alignment or aliasing assumption; one load).
inline uint64_t load2(const int32_t* a) {
    uint64_t w;
    std::memcpy(&w, a, sizeof w);
    return w;
}
// Entries i..i+7 XOR-ed with v in each 32-bit half (v2 is v in both halves), OR-ed together: 0 when all
// eight equal v. A step is four loads, four XORs and three ORs. Each word is loaded on its own: a memcpy
// of all 32 bytes into a uint64_t[4] compiled to two 16-byte stores to the stack and four 8-byte loads
// back, which stall on store forwarding (a third of a 10k-partition call went there).
inline uint64_t differs8(const int32_t* a, uint64_t v2) {
    return (load2(a) ^ v2) | (load2(a + 2) ^ v2) | (load2(a + 4) ^ v2) | (load2(a + 6) ^ v2);
}
inline uint64_t twice(int32_t v) {
    const uint64_t u = static_cast<uint32_t>(v);
    return u | (u << 32);
}
}  // namespace runs_detail

// The end of the run of entries equal to a[begin] in a[begin, end); begin < end.
inline int32_t run_end(const int32_t* a, int32_t begin, int32_t end) {
    const int32_t v = a[begin];
    const uint64_t v2 = runs_detail::twice(v);
    int32_t i = begin + 1;
    if (i < end && a[i] != v) return i;  // a run of one: one compare (interleaved ownership)
    while (end - i >= 8 && runs_detail::differs8(a + i, v2) == 0) i += 8;
    while (i < end && a[i] == v) ++i;
    return i;
}

// The end of the run from `begin` over which both a and b stay equal to a[begin] and b[begin].
inline int32_t run_end(const int32_t* a, const int32_t* b, int32_t begin, int32_t end) {
    const int32_t va = a[begin], vb = b[begin];
    const uint64_t va2 = runs_detail::twice(va), vb2 = runs_detail::twice(vb);
    int32_t i = begin + 1;
    if (i < end && (a[i] != va || b[i] != vb)) return i;  // a run of one
    while (end - i >= 8 && (runs_detail::differs8(a + i, va2) | runs_detail::differs8(b + i, vb2)) == 0) i += 8;
    while (i < end && a[i] == va && b[i] == vb) ++i;
    return i;
}

}  // namespace kafkagroup
