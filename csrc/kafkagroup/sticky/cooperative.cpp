// KIP-429 cooperative rebalancing on top of the sticky target: a partition may only change hands after
// its current holder revoked it, so every transfer is withheld from this round's assignment.
//
// Cost: one sequential pass comparing owner[] with prev_owner[], which the uniform builder runs on each
// stretch of owner[] it has just written (cache resident, stretch_writer.hpp) and withhold_transfers on the
// whole arrays; the claims are read (in input order) only when some claim is invalid and some partition
// changes hands without a valid previous owner. The result comes out sorted without a sort.
#include <algorithm>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "kafkagroup/sticky/sticky.hpp"

namespace kafkagroup {

// Kafka (CooperativeStickyAssignor.computePartitionsTransferringOwnership): a partition transfers when it
// is newly assigned to a member that did not own it while another member listed it as owned. Claims count
// as listed, whatever their generation or subscription; a partition kept by its valid previous owner is not
// a transfer even if a stale member still lists it (Kafka keeps it there too).
//
// A changed owner with a valid previous owner is a transfer (that owner claims it). Without a valid previous
// owner only an invalid claim (stale, unsubscribed, contested) can make it one, and only a claim by someone
// other than the new owner: those partitions are marked unsure and settled by a pass over the claims. That
// pass, and the marks, are skipped when every claim is valid: each partition with a valid owner accounts for
// at least one claim, so when they number as many as the claims, no claim is left for an unsure partition.
Transfers::Transfers(const Problem& p, const Prepared& pr, const PreviousOwners& prev) : problem_(p) {
    std::size_t valid = 0;   // partitions with a valid owner: previous_owners() counted them per member
    for (const int64_t n : prev.owned) valid += static_cast<std::size_t>(n);
    if (valid != p.owned_partitions.size)
        unsure_.assign((static_cast<std::size_t>(pr.num_partitions) + 63) / 64, 0);   // one bit per partition
}

void Transfers::withhold(int32_t begin, int32_t n, int32_t* now_of, const int32_t* before) {
    const bool track_unsure = !unsure_.empty();
    for (int32_t i = 0; i < n;) {
        // Sixteen partitions per step where none of them is a transfer or unsure (most of them in a sticky
        // rebalance): first "all sixteen kept" (XOR, OR: about one instruction per partition), then, for a step
        // with changes, "each changed one is free, or newly given with no valid previous owner while no
        // claim needs settling" (as after members left: four instructions per partition); the per-partition
        // loop below costs about four and a branch each.
#if defined(__SSE2__)
        if (i + 16 <= n) {
            const auto at = [](const int32_t* p, int k) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + k)); };
            const int32_t* const a = now_of + i;
            const int32_t* const b = before + i;
            const __m128i zero = _mm_setzero_si128();
            const __m128i diff = _mm_or_si128(_mm_or_si128(_mm_xor_si128(at(a, 0), at(b, 0)), _mm_xor_si128(at(a, 4), at(b, 4))),
                                              _mm_or_si128(_mm_xor_si128(at(a, 8), at(b, 8)), _mm_xor_si128(at(a, 12), at(b, 12))));
            if (_mm_movemask_epi8(_mm_cmpeq_epi32(diff, zero)) == 0xFFFF) {
                i += 16;
                continue;
            }
            if (!track_unsure) {
                // A transfer: a != b, a >= 0, b >= 0; with a != b and b >= 0, a >= 0 is all that is left.
                __m128i any = zero;
                for (int k = 0; k < 16; k += 4) {
                    const __m128i x = at(a, k), y = at(b, k);
                    const __m128i both_owned = _mm_and_si128(_mm_cmpgt_epi32(x, _mm_set1_epi32(-1)),
                                                             _mm_cmpgt_epi32(y, _mm_set1_epi32(-1)));
                    any = _mm_or_si128(any, _mm_andnot_si128(_mm_cmpeq_epi32(x, y), both_owned));
                }
                if (_mm_movemask_epi8(any) == 0) {
                    i += 16;
                    continue;
                }
            }
        }
#endif
        for (const int32_t step_end = std::min(n, i + 16); i < step_end; ++i) {
            const int32_t now = now_of[i], prev_m = before[i];
            if (now < 0 || now == prev_m) continue;
            if (prev_m >= 0) {
                withheld_.push_back(begin + i);
                now_of[i] = kUnassigned;
            } else if (track_unsure) {
                const uint32_t part = static_cast<uint32_t>(begin + i);
                unsure_[part >> 6] |= uint64_t{1} << (part & 63);
                any_unsure_ = true;
            }
        }
    }
}

std::vector<int32_t> Transfers::finish(const Prepared& pr, std::vector<int32_t>& owner, PartitionTally* tally) {
    if (!any_unsure_) return std::move(withheld_);
    const Problem& p = problem_;
    // Transfers among the unsure partitions, as bits (a partition claimed twice is one transfer), then merged
    // into the sorted list: none of them is in it (those have no valid previous owner).
    std::vector<uint64_t> more(unsure_.size(), 0);
    for (int32_t m = 0; m < pr.num_members; ++m)
        for (int64_t i = p.owned_offsets[m]; i < p.owned_offsets[m + 1]; ++i) {
            const uint32_t part = static_cast<uint32_t>(p.owned_partitions[i]);
            if ((unsure_[part >> 6] >> (part & 63) & 1) && owner[part] != m) more[part >> 6] |= uint64_t{1} << (part & 63);
        }
    std::vector<int32_t> found;
    for (std::size_t w = 0; w < more.size(); ++w)
        for (uint64_t bits = more[w]; bits; bits &= bits - 1) {
            const int32_t part = static_cast<int32_t>(w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits)));
            if (tally) tally->withdraw(owner[part]);
            owner[part] = kUnassigned;
            found.push_back(part);
        }
    std::vector<int32_t> all(withheld_.size() + found.size());
    std::merge(withheld_.begin(), withheld_.end(), found.begin(), found.end(), all.begin());
    return all;
}

std::vector<int32_t> withhold_transfers(const Problem& p, const Prepared& pr, const PreviousOwners& prev,
                                        std::vector<int32_t>& owner) {
    if (prev.none()) return {};   // no claim at all: nothing can transfer
    Transfers transfers(p, pr, prev);
    transfers.withhold(0, static_cast<int32_t>(owner.size()), owner.data(), prev.owner.data());
    return transfers.finish(pr, owner, nullptr);
}

}  // namespace kafkagroup
