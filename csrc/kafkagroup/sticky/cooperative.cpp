// KIP-429 cooperative rebalancing on top of the sticky target: a partition may only change hands after
// its current holder revoked it, so every transfer is withheld from this round's assignment.
//
// Cost: one sequential pass over owner[] and prev_owner[] setting bits in bitmaps of P bits (125 KB at 1M
// partitions, cache resident); the claims are read (in input order) only when some claim is invalid and
// some partition changes hands without a valid previous owner. The result comes out sorted without a sort.
#include "kafkagroup/sticky/sticky.hpp"

#include <algorithm>

#include "kafkagroup/runs.hpp"

namespace kafkagroup {
namespace {

class Bits {
public:
    explicit Bits(std::size_t n) : words_((n + 63) / 64, 0) {}
    void set(std::size_t i) { words_[i >> 6] |= uint64_t{1} << (i & 63); }
    bool test(std::size_t i) const { return (words_[i >> 6] >> (i & 63)) & 1; }
    // Calls f(i) for every set bit, ascending.
    template <class F>
    void for_each(F f) const {
        for (std::size_t w = 0; w < words_.size(); ++w)
            for (uint64_t bits = words_[w]; bits; bits &= bits - 1)
                f(w * 64 + static_cast<std::size_t>(__builtin_ctzll(bits)));
    }

private:
    std::vector<uint64_t> words_;
};

}  // namespace

std::vector<int32_t> withhold_transfers(const Problem& p, const Prepared& pr, const PreviousOwners& prev,
                                        std::vector<int32_t>& owner) {
    std::vector<int32_t> withheld;
    if (prev.none()) return withheld;   // no claim at all: nothing can transfer
    const std::vector<int32_t>& prev_owner = prev.owner;
    // Kafka (CooperativeStickyAssignor.computePartitionsTransferringOwnership): a partition transfers
    // when it is newly assigned to a member that did not own it while another member listed it as owned.
    // Claims count as listed, whatever their generation or subscription; a partition kept by its valid
    // previous owner is not a transfer even if a stale member still lists it (Kafka keeps it there too).
    const std::size_t P = owner.size();
    // A changed owner with a valid previous owner is a transfer (that owner claims it). Without a valid
    // previous owner only an invalid claim (stale, unsubscribed, contested) can make it one, and only a
    // claim by someone other than the new owner: those partitions are marked unsure and settled by a pass
    // over the claims. That pass is skipped when every claim is valid: each partition with a valid owner
    // accounts for at least one claim, so when they number as many as the claims, no claim is left for an
    // unsure partition. (The claims used to be read twice, once into a bitmap of claimed partitions: 18
    // bit operations per claim and a second read of the claims array, 14 MB at 4M partitions, on every
    // call.)
    Bits transfer(P), unsure(P);
    bool any_unsure = false;
    // Partitions with a valid owner: previous_owners() counted them per member.
    std::size_t valid = 0;
    for (const int64_t n : prev.owned) valid += static_cast<std::size_t>(n);
    const int32_t* const now_of = owner.data();
    const int32_t* const before = prev_owner.data();
    // Eight partitions per step where all eight keep their owner (most of them, in a sticky rebalance): a
    // 64-bit compare per two entries (runs.hpp's loads); the others go one by one.
    using runs_detail::load2;
    for (std::size_t part = 0; part < P;) {
        if (part + 8 <= P) {
            const int32_t* const a = now_of + part;
            const int32_t* const b = before + part;
            if (((load2(a) ^ load2(b)) | (load2(a + 2) ^ load2(b + 2)) | (load2(a + 4) ^ load2(b + 4)) |
                 (load2(a + 6) ^ load2(b + 6))) == 0) {
                part += 8;
                continue;
            }
        }
        for (const std::size_t step_end = std::min(P, part + 8); part < step_end; ++part) {
            const int32_t now = now_of[part], prev_m = before[part];
            if (now < 0 || now == prev_m) continue;
            if (prev_m >= 0) {
                transfer.set(part);
            } else {
                unsure.set(part);
                any_unsure = true;
            }
        }
    }
    if (any_unsure && valid != p.owned_partitions.size) {
        for (int32_t m = 0; m < pr.num_members; ++m)
            for (int64_t i = p.owned_offsets[m]; i < p.owned_offsets[m + 1]; ++i) {
                const int32_t part = p.owned_partitions[i];
                if (unsure.test(static_cast<std::size_t>(part)) && owner[part] != m) transfer.set(static_cast<std::size_t>(part));
            }
    }
    transfer.for_each([&](std::size_t part) {
        withheld.push_back(static_cast<int32_t>(part));
        owner[part] = kUnassigned;
    });
    return withheld;
}

}  // namespace kafkagroup
