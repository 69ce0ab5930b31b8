// Runs of equal entries in per-partition arrays (owner[], prev_owner[]): where a run that starts at
// `begin` ends. The passes over millions of partitions that count per member (loads, owned, kept) go run
// by run instead of partition by partition: an increment of a per-member counter per partition waits on
// the previous partition's store to the same counter (a store-to-load round trip each), while a run is
// counted in a register and added once. Sticky results come in runs of hundreds of partitions per member.
//
// The scan tests 16 entries per step with one branch where SSE2 is there (every x86-64: four 128-bit
// compares, a third of an instruction per entry; GCC does not vectorise the portable loop by itself), then
// 8 per step (two entries per 64-bit word, under two instructions per entry), then finishes entry by
// entry. A run of one (interleaved ownership, e.g. a range or round-robin result) is settled by the first
// compare. At 10k partitions the run scans were a third of a call.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <cwchar>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

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
#if defined(__SSE2__)
// Entries a[0..15] all equal to v (v4: v in every lane).
inline bool equal16(const int32_t* a, __m128i v4) {
    const auto at = [a](int k) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + k)); };
    const __m128i x = _mm_or_si128(_mm_or_si128(_mm_xor_si128(at(0), v4), _mm_xor_si128(at(4), v4)),
                                   _mm_or_si128(_mm_xor_si128(at(8), v4), _mm_xor_si128(at(12), v4)));
    return _mm_movemask_epi8(_mm_cmpeq_epi32(x, _mm_setzero_si128())) == 0xFFFF;
}
#endif
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
#if defined(__SSE2__)
    const __m128i v4 = _mm_set1_epi32(v);
    while (end - i >= 16 && runs_detail::equal16(a + i, v4)) i += 16;
#endif
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
#if defined(__SSE2__)
    const __m128i va4 = _mm_set1_epi32(va), vb4 = _mm_set1_epi32(vb);
    while (end - i >= 16 && runs_detail::equal16(a + i, va4) && runs_detail::equal16(b + i, vb4)) i += 16;
#endif
    while (end - i >= 8 && (runs_detail::differs8(a + i, va2) | runs_detail::differs8(b + i, vb2)) == 0) i += 8;
    while (i < end && a[i] == va && b[i] == vb) ++i;
    return i;
}

// Runs of consecutive ids in a claims list (claims[j] == claims[i] + (j - i)): where the run that starts at
// claims[i] ends within claims[i, end), i < end (claims[i] + (end - i) must not overflow: ids are below 2^28,
// checked by prepare()). A member's claims on its share of a topic are such a run (hundreds of ids after a
// sticky or range assignment). Sixteen entries per step where SSE2 is there (one branch and one prefetch, 1 KB
// ahead, per 64-byte line: at millions of claims the hardware prefetchers alone left these loads stalled), then
// one step of 8 and one of 4, then entry by entry; a run of one is settled by the first compare. (Eight per step
// with a prefetch each cost 2.4 instructions a claim, a third of claim_runs' time at 10k partitions.) The one
// home of this scan: the previous owners (ownership.cpp), the claim runs (claim_runs.cpp), the clean claims
// windows (sticky/clean_claims.cpp) and the server assignors' claims walk (server/clean_claims.hpp).
//
// consecutive_end_portable is that scan for any x86-64 (and, without SSE2, entry by entry); consecutive_end takes
// consecutive_end_avx2 instead where the CPU has AVX2 (checked once, at load): 32 claims per step, half the
// instructions per claim (claim_runs was ~18% of a 10k-partition sticky call after churn with 16 per step).
inline int64_t consecutive_end_portable(const int32_t* claims, int64_t i, int64_t end) {
    const int32_t first = claims[i];
    int64_t j = i + 1;
    if (j < end && claims[j] != first + 1) return j;
#if defined(__SSE2__)
    const auto at = [claims](int64_t k) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(claims + k)); };
    // want: the ids claims[j .. j + 3] must be
    __m128i want = _mm_add_epi32(_mm_set1_epi32(first + 1), _mm_setr_epi32(0, 1, 2, 3));
    const __m128i four = _mm_set1_epi32(4), eight = _mm_set1_epi32(8), twelve = _mm_set1_epi32(12),
                  sixteen = _mm_set1_epi32(16);
    const auto same4 = [&](int64_t k, __m128i w) { return _mm_cmpeq_epi32(at(k), w); };
    while (end - j >= 16) {
        __builtin_prefetch(claims + j + 256);
        const __m128i same = _mm_and_si128(_mm_and_si128(same4(j, want), same4(j + 4, _mm_add_epi32(want, four))),
                                           _mm_and_si128(same4(j + 8, _mm_add_epi32(want, eight)),
                                                         same4(j + 12, _mm_add_epi32(want, twelve))));
        if (_mm_movemask_epi8(same) != 0xFFFF) break;
        want = _mm_add_epi32(want, sixteen);
        j += 16;
    }
    if (end - j >= 8 &&
        _mm_movemask_epi8(_mm_and_si128(same4(j, want), same4(j + 4, _mm_add_epi32(want, four)))) == 0xFFFF) {
        want = _mm_add_epi32(want, eight);
        j += 8;
    }
    if (end - j >= 4 && _mm_movemask_epi8(same4(j, want)) == 0xFFFF) j += 4;
#endif
    while (j < end && claims[j] == first + static_cast<int32_t>(j - i)) ++j;
    return j;
}


#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define KAFKAGROUP_RUNS_AVX2 1
// consecutive_end_portable with 32 claims per step (four 256-bit compares, one branch, one prefetch 1 KB ahead),
// then 8 per step, then entry by entry. Only where the CPU has AVX2 (runs_detail::kHaveAvx2).
// (no lambdas inside: a lambda's body does not take the function's target attribute)
__attribute__((target("avx2"))) inline int64_t consecutive_end_avx2(const int32_t* claims, int64_t i, int64_t end) {
    const int32_t first = claims[i];
    int64_t j = i + 1;
    if (j < end && claims[j] != first + 1) return j;
    // want: the ids claims[j .. j + 7] must be
    __m256i want = _mm256_add_epi32(_mm256_set1_epi32(first + 1), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256i eight = _mm256_set1_epi32(8), sixteen = _mm256_set1_epi32(16), twentyfour = _mm256_set1_epi32(24),
                  thirtytwo = _mm256_set1_epi32(32);
    while (end - j >= 32) {
        __builtin_prefetch(claims + j + 256);
        const __m256i* const p = reinterpret_cast<const __m256i*>(claims + j);
        const __m256i same = _mm256_and_si256(
            _mm256_and_si256(_mm256_cmpeq_epi32(_mm256_loadu_si256(p), want),
                             _mm256_cmpeq_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(claims + j + 8)),
                                                _mm256_add_epi32(want, eight))),
            _mm256_and_si256(_mm256_cmpeq_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(claims + j + 16)),
                                                _mm256_add_epi32(want, sixteen)),
                             _mm256_cmpeq_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(claims + j + 24)),
                                                _mm256_add_epi32(want, twentyfour))));
        if (_mm256_movemask_epi8(same) != -1) break;
        want = _mm256_add_epi32(want, thirtytwo);
        j += 32;
    }
    while (end - j >= 8 &&
           _mm256_movemask_epi8(_mm256_cmpeq_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(claims + j)), want)) == -1) {
        want = _mm256_add_epi32(want, eight);
        j += 8;
    }
    while (j < end && claims[j] == first + static_cast<int32_t>(j - i)) ++j;
    return j;
}
namespace runs_detail {
inline const bool kHaveAvx2 = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
}();
}  // namespace runs_detail
#endif

// The scan above, the widest the CPU has. A run of one is settled here, before any dispatch.
inline int64_t consecutive_end(const int32_t* claims, int64_t i, int64_t end) {
    if (i + 1 < end && claims[i + 1] != claims[i] + 1) return i + 1;
#if defined(KAFKAGROUP_RUNS_AVX2)
    if (runs_detail::kHaveAvx2) return consecutive_end_avx2(claims, i, end);
#endif
    return consecutive_end_portable(claims, i, end);
}

// Writes n copies of v at out: a run of one owner in owner[]. Where wchar_t is 32 bits (Linux, macOS), through
// the C library's wmemset, which glibc picks at load time for the CPU (AVX2 / AVX-512: 32- or 64-byte stores);
// GCC's loop for std::fill_n stores 16 bytes at a time (SSE2, the x86-64 baseline), so owner[] written run by
// run took four times the stores of the memory pass's copy (np.copyto: memmove, the same load-time choice), an
// eighth of a 10k-partition sticky call. A run of one is a plain store; a 16-bit wchar_t takes std::fill_n.
inline void fill_run(int32_t* out, std::size_t n, int32_t v) {
    if (n == 1) {
        *out = v;
        return;
    }
    if constexpr (sizeof(wchar_t) == sizeof(int32_t)) {
        // (the library writes the bytes; a 32-bit wchar_t holding v's value or, unsigned, v modulo 2^32 has
        // v's bytes either way)
        std::wmemset(reinterpret_cast<wchar_t*>(out), static_cast<wchar_t>(v), n);
    } else {
        std::fill_n(out, n, v);
    }
}

}  // namespace kafkagroup
