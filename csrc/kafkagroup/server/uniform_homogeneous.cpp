// Kafka 4's UniformHomogeneousAssignmentBuilder, with the fewest moves.
//
// Kafka: with P partitions over M members, quotas are floor(P/M) and one more for the first P mod M
// members *in HashMap iteration order*; each member keeps its previous partitions up to its quota, the
// rest are freed and handed to the members below quota. Which members get the larger quota is an accident
// of the member ids' hashes, so a member that held floor(P/M)+1 partitions may be cut to floor(P/M) while
// a member that held floor(P/M) is given one more: an avoidable move.
//
// Here the larger quotas go first to members that previously held more than floor(P/M) (each such grant
// saves exactly one move; no other choice saves any), then to the others in member order. Every member
// keeps min(held, quota) of its previous partitions, so moves = sum(max(0, held - quota)): the minimum
// over all assignments whose loads differ by at most one (all of which have these quota sizes). The
// freed and new partitions go to members below quota in member order, each a run of ascending ids.
// O(P + M) (the claims of a member over quota are sorted when not listed ascending).
//
// The usual incremental call (a member joined or left; every previous claim recorded, the subscription
// listed in ascending topic order) does not visit the partitions one by one: held counts are the members'
// claim counts, the previous owners are copied as they are, only members over quota give up their highest
// partitions, and the free partitions are found by a scan that skips blocks with none. At 10,000 members x
// 500,000 partitions that is a copy and a scan instead of two passes of per-partition branches.
#include <algorithm>
#include <optional>
#include <utility>

#include "kafkagroup/metrics.hpp"
#include "kafkagroup/server/clean_claims.hpp"
#include "kafkagroup/server/server_assignors.hpp"

namespace kafkagroup {
namespace server {
namespace {

using Span = std::pair<int32_t, int32_t>;   // [first, last) partition ids

// The subscribed partitions in the order Kafka's builder visits them (the row's topics in row order,
// ascending ids within each), adjacent topics merged: one span when every topic is subscribed in order.
std::vector<Span> row_spans(const Problem& p, const Prepared& pr) {
    std::vector<Span> spans;
    for (int64_t i = p.sub_offsets[0]; i < p.sub_offsets[1]; ++i) {
        const int32_t t = p.sub_topics[i], lo = pr.topic_base[t], hi = pr.topic_base[t + 1];
        if (lo == hi) continue;
        if (!spans.empty() && spans.back().second == lo) spans.back().second = hi;
        else spans.emplace_back(lo, hi);
    }
    return spans;
}

bool ascending(const std::vector<Span>& spans) {
    for (std::size_t i = 1; i < spans.size(); ++i)
        if (spans[i].first < spans[i - 1].second) return false;
    return true;
}

// Appends the partitions of [lo, hi) without an owner, ascending. Blocks of 16 with an owner each are
// passed over with one test (the sign bit of their OR).
void collect_free(const int32_t* owner, int32_t lo, int32_t hi, std::vector<int32_t>& out) {
    constexpr int32_t kBlock = 16;
    int32_t part = lo;
    for (; hi - part >= kBlock; part += kBlock) {
        int32_t any = 0;
        for (int32_t k = 0; k < kBlock; ++k) any |= owner[part + k];
        if (any >= 0) continue;
        for (int32_t k = 0; k < kBlock; ++k)
            if (owner[part + k] < 0) out.push_back(part + k);
    }
    for (; part < hi; ++part)
        if (owner[part] < 0) out.push_back(part);
}

// Kafka's quota sizes, the larger ones first to the members that held more than base (see above).
std::vector<int64_t> quotas(const std::vector<int64_t>& held, int64_t total, int32_t M) {
    const int64_t base_quota = total / M;
    int64_t extra = total % M;
    std::vector<int64_t> quota(static_cast<std::size_t>(M), base_quota);
    for (int32_t m = 0; m < M && extra > 0; ++m)
        if (held[m] > base_quota) ++quota[m], --extra;
    for (int32_t m = 0; m < M && extra > 0; ++m)
        if (quota[m] == base_quota) ++quota[m], --extra;
    return quota;
}

// The builder from owner[] holding the previous owners, when every claim was recorded and the spans are
// ascending (visiting order is ascending ids): a member over quota keeps its quota lowest claims and frees
// the others; the free partitions, ascending, go to the members below quota in member order. used[m] is
// held[m] on entry and what m keeps on return. When the claims cover every subscribed partition, the free
// ones are exactly those given up (sorted, not searched for); otherwise a block scan finds them.
void trim_and_hand_out(const Problem& p, const std::vector<Span>& spans, int64_t total,
                       const std::vector<int64_t>& quota, std::vector<int64_t>& used, std::vector<int32_t>& owner) {
    const int32_t M = static_cast<int32_t>(quota.size());
    if (p.owned_partitions.size == 0) {
        // Nothing held (a first assignment): every subscribed partition is free, and the members take
        // their quotas one after another along the spans, each a range written with fill.
        std::size_t span = 0;
        int32_t at = spans.empty() ? 0 : spans[0].first;
        for (int32_t m = 0; m < M; ++m)
            for (int64_t want = quota[m]; want > 0 && span < spans.size();) {
                const int32_t take = static_cast<int32_t>(std::min<int64_t>(want, spans[span].second - at));
                std::fill(owner.begin() + at, owner.begin() + at + take, m);
                at += take;
                want -= take;
                if (at == spans[span].second && ++span < spans.size()) at = spans[span].first;
            }
        return;
    }
    std::vector<int32_t> free_parts, claims;
    for (int32_t m = 0; m < M; ++m) {
        if (used[m] <= quota[m]) continue;
        claims.assign(p.owned_partitions.data + p.owned_offsets[m], p.owned_partitions.data + p.owned_offsets[m + 1]);
        if (!std::is_sorted(claims.begin(), claims.end())) std::sort(claims.begin(), claims.end());
        for (std::size_t k = static_cast<std::size_t>(quota[m]); k < claims.size(); ++k) {
            owner[claims[k]] = kUnassigned;
            free_parts.push_back(claims[k]);
        }
        used[m] = quota[m];
    }
    if (static_cast<int64_t>(p.owned_partitions.size) == total) {
        std::sort(free_parts.begin(), free_parts.end());
    } else {
        free_parts.clear();
        for (const Span& s : spans) collect_free(owner.data(), s.first, s.second, free_parts);
    }
    std::size_t next = 0;
    for (int32_t m = 0; m < M && next < free_parts.size(); ++m)
        for (int64_t k = used[m]; k < quota[m] && next < free_parts.size(); ++k) owner[free_parts[next++]] = m;
}

}  // namespace

std::vector<int32_t> uniform_homogeneous(const Problem& p, const Prepared& pr, const std::vector<int32_t>& prev_owner) {
    const int32_t M = pr.num_members;
    std::vector<int32_t> owner(static_cast<std::size_t>(pr.num_partitions), kUnassigned);
    // Every member's list is member 0's; topics are unique within it (validated).
    const std::vector<Span> spans = row_spans(p, pr);
    int64_t total = 0;
    for (const Span& s : spans) total += s.second - s.first;
    if (total == 0) return owner;

    // Every claim recorded: each is a distinct partition of a subscribed topic owned by its member, so a
    // member holds exactly its claims.
    const bool all_recorded =
        pr.has_owned && recorded_claims(prev_owner) == static_cast<int64_t>(p.owned_partitions.size);
    std::vector<int64_t> held(static_cast<std::size_t>(M), 0);
    if (all_recorded) {
        for (int32_t m = 0; m < M; ++m) held[m] = p.owned_offsets[m + 1] - p.owned_offsets[m];
    } else if (pr.has_owned) {
        for (const Span& s : spans)
            for (int32_t part = s.first; part < s.second; ++part)
                if (prev_owner[part] >= 0) ++held[prev_owner[part]];
    }
    const std::vector<int64_t> quota = quotas(held, total, M);

    if (all_recorded && ascending(spans)) {
        // Previous owners lie on subscribed topics only (ownership.hpp's rule 1): owner[] is prev_owner.
        owner = prev_owner;
        trim_and_hand_out(p, spans, total, quota, held, owner);
        return owner;
    }
    // Keep up to quota (a member over quota keeps its lowest ids, in visiting order), free the rest.
    std::vector<int32_t> free_parts;
    std::vector<int64_t>& used = held;   // reused: held[] becomes what each member keeps
    std::fill(used.begin(), used.end(), 0);
    for (const Span& s : spans)
        for (int32_t part = s.first; part < s.second; ++part) {
            const int32_t m = prev_owner[part];
            if (m >= 0 && used[m] < quota[m]) {
                owner[part] = m;
                ++used[m];
            } else {
                free_parts.push_back(part);
            }
        }
    std::size_t next = 0;
    for (int32_t m = 0; m < M && next < free_parts.size(); ++m)
        for (int64_t k = used[m]; k < quota[m] && next < free_parts.size(); ++k) owner[free_parts[next++]] = m;
    return owner;
}

std::optional<AssignResult> homogeneous_direct(const Problem& p, const Prepared& pr) {
    const int32_t M = pr.num_members;
    if (!pr.uniform || M == 0) return std::nullopt;
    const std::vector<Span> spans = row_spans(p, pr);
    int64_t total = 0;
    for (const Span& s : spans) total += s.second - s.first;
    if (total == 0 || !ascending(spans)) return std::nullopt;

    // The claims walk writes the previous owners straight into the result.
    AssignResult result;
    std::vector<int32_t>& owner = result.owner;
    owner.assign(static_cast<std::size_t>(pr.num_partitions), kUnassigned);
    if (!write_clean_claims(p, pr, owner)) return std::nullopt;

    std::vector<int64_t> held(static_cast<std::size_t>(M), 0);
    if (pr.has_owned)
        for (int32_t m = 0; m < M; ++m) held[m] = p.owned_offsets[m + 1] - p.owned_offsets[m];
    const std::vector<int64_t> owned = held;
    const std::vector<int64_t> quota = quotas(held, total, M);
    trim_and_hand_out(p, spans, total, quota, held, owner);

    // Every member ends at its quota (the quotas sum to the subscribed partitions, all handed out) and
    // keeps held[m] = min(claims, quota) of its claims: the metrics without a pass over owner[].
    Metrics& metrics = result.metrics;
    metrics.assigned = total;
    const int64_t claims = pr.has_owned ? static_cast<int64_t>(p.owned_partitions.size) : 0;
    int64_t kept = 0;
    for (int64_t k : held) kept += k;
    metrics.moved = claims - kept;
    complete_metrics(p, pr, quota, owned, claims, true, [] { return TopicHolders{}; }, metrics);
    return result;
}

}  // namespace server
}  // namespace kafkagroup
