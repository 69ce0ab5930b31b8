// The sticky call that writes owner[] over the previous owners' array (sticky/stretch_writer.hpp) against
// the path that keeps them (assign_sticky + withhold_transfers + a separate metrics pass): equal owners,
// withheld partitions and metrics on groups of several stretches, with stale, contested, doubled and
// unsubscribed claims; and the tally counted in pieces against the tally counted whole.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

#include "kafkagroup/metrics.hpp"
#include "kafkagroup/ownership.hpp"
#include "kafkagroup/problem.hpp"
#include "kafkagroup/sticky/sticky.hpp"
#include "test_checks.hpp"
#include "test_views.hpp"

using namespace kafkagroup;
using kafkagroup_test::check_same_metrics;
using kafkagroup_test::problem_of;

namespace {

// Equal subscriptions (the uniform builder), several 32,768-partition stretches, topics ending inside them.
struct ClaimsGroup {
    std::vector<int32_t> partition_count, sub_topics;
    std::vector<int64_t> sub_offsets{0}, owned_offsets{0};
    std::vector<int32_t> owned_partitions, generation;

    Problem problem() const {
        return problem_of(partition_count, sub_offsets, sub_topics, owned_offsets, owned_partitions, generation);
    }
};

ClaimsGroup claims_group(std::mt19937& rng, bool messy) {
    ClaimsGroup g;
    const int topics = std::uniform_int_distribution<int>(1, 6)(rng);
    for (int t = 0; t < topics; ++t) g.partition_count.push_back(std::uniform_int_distribution<int>(0, 40000)(rng));
    std::vector<int32_t> subs;
    for (int t = 0; t < topics; ++t)
        if (t == 0 || std::bernoulli_distribution(0.8)(rng)) subs.push_back(t);   // some topics nobody takes
    const int members = std::uniform_int_distribution<int>(1, 60)(rng);
    std::vector<int32_t> base{0};
    for (int32_t c : g.partition_count) base.push_back(base.back() + c);
    // A previous assignment in runs (as sticky results come), some partitions left free.
    std::vector<std::vector<int32_t>> claims(static_cast<std::size_t>(members));
    for (int32_t part = 0; part < base.back();) {
        const int32_t run = std::uniform_int_distribution<int32_t>(1, 3000)(rng);
        const int32_t m = std::uniform_int_distribution<int32_t>(-1, members - 1)(rng);   // -1: nobody
        for (int32_t k = part; k < std::min(base.back(), part + run); ++k)
            if (m >= 0) claims[static_cast<std::size_t>(m)].push_back(k);
        part += run;
    }
    for (int m = 0; m < members; ++m) {
        g.sub_topics.insert(g.sub_topics.end(), subs.begin(), subs.end());
        g.sub_offsets.push_back(static_cast<int64_t>(g.sub_topics.size()));
        g.generation.push_back(std::uniform_int_distribution<int32_t>(messy ? 0 : 3, 3)(rng));
    }
    if (messy && base.back() > 0)   // claims on others' partitions (stale or contested) and doubled ones
        for (int k = 0; k < 200; ++k) {
            auto& list = claims[std::uniform_int_distribution<std::size_t>(0, claims.size() - 1)(rng)];
            list.push_back(std::uniform_int_distribution<int32_t>(0, base.back() - 1)(rng));
            if (!list.empty() && k % 3 == 0) list.push_back(list.front());
        }
    for (auto& list : claims) {
        g.owned_partitions.insert(g.owned_partitions.end(), list.begin(), list.end());
        g.owned_offsets.push_back(static_cast<int64_t>(g.owned_partitions.size()));
    }
    return g;
}

// Kafka's "partitions transferring ownership", restated from the raw claims: a partition whose target owner
// is not its valid previous owner while some other member lists it. Withheld in `target`; returned sorted.
std::vector<int32_t> transfers_by_rule(const ClaimsGroup& g, const PreviousOwners& prev, std::vector<int32_t>& target) {
    std::vector<std::vector<int32_t>> claimants(target.size());
    for (std::size_t m = 0; m + 1 < g.owned_offsets.size(); ++m)
        for (int64_t i = g.owned_offsets[m]; i < g.owned_offsets[m + 1]; ++i)
            claimants[static_cast<std::size_t>(g.owned_partitions[static_cast<std::size_t>(i)])].push_back(static_cast<int32_t>(m));
    std::vector<int32_t> withheld;
    for (std::size_t part = 0; part < target.size(); ++part) {
        const int32_t now = target[part], before = prev.none() ? kUnassigned : prev.owner[part];
        if (now < 0 || now == before) continue;
        const auto& c = claimants[part];
        if (std::any_of(c.begin(), c.end(), [now](int32_t m) { return m != now; })) {
            withheld.push_back(static_cast<int32_t>(part));
            target[part] = kUnassigned;
        }
    }
    return withheld;
}

}  // namespace

TEST_CASE("sticky written over the previous owners equals the path that keeps them") {
    std::mt19937 rng(26);
    int64_t withheld = 0, moved = 0, groups_owned = 0;   // what the rounds exercised
    for (int round = 0; round < 24; ++round) {
        const ClaimsGroup g = claims_group(rng, /*messy=*/round % 2 == 1);
        const Problem p = g.problem();
        const Prepared pr = prepare(p);
        for (const bool cooperative : {false, true}) {
            CAPTURE(round);
            CAPTURE(cooperative);
            // The path that keeps the previous owners, counted by compute_metrics on its own.
            const PreviousOwners kept = previous_owners(p, pr);
            AssignResult expected;
            expected.owner = assign_sticky(p, pr, kept);
            if (cooperative) expected.withheld = transfers_by_rule(g, kept, expected.owner);
            expected.metrics = compute_metrics(p, pr, expected.owner, expected.withheld, kept);

            PreviousOwners prev = previous_owners(p, pr);
            const int32_t* const storage = prev.owner.data();
            const bool owned = !prev.none();
            PartitionTally tally(pr, prev);
            AssignResult got = assign_sticky_call(p, pr, prev, tally, cooperative);
            got.metrics = compute_metrics(p, pr, got.owner, got.withheld, prev, tally);
            CHECK(got.owner == expected.owner);
            CHECK(got.withheld == expected.withheld);
            check_same_metrics(got.metrics, expected.metrics);
            withheld += got.metrics.withheld;
            moved += got.metrics.moved;
            groups_owned += owned;
            if (owned) {   // one P-sized array: the result is the previous owners' own storage
                CHECK(prev.none());
                CHECK(got.owner.data() == storage);
                CHECK(tally.counted() == pr.num_partitions);
            }
        }
    }
    CHECK(withheld > 0);
    CHECK(moved > 0);
    CHECK(groups_owned > 20);
}

TEST_CASE("the tally counted in stretches of any length equals the tally counted by topics") {
    std::mt19937 rng(7);
    for (int round = 0; round < 12; ++round) {
        const ClaimsGroup g = claims_group(rng, true);
        const Problem p = g.problem();
        const Prepared pr = prepare(p);
        const PreviousOwners prev = previous_owners(p, pr);
        std::vector<int32_t> now = prev.none() ? std::vector<int32_t>(static_cast<std::size_t>(pr.num_partitions), -1)
                                               : prev.owner;
        const int32_t members = pr.num_members;
        for (auto& m : now)   // some kept, some moved, some freed
            if (std::bernoulli_distribution(0.01)(rng)) m = std::uniform_int_distribution<int32_t>(-1, members - 1)(rng);
        PartitionTally whole(pr, prev), pieces(pr, prev);
        whole.count_until(pr.num_topics, now.data());
        while (pieces.counted() < pr.num_partitions) {
            const int32_t from = pieces.counted();
            const int32_t to = std::min(pr.num_partitions, from + std::uniform_int_distribution<int32_t>(1, 50000)(rng));
            pieces.count_stretch(to, now.data() + from, prev.none() ? nullptr : prev.owner.data() + from);
        }
        CHECK(pieces.loads() == whole.loads());
        CHECK(pieces.unassigned() == whole.unassigned());
        CHECK(pieces.moved() == whole.moved());
    }
}
