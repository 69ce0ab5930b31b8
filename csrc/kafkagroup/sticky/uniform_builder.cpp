// Sticky assignment when every member subscribes to the same topics (Kafka's ConstrainedAssignmentBuilder
// problem, solved with fixed quotas instead of member queues).
//
// N partitions, M members: every member ends with q = N / M or q + 1 partitions, r = N % M of them with
// q + 1. The q + 1 quotas go to the members owning the most (ties: lower member id), so the kept count,
// sum(min(owned_m, quota_m)), is the largest any balanced assignment can keep: `moved` equals the exact
// lower bound. Then owned partitions are kept up to the quota, and the rest is handed out in partition
// order to members below quota (rack-matching members first when KIP-881 applies, then the owner whose
// racks do not match, see Input::weak_owner).
// Cost: O(N + M log M) time, O(P + M) memory; no per-partition heap operations are needed because the
// quotas are known in advance.
#include <algorithm>
#include <functional>
#include <numeric>
#include <stdexcept>
#include <tuple>

#include "kafkagroup/huge_pages.hpp"
#include "kafkagroup/rack_ids.hpp"
#include "kafkagroup/runs.hpp"
#include "kafkagroup/stable_order.hpp"
#include "kafkagroup/sticky/hand_out.hpp"
#include "kafkagroup/sticky/stretch_writer.hpp"
#include "kafkagroup/sticky/sticky_input.hpp"

namespace kafkagroup {
namespace sticky {
namespace {

// Rack-aware fill (KIP-881): partitions with the fewest rack-matching members go first, each to the
// lowest-id member below quota in one of its replica racks. Partitions without such a member stay free.
void fill_rack_matching(const Input& in, const std::vector<int32_t>& free_parts, const std::vector<int64_t>& quota,
                        std::vector<int64_t>& load, std::vector<int32_t>& owner) {
    const Problem& p = in.problem;
    const int32_t max_rack = max_member_rack(p);
    // Members by rack (CSR, ascending id) and a cursor per rack past members already at quota.
    std::vector<int64_t> rack_off(static_cast<std::size_t>(max_rack) + 2, 0);
    for (int32_t m = 0; m < in.M; ++m) ++rack_off[p.member_rack[m] + 1];
    for (std::size_t r = 1; r < rack_off.size(); ++r) rack_off[r] += rack_off[r - 1];
    std::vector<int32_t> rack_members(static_cast<std::size_t>(in.M));
    {
        std::vector<int64_t> fill(rack_off.begin(), rack_off.end() - 1);
        for (int32_t m = 0; m < in.M; ++m) rack_members[fill[p.member_rack[m]]++] = m;
    }
    std::vector<int64_t> cursor(rack_off.begin(), rack_off.end() - 1);
    auto rack_of_interest = [&](int32_t rack) { return rack > kNoRack && rack <= max_rack; };
    // Kafka sorts unassigned partitions by the number of members in their replica racks (ascending).
    std::vector<int64_t> weight(free_parts.size(), 0);
    for (std::size_t i = 0; i < free_parts.size(); ++i)
        for (int64_t k = p.replica_offsets[free_parts[i]]; k < p.replica_offsets[free_parts[i] + 1]; ++k)
            if (rack_of_interest(p.replica_racks[k]))
                weight[i] += rack_off[p.replica_racks[k] + 1] - rack_off[p.replica_racks[k]];
    // Stable order by weight (weights count members, so they span a small range and a counting sort
    // serves unless replica lists are long).
    for (int32_t i : stable_order_by_key(weight)) {
        const int32_t part = free_parts[i];
        for (int64_t k = p.replica_offsets[part]; k < p.replica_offsets[part + 1]; ++k) {
            const int32_t rack = p.replica_racks[k];
            if (!rack_of_interest(rack)) continue;
            int64_t& c = cursor[rack];
            while (c < rack_off[rack + 1] && load[rack_members[c]] >= quota[rack_members[c]]) ++c;
            if (c == rack_off[rack + 1]) continue;
            const int32_t m = rack_members[c];
            owner[part] = m;
            ++load[m];
            break;
        }
    }
}

// Appends n copies of v; a single entry (runs of one: interleaved ownership) without insert's call. (Tried: owner[]
// sized first and written with fill_run, runs.hpp, as clean_claims.cpp does: resize's 40 KB zero fill at 10k
// partitions cost more than the wider stores saved, 3.04-3.42 against 2.96-2.99 us of engine time, fresh, under
// chrt; the clean-claims walk, with about twice the segments, gains 0.5 us from it.)
void append(std::vector<int32_t>& v, int64_t n, int32_t value) {
    if (n == 1) v.push_back(value);
    else v.insert(v.end(), static_cast<std::size_t>(n), value);
}

}  // namespace

std::vector<int64_t> quotas_by_owned(const std::vector<int64_t>& owned, int64_t N) {
    const int64_t M = static_cast<int64_t>(owned.size()), q = N / M, r = N % M;
    std::vector<int64_t> quota(owned.size(), q);
    if (r == 0) return quota;
    // The r members owning the most are those above the r-th largest count v, then the lowest ids at v.
    std::vector<int64_t> counts(owned);
    std::nth_element(counts.begin(), counts.begin() + (r - 1), counts.end(), std::greater<int64_t>());
    const int64_t v = counts[static_cast<std::size_t>(r - 1)];
    int64_t at_v = r;   // q + 1 quotas left for members owning exactly v, once those above v took theirs
    for (int64_t m = 0; m < M; ++m) at_v -= owned[m] > v;
    for (int64_t m = 0; m < M; ++m)
        if (owned[m] > v || (owned[m] == v && at_v-- > 0)) quota[m] = q + 1;
    return quota;
}

std::vector<int32_t> build_uniform(const Input& in, PartitionTally* tally, std::vector<int32_t>* over,
                                   Transfers* transfers) {
    // Without racks owner[] is written once, in partition order, run by run (see the two passes below that do
    // so): appended to a fresh array when nobody owned anything, else over the previous owners (`over`); the
    // rack-aware paths start from a -1 fill.
    std::vector<int32_t> owner;
    const int32_t M = in.M;
    int64_t N = 0;
    for (int32_t t = 0; t < in.T; ++t)
        if (in.subscribed(t)) N += in.topic_end(t) - in.topic_begin(t);
    if (M == 0 || N == 0) {
        if (!over) return std::vector<int32_t>(static_cast<std::size_t>(in.P), kUnassigned);
        StretchWriter out(over->data(), in.P, tally, transfers);   // counted and checked for transfers as below
        out.append(in.P, kUnassigned);
        out.finish();
        return std::move(*over);
    }
    const int64_t q = N / M, r = N % M;

    // A valid sticky owner subscribes to the partition's topic, so every owned partition is in scope.
    // owned[m]: partitions m keeps if its quota allows; weak[m]: those it owns with mismatched racks.
    std::vector<int64_t> owned(static_cast<std::size_t>(M), 0), weak(static_cast<std::size_t>(M), 0);
    const bool any_owned = in.any_owned;
    if (any_owned && in.owned_count) {
        owned.assign(in.owned_count, in.owned_count + M);   // counted by previous_owners()
    } else if (any_owned) {
        // Rack-aware: sticky_owner is filtered by racks, counted here by runs of one owner (runs.hpp: no
        // per-partition counter increments).
        const int32_t* const sticky_owner = in.sticky_owner;
        for (int32_t part = 0; part < in.P;) {
            const int32_t o = sticky_owner[part];
            const int32_t end = run_end(sticky_owner, part, in.P);
            if (end - part == 1) {  // short runs: a block partition by partition
                for (const int32_t stop = std::min(in.P, part + kShortRunBlock); part < stop; ++part)
                    if (sticky_owner[part] >= 0) ++owned[sticky_owner[part]];
                continue;
            }
            if (o >= 0) owned[o] += end - part;
            part = end;
        }
        if (in.weak_owner)
            for (int32_t part = 0; part < in.P; ++part)
                if (in.weak_owner[part] >= 0) ++weak[in.weak_owner[part]];
    }
    std::vector<int64_t> quota(static_cast<std::size_t>(M), q);
    if (r > 0 && !in.weak_owner) {
        quota = quotas_by_owned(owned, N);
    } else if (r > 0) {
        // The q + 1 quotas go first to members that keep one more owned partition with it (owned > q:
        // any r of those give the most kept), then to members that keep one more weakly owned partition
        // (owned + weak > q: a result fed back as owned gets its own loads back), then by owned, id.
        auto key = [&](int32_t m) { return std::make_tuple(owned[m] > q, owned[m] + weak[m] > q, owned[m] + weak[m], owned[m]); };
        std::vector<int32_t> by_owned(static_cast<std::size_t>(M));
        std::iota(by_owned.begin(), by_owned.end(), 0);
        std::partial_sort(by_owned.begin(), by_owned.begin() + r, by_owned.end(), [&](int32_t a, int32_t b) {
            const auto ka = key(a), kb = key(b);
            return ka != kb ? ka > kb : a < b;
        });
        for (int64_t i = 0; i < r; ++i) quota[by_owned[i]] = q + 1;
    }

    std::vector<int64_t> load(static_cast<std::size_t>(M), 0);
    if (any_owned && !in.rack_aware) {
        // Keep and round out in one pass. Each member keeps the first min(owned, quota) of its partitions in
        // partition order, so its load after keeping is known before the pass; a partition not kept goes to
        // the lowest id below quota counting those kept loads, exactly as the two passes below hand it out
        // (free partitions in partition order, the member pointer only moving up).
        //
        // The pass (HandOut, hand_out.hpp, which clean_claims.cpp shares) goes by runs of one sticky owner (or
        // of none) within a topic, and writes owner[] once, in partition order, over the previous owners' array
        // (stretch_writer.hpp: no second P-sized array, no -1 fill, and the tally and the cooperative transfers
        // see each stretch in the cache), with no per-partition counter increments (runs.hpp). A run's first
        // min(length, room) partitions stay with its owner, the rest go out in blocks to the members below
        // quota, as one partition at a time would. (With clean claims and every topic subscribed the engine
        // takes clean_claims.cpp's path instead, which reads the claims once and makes no previous owners' array.)
        std::vector<int32_t> copy;   // when the caller keeps its previous owners: a copy to write over
        if (!over) {
            copy.assign(in.sticky_owner, in.sticky_owner + in.P);
            over = &copy;
        }
        // Without cooperative transfers the metrics' per-partition count is known here, segment by segment: the
        // loads are the walk's at the end, every subscribed partition is placed, and a partition moved when it
        // goes to another member than its valid previous owner. The tally then reads no stretch back (a pass over
        // both arrays: a fifth of a 10k-partition call after churn). Transfers change owner[] after it is written
        // (a withheld partition counts as free): counted by stretch.
        const bool count_here = tally && !transfers;
        int64_t moved = 0;
        StretchWriter out(over->data(), in.P, count_here ? nullptr : tally, transfers);
        HandOut hand_out(owned, quota);
        const auto write = [&out, &moved](int64_t n, int32_t m, int32_t before) {
            if (n == 1) out.push(m);
            else out.append(n, m);
            if (before >= 0 && before != m) moved += n;
        };
        for (int32_t t = 0; t < in.T; ++t) {
            const int32_t begin = in.topic_begin(t), end = in.topic_end(t);
            if (!in.subscribed(t)) out.append(end - begin, kUnassigned);
            else if (!hand_out.walk(in.sticky_owner + begin, end - begin, write))
                throw std::logic_error("build_uniform: no member below quota (owned counts above the previous owners')");
        }
        out.finish();
        if (count_here) tally->count_known(in.P, hand_out.loads().data(), /*unassigned=*/0, moved);
        return std::move(*over);
    }
    if (in.rack_aware) owner = advised_vector(static_cast<std::size_t>(in.P), kUnassigned);
    if (any_owned) {
        const int32_t* const sticky_owner = in.sticky_owner;
        int32_t* const own = owner.data();
        int64_t* const load_of = load.data();
        const int64_t* const quota_of = quota.data();
        for (int32_t part = 0; part < in.P; ++part) {
            const int32_t o = sticky_owner[part];
            if (o >= 0 && load_of[o] < quota_of[o]) {
                own[part] = o;
                ++load_of[o];
            }
        }
    }

    if (in.rack_aware) {
        std::vector<int32_t> free_parts;
        for (int32_t t = 0; t < in.T; ++t)
            if (in.subscribed(t))
                for (int32_t part = in.topic_begin(t); part < in.topic_end(t); ++part)
                    if (owner[part] == kUnassigned) free_parts.push_back(part);
        fill_rack_matching(in, free_parts, quota, load, owner);
        // A partition no rack-matching member could take stays with its weak owner while its quota allows.
        for (int32_t part : free_parts) {
            const int32_t o = in.weak(part);
            if (owner[part] == kUnassigned && o >= 0 && load[o] < quota[o]) owner[part] = o, ++load[o];
        }
    }
    // Round out: members below quota, in id order, take the free partitions in partition order (one
    // pass over the subscribed topics; no list of free partitions).
    int32_t m = 0;
    if (!any_owned && !in.rack_aware) {
        // Nothing kept or placed yet: every partition of a subscribed topic is free, so each member's run
        // is a plain fill (the same runs as the general loop below, without testing each partition),
        // appended in partition order: owner[] is written once, with no -1 fill first.
        reserve_advised(owner, static_cast<std::size_t>(in.P));
        for (int32_t t = 0; t < in.T; ++t) {
            if (!in.subscribed(t)) {
                append(owner, in.topic_end(t) - in.topic_begin(t), kUnassigned);
                continue;
            }
            for (int32_t part = in.topic_begin(t); part < in.topic_end(t);) {
                while (load[m] >= quota[m]) ++m;
                const int64_t n = std::min<int64_t>(quota[m] - load[m], in.topic_end(t) - part);
                append(owner, n, m);
                load[m] += n;
                part += static_cast<int32_t>(n);
            }
        }
        // The loads are the metrics' per-partition count (every subscribed partition placed, nothing owned
        // before, so nothing moved): no pass over owner[] to count them again (a third of a 10k call).
        if (tally) tally->count_known(in.P, load.data(), /*unassigned=*/0, /*moved=*/0);
        return owner;
    }
    for (int32_t t = 0; t < in.T; ++t) {
        if (!in.subscribed(t)) continue;
        for (int32_t part = in.topic_begin(t); part < in.topic_end(t); ++part) {
            if (owner[part] != kUnassigned) continue;
            while (load[m] >= quota[m]) ++m;  // quotas sum to N, so a member below quota exists
            // Hand m a run of consecutive free partitions up to its quota.
            int32_t end = part;
            const int32_t limit = in.topic_end(t);
            int64_t room = quota[m] - load[m];
            while (end < limit && room > 0 && owner[end] == kUnassigned) owner[end++] = m, --room;
            load[m] = quota[m] - room;
            part = end - 1;
        }
    }
    return owner;
}

}  // namespace sticky
}  // namespace kafkagroup
