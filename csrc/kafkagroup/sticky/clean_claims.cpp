// Sticky and cooperative-sticky with equal subscriptions, no racks and clean claims, read straight from the
// claims (sticky.hpp, assign_sticky_clean).
//
// Why: after churn the general path reads the claims in previous_owners(), writes the previous owners' array
// (P entries), and the uniform builder reads it back to write owner[] over it: at 4M partitions that is three
// streams of 16 MB besides the claims, where the memory-pass floor has one read and one write. With clean
// claims a member's valid previous partitions are its claims, so the owned counts, and with them the quotas,
// are the claim counts (owned_offsets alone), known before any claim is read; what the walk (hand_out.hpp)
// still needs is each partition's previous owner in partition order. That comes from the claims in one of
// two ways, the claims read once either way and owner[] written once into fresh memory:
//
// - Runs (claim_runs.hpp), when the claims come in runs of 32 partitions or more on average (after a sticky
//   or range assignment: a member's claims are a few runs of hundreds): the claims are read forward, as they
//   lie in memory, into a list of runs, sorted by a counting sort; the walk takes run after run (and the gaps
//   between them, owned by nobody) with no per-partition array at all. Any order of claims within a member.
//   At 4M partitions after churn: 1.7 ms against 3.6 ms through the windows (the window's fill, scan and
//   reset were half of the call; the claims are read as one stream, where the windows hopped between members).
// - Windows, for interleaved claims (runs of one or a few, after range or round robin; claim_runs gives up
//   past its limit): a window of kWindow partitions at a time, each member's claims read from a cursor,
//   members waiting in a bucket for the window of their next claim, and scattered into a cache-resident
//   window, which the walk then reads. Here claims must come in ascending order within each member (a claim
//   below the window being filled is not clean here; the general path takes it); members may interleave
//   freely. Cost: O(P + claims + visits), a visit being a member whose claims reach into a window: M x windows
//   at most, when every member holds a partition of every window (8,000 x 256 at 4M partitions).
//
// Clean is checked as the claims are read, never assumed: in range (each claim is compared with P, and the
// window, before it is an index; a run is cut at P) and, for the windows, ascending per member, where the first
// failure ends the attempt; and no partition named twice: in the sorted runs, a run starting before the last
// one ended (before the walk starts); through the windows, found at the end: the walk meets as many partitions with a claimant as there
// are claims only when no claim wrote over another (each claim writes one window entry). The walk's results
// before a failure are dropped with the rest.
#include <algorithm>
#include <optional>
#include <stdexcept>
#include <string>

#include "kafkagroup/huge_pages.hpp"
#include "kafkagroup/runs.hpp"
#include "kafkagroup/server/clean_claims.hpp"
#include "kafkagroup/sticky/claim_runs.hpp"
#include "kafkagroup/sticky/hand_out.hpp"
#include "kafkagroup/sticky/sticky.hpp"

namespace kafkagroup {
namespace {

// 16,384 partitions: a 64 KB window (L2-resident next to the claims and owner[] streaming past it).
constexpr int32_t kWindowShift = 14;
constexpr int32_t kWindow = int32_t{1} << kWindowShift;

// The previous owners (claimants) of one window of partitions after another, from the claims.
class ClaimWindows {
public:
    ClaimWindows(const Problem& p, const Prepared& pr)
        : claims_(p.owned_partitions.data), offsets_(p.owned_offsets.data), P_(pr.num_partitions),
          head_(static_cast<std::size_t>((static_cast<int64_t>(pr.num_partitions) + kWindow - 1) >> kWindowShift), -1),
          tail_(head_.size(), -1),
          link_(static_cast<std::size_t>(pr.num_members), -1), cursor_(offsets_, offsets_ + pr.num_members),
          window_(static_cast<std::size_t>(std::min(kWindow, pr.num_partitions))) {
        for (int32_t m = 0; m < pr.num_members && clean_; ++m)
            if (offsets_[m] < offsets_[m + 1]) clean_ = wait(m, claims_[offsets_[m]], 0);
    }

    int32_t windows() const { return static_cast<int32_t>(head_.size()); }

    // Window w (each once, in order): the claimant of partitions w * kWindow + i at [i] (-1: none), or null
    // when the claims are not clean.
    const int32_t* fill(int32_t w) {
        if (!clean_) return nullptr;
        const int32_t begin = w << kWindowShift;
        const uint32_t n = static_cast<uint32_t>(std::min(kWindow, P_ - begin));
        int32_t* const window = window_.data();
        std::fill_n(window, n, kUnassigned);
        for (int32_t m = head_[static_cast<std::size_t>(w)]; m >= 0;) {
            const int32_t after = link_[static_cast<std::size_t>(m)];
            if (after >= 0) __builtin_prefetch(claims_ + cursor_[static_cast<std::size_t>(after)]);
            const int64_t end = offsets_[m + 1];
            int64_t i = cursor_[static_cast<std::size_t>(m)];
            // By runs of consecutive ids (a sticky member's claims are runs of hundreds): each is checked and
            // written as a block, about a third of an instruction per claim instead of ten.
            while (i < end) {
                const uint32_t at = static_cast<uint32_t>(claims_[i]) - static_cast<uint32_t>(begin);
                if (at >= n) break;
                const int64_t run = consecutive_end(claims_, i, std::min<int64_t>(end, i + (n - at)));
                std::fill_n(window + at, run - i, m);
                i = run;
            }
            cursor_[static_cast<std::size_t>(m)] = i;
            if (i < end && !wait(m, claims_[i], w + 1)) return nullptr;
            m = after;
        }
        return window;
    }

private:
    // Member m's next claim is `part`: m waits for its window, which must be `first` or later (a claim below
    // it is out of order, or negative) and within 0..P-1.
    bool wait(int32_t m, int32_t part, int32_t first) {
        if (static_cast<uint32_t>(part) >= static_cast<uint32_t>(P_) || (part >> kWindowShift) < first)
            return clean_ = false;
        const std::size_t w = static_cast<std::size_t>(part >> kWindowShift);
        link_[static_cast<std::size_t>(m)] = -1;
        if (head_[w] < 0) head_[w] = m;
        else link_[static_cast<std::size_t>(tail_[w])] = m;
        tail_[w] = m;
        return true;
    }

    const int32_t* const claims_;
    const int64_t* const offsets_;
    const int32_t P_;
    // Members wait in a queue per window, in the order they came (first by id: their claims lie in that order
    // in memory, so a window's claims are read as one forward stream more often than not; a stack read them
    // backwards, member by member, which the hardware prefetchers do not follow: the claims' loads stalled).
    std::vector<int32_t> head_;     // [windows] the first member waiting for the window, -1: none
    std::vector<int32_t> tail_;     // [windows] the last one (valid while head_ is not -1)
    std::vector<int32_t> link_;     // [M] the next member waiting for the same window, -1: none
    std::vector<int64_t> cursor_;   // [M] the member's next claim
    std::vector<int32_t> window_;   // [kWindow], or [P] when fewer (zero-filled when made: 64 KB for 100 partitions)
    bool clean_ = true;
};

}  // namespace

std::optional<AssignResult> assign_sticky_clean(const Problem& p, const Prepared& pr, bool cooperative,
                                                bool* claims_in_range) {
    const int32_t M = pr.num_members, P = pr.num_partitions;
    if (M == 0 || P == 0 || !pr.uniform || pr.has_racks || p.owned_partitions.empty() ||
        !server::subscribes_everything(pr))
        return std::nullopt;
    // Every partition is of a subscribed topic (subscribes_everything), so N = P and no topic needs a lookup.
    PreviousOwners prev;   // owned counts only: no array of previous owners is made
    prev.owned.resize(static_cast<std::size_t>(M));
    for (int32_t m = 0; m < M; ++m) prev.owned[m] = p.owned_offsets[m + 1] - p.owned_offsets[m];
    sticky::HandOut hand_out(prev.owned, sticky::quotas_by_owned(prev.owned, P));

    AssignResult result;
    // owner[] sized at once (resize's zeros: a memset) and written run by run at `written` with fill_run (runs.hpp:
    // the widest stores the CPU has; vector::insert's fill stored 16 bytes at a time, an eighth of the call).
    std::vector<int32_t>& owner = result.owner;
    reserve_advised(owner, static_cast<std::size_t>(P));
    owner.resize(static_cast<std::size_t>(P));
    int32_t* const own = owner.data();
    int64_t written = 0;   // owner[0, written) is placed
    std::vector<int64_t> loads(static_cast<std::size_t>(M), 0);
    int64_t moved = 0, claimed = 0;   // claimed: partitions the walk met with a claimant
    // Counted as the walk decides (PartitionTally::count_all): a partition leaving its previous owner is moved,
    // and under cooperative-sticky withheld (KIP-429: every claim is valid, so every transfer has a valid
    // previous owner who claims it), counted as free. (Tried: the walk writing over the window and the window
    // appended to owner[] in one block, as StretchWriter does: slower, 4.2 against 3.4 ms at 4M.)
    const auto write = [&](int64_t n, int32_t m, int32_t previous) {
        int32_t value = m;
        if (previous >= 0) {
            claimed += n;
            if (previous != m) {
                moved += n;
                if (cooperative) {
                    const int32_t first = static_cast<int32_t>(written);
                    for (int32_t k = 0; k < n; ++k) result.withheld.push_back(first + k);
                    value = kUnassigned;
                }
            }
        }
        if (value >= 0) loads[static_cast<std::size_t>(m)] += n;
        fill_run(own + written, static_cast<std::size_t>(n), value);
        written += n;
    };
    std::vector<sticky::ClaimRun> runs;
    const sticky::RunsRead read = sticky::claim_runs(p, pr, sticky::claim_runs_limit(P), runs);
    if (claims_in_range && (read == sticky::RunsRead::sorted || read == sticky::RunsRead::named_twice))
        *claims_in_range = true;
    switch (read) {
    case sticky::RunsRead::not_clean:
    case sticky::RunsRead::named_twice:
        return std::nullopt;
    case sticky::RunsRead::sorted: {
        // (no run overlaps another: the owned counts are what the runs hold, and someone is always below quota)
        int32_t at = 0;   // the partitions before `at` are placed
        for (const sticky::ClaimRun& r : runs) {
            if (r.begin > at && !hand_out.take(r.begin - at, kUnassigned, write)) return std::nullopt;
            if (!hand_out.take(r.length, r.member, write)) return std::nullopt;
            at = r.begin + r.length;
        }
        if (at < P && !hand_out.take(P - at, kUnassigned, write)) return std::nullopt;
        break;
    }
    case sticky::RunsRead::too_many: {
        ClaimWindows claimants(p, pr);
        for (int32_t w = 0; w < claimants.windows(); ++w) {
            const int32_t* const before = claimants.fill(w);
            if (!before) return std::nullopt;
            // (stopped: the counts of claims named twice, found for certain below)
            if (!hand_out.walk(before, std::min(kWindow, P - (w << kWindowShift)), write)) return std::nullopt;
        }
        break;
    }
    }
    if (claimed != static_cast<int64_t>(p.owned_partitions.size)) return std::nullopt;   // a partition named twice
    if (written != P) throw std::logic_error("assign_sticky_clean: the walk placed " + std::to_string(written) + " of " +
                                             std::to_string(P) + " partitions");
    PartitionTally tally(pr, prev);
    tally.count_all(std::move(loads), static_cast<int64_t>(result.withheld.size()), moved);
    result.metrics = compute_metrics(p, pr, result.owner, result.withheld, prev, tally);
    return result;
}

}  // namespace kafkagroup
