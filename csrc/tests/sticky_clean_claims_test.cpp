// The sticky call read straight from clean claims (sticky/clean_claims.cpp) against the general path
// (previous_owners, assign_sticky_call, compute_metrics): equal owners, withheld partitions and metrics on
// groups of several windows whose members' claims interleave, and groups whose claims it walks as runs
// (claim_runs.hpp); and the claims it must refuse (doubled, out of order where it reads windows, out of range, on a
// topic nobody subscribes to, racks), where the engine's answer is the general path's.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kafkagroup/claim_runs.hpp"
#include "kafkagroup/engine.hpp"
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

// Every member subscribes to every topic; partitions handed out in runs of random length to random members
// (some to nobody), so a member's claims are ascending runs spread over the whole range, interleaved with
// everyone else's, over several 16,384-partition windows.
struct Group {
    std::vector<int32_t> partition_count, sub_topics;
    std::vector<int64_t> sub_offsets{0}, owned_offsets{0};
    std::vector<int32_t> owned_partitions, generation;

    Problem problem() const {
        return problem_of(partition_count, sub_offsets, sub_topics, owned_offsets, owned_partitions, generation);
    }
};

Group clean_group(std::mt19937& rng, bool interleaved) {
    Group g;
    const int topics = std::uniform_int_distribution<int>(1, 8)(rng);
    for (int t = 0; t < topics; ++t)
        g.partition_count.push_back(t == 1 ? 0 : std::uniform_int_distribution<int>(1, 30000)(rng));  // one empty topic
    const int members = std::uniform_int_distribution<int>(1, 300)(rng);
    int32_t P = 0;
    for (int32_t c : g.partition_count) P += c;
    // 1: interleaved partition by partition. Up to 12 (runs of 6.5 on average, some to nobody): too many runs to
    // walk as runs (clean_claims.cpp's one per 16 partitions), read a window at a time; longer: walked as runs.
    const int32_t longest = std::uniform_int_distribution<int32_t>(1, interleaved ? 12 : 2000)(rng);
    std::vector<std::vector<int32_t>> claims(static_cast<std::size_t>(members));
    for (int32_t part = 0; part < P;) {
        const int32_t run = std::uniform_int_distribution<int32_t>(1, longest)(rng);
        const int32_t m = std::uniform_int_distribution<int32_t>(-1, members - 1)(rng);   // -1: nobody
        for (int32_t k = part; k < std::min(P, part + run); ++k)
            if (m >= 0) claims[static_cast<std::size_t>(m)].push_back(k);
        part += run;
    }
    for (int m = 0; m < members; ++m) {
        for (int t = 0; t < topics; ++t) g.sub_topics.push_back(t);
        g.sub_offsets.push_back(static_cast<int64_t>(g.sub_topics.size()));
        g.generation.push_back(std::uniform_int_distribution<int32_t>(-1, 3)(rng));   // no part in clean claims
        g.owned_partitions.insert(g.owned_partitions.end(), claims[m].begin(), claims[m].end());
        g.owned_offsets.push_back(static_cast<int64_t>(g.owned_partitions.size()));
    }
    return g;
}

AssignResult general_path(const Problem& p, bool cooperative) {
    const Prepared pr = prepare(p);
    PreviousOwners prev = previous_owners(p, pr);
    PartitionTally tally(pr, prev);
    AssignResult r = assign_sticky_call(p, pr, prev, tally, cooperative);
    r.metrics = compute_metrics(p, pr, r.owner, r.withheld, prev, tally);
    return r;
}

void check_same(const AssignResult& got, const AssignResult& want) {
    CHECK(got.owner == want.owner);
    CHECK(got.withheld == want.withheld);
    check_same_metrics(got.metrics, want.metrics);
}

const char* strategy(bool cooperative) { return cooperative ? "cooperative-sticky" : "sticky"; }

}  // namespace

TEST_CASE("sticky read straight from clean claims equals the general path") {
    std::mt19937 rng(2611);
    int64_t withheld = 0, moved = 0, windows = 0, walked_as_runs = 0;   // what the rounds exercised
    for (int round = 0; round < 30; ++round) {
        const Group g = clean_group(rng, /*interleaved=*/round % 2 == 1);
        const Problem p = g.problem();
        const Prepared unchecked = prepare(p, /*check_claims_now=*/false);
        CHECK_FALSE(unchecked.claims_checked);
        std::vector<ClaimRun> runs;
        // (clean_claims.cpp's limit: one run per kMinMeanRun = 16 partitions, or kFewRuns = 64 runs)
        const std::size_t limit = std::max<std::size_t>(static_cast<std::size_t>(unchecked.num_partitions / 16), 64);
        const ClaimRunsVerdict verdict = claim_runs(p, unchecked, limit, runs);
        REQUIRE(verdict != ClaimRunsVerdict::kNotClean);
        if (verdict == ClaimRunsVerdict::kRuns) ++walked_as_runs;
        else windows += unchecked.num_partitions / 16384 + 1;
        for (const bool cooperative : {false, true}) {
            CAPTURE(round);
            CAPTURE(cooperative);
            const AssignResult want = general_path(p, cooperative);
            const std::optional<AssignResult> got = assign_sticky_clean(p, unchecked, cooperative);
            REQUIRE(got.has_value());   // the path is taken on clean claims
            check_same(*got, want);
            check_same(assign(strategy(cooperative), p), want);
            withheld += got->metrics.withheld;
            moved += got->metrics.moved;
        }
    }
    CHECK(withheld > 0);
    CHECK(moved > 0);
    CHECK(walked_as_runs >= 10);
    CHECK(windows > 30);
}

// Three members over 40,000 partitions (three windows); `lists` are their claims.
Group small_group(const std::vector<std::vector<int32_t>>& lists, std::vector<int32_t> counts = {40000}) {
    Group g;
    g.partition_count = std::move(counts);
    for (const auto& list : lists) {
        g.sub_topics.push_back(0);
        g.sub_offsets.push_back(static_cast<int64_t>(g.sub_topics.size()));
        g.generation.push_back(2);
        g.owned_partitions.insert(g.owned_partitions.end(), list.begin(), list.end());
        g.owned_offsets.push_back(static_cast<int64_t>(g.owned_partitions.size()));
    }
    return g;
}

std::vector<int32_t> span(int32_t from, int32_t to) {
    std::vector<int32_t> v;
    for (int32_t k = from; k < to; ++k) v.push_back(k);
    return v;
}

std::vector<int32_t> every_other(int32_t from, int32_t to) {
    std::vector<int32_t> v;
    for (int32_t k = from; k < to; k += 2) v.push_back(k);
    return v;
}

std::vector<int32_t> operator+(std::vector<int32_t> a, const std::vector<int32_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

TEST_CASE("claims that are not clean are left to the general path") {
    struct Case {
        const char* what;
        std::vector<std::vector<int32_t>> lists;
        bool clean;
        bool error;   // out of range: the general path names the claim
    };
    const std::vector<int32_t> m0 = span(0, 100) + span(20000, 20100), m2 = span(39000, 39990);
    const Case cases[] = {
        {"clean (the baseline)", {m0, span(100, 200) + span(20100, 20200), m2}, true, false},
        {"a partition named twice by two members", {m0, span(100, 200) + span(20050, 20200), m2}, false, false},
        {"a partition named twice by one member", {span(0, 51) + span(50, 100), span(100, 200), m2}, false, false},
        // (few runs: walked as runs, claim_runs.hpp, where a member's order does not matter)
        {"a member's claims out of order, in runs", {span(20000, 20100) + span(0, 100), span(100, 200), m2}, true, false},
        // (one run per other partition: read a window at a time, which takes a member's claims in order only)
        {"a member's claims out of order, interleaved (windows)", {every_other(20000, 30000) + span(0, 100), span(100, 200), m2},
         false, false},
        {"a claim past the last partition", {m0, span(100, 200) + span(39990, 40001), m2}, false, true},
        {"a negative claim", {m0, std::vector<int32_t>{-1} + span(100, 200), m2}, false, true},
    };
    for (const Case& c : cases) {
        CAPTURE(std::string(c.what));
        const Group g = small_group(c.lists);
        const Problem p = g.problem();
        const Prepared unchecked = prepare(p, false);
        for (const bool cooperative : {false, true}) {
            CHECK(assign_sticky_clean(p, unchecked, cooperative).has_value() == c.clean);
            if (c.error) {
                CHECK_THROWS_WITH_AS(assign(strategy(cooperative), p), doctest::Contains("member 1: owned partition id"),
                                     std::invalid_argument);
                CHECK_THROWS_AS(check_claims(p, unchecked), std::invalid_argument);
            } else {
                check_same(assign(strategy(cooperative), p), general_path(p, cooperative));
            }
        }
    }
    // A claim on a topic nobody subscribes to (topic 1: partitions 40000..40004): not clean.
    const Group g = small_group({m0, span(100, 200) + span(40000, 40003), m2}, {40000, 5});
    const Problem p = g.problem();
    CHECK_FALSE(assign_sticky_clean(p, prepare(p, false), false).has_value());
    check_same(assign("sticky", p), general_path(p, false));
    // Racks: the rack-aware builder's business.
    const Group r = small_group({m0, span(100, 200), m2});
    std::vector<int32_t> member_rack(3, 1), replica_racks(40000, 1);
    std::vector<int64_t> replica_offsets;
    for (int32_t part = 0; part <= 40000; ++part) replica_offsets.push_back(part);
    Problem q = r.problem();
    q.member_rack = kafkagroup_test::view(member_rack);
    q.replica_offsets = kafkagroup_test::view(replica_offsets);
    q.replica_racks = kafkagroup_test::view(replica_racks);
    CHECK_FALSE(assign_sticky_clean(q, prepare(q, false), false).has_value());
}

TEST_CASE("with the claims' check deferred, prepare's errors are the ones it gives with the check in place") {
    const std::vector<int32_t> counts{4};
    const std::vector<int64_t> sub_offsets{0, 1, 2}, owned_offsets{0, 1, 2};
    const std::vector<int32_t> sub_topics{0, 0}, claims{0, 9}, generation{1};   // claim 9 out of range, 1 generation for 2 members
    const Problem p = problem_of(counts, sub_offsets, sub_topics, owned_offsets, claims, generation);
    for (const bool now : {true, false})
        CHECK_THROWS_WITH_AS(prepare(p, now), "member 1: owned partition id 9 is not in 0..3", std::invalid_argument);
    const std::vector<int32_t> fine{0, 3};
    const Problem q = problem_of(counts, sub_offsets, sub_topics, owned_offsets, fine, generation);
    CHECK_THROWS_WITH_AS(prepare(q, false), "generation: expected 2 entries, got 1", std::invalid_argument);
}

TEST_CASE("claim_runs: runs sorted by first id, a partition claimed twice or out of range refused, a limit") {
    // member 0: 10..19 then 0..4 (its own claims out of order); member 1: 5..9 then 30; member 2: nothing
    const std::vector<int32_t> counts{40};
    const std::vector<int64_t> sub_offsets{0, 1, 2, 3}, owned_offsets{0, 15, 21, 21};
    const std::vector<int32_t> sub_topics{0, 0, 0}, generation{1, 1, 1};
    std::vector<int32_t> claims = span(10, 20) + span(0, 5) + span(5, 10) + std::vector<int32_t>{30};
    const auto verdict = [&](std::size_t limit, std::vector<ClaimRun>& runs) {
        const Problem p = problem_of(counts, sub_offsets, sub_topics, owned_offsets, claims, generation);
        return claim_runs(p, prepare(p, false), limit, runs);
    };
    std::vector<ClaimRun> runs;
    REQUIRE(verdict(4, runs) == ClaimRunsVerdict::kRuns);
    REQUIRE(runs.size() == 4);   // 0..4 and 5..9 stay two runs: two members
    const int32_t want[4][3] = {{0, 5, 0}, {5, 10, 1}, {10, 20, 0}, {30, 31, 1}};
    for (std::size_t k = 0; k < 4; ++k) {
        CAPTURE(k);
        CHECK(runs[k].begin == want[k][0]);
        CHECK(runs[k].end == want[k][1]);
        CHECK(runs[k].member == want[k][2]);
    }
    CHECK(verdict(3, runs) == ClaimRunsVerdict::kTooMany);
    claims[17] = 12;   // member 1 claims 5, 6, 12, 8, 9: 12 is member 0's too
    CHECK(verdict(10, runs) == ClaimRunsVerdict::kNotClean);
    claims[17] = 6;    // member 1 claims 6 twice (5, 6, 6, 8, 9): two runs ending and beginning at 6
    CHECK(verdict(10, runs) == ClaimRunsVerdict::kNotClean);
    claims[17] = 40;   // past the last partition (39)
    CHECK(verdict(10, runs) == ClaimRunsVerdict::kNotClean);
    claims[17] = -1;
    CHECK(verdict(10, runs) == ClaimRunsVerdict::kNotClean);
    claims[17] = 7;    // back to 5..9: clean again
    CHECK(verdict(10, runs) == ClaimRunsVerdict::kRuns);
    // a run that would run past the last partition (38, 39, 40): 38..39, then 40 refused
    claims[20] = 38;
    claims.push_back(39);
    claims.push_back(40);
    const std::vector<int64_t> longer{0, 15, 23, 23};
    const Problem p = problem_of(counts, sub_offsets, sub_topics, longer, claims, generation);
    CHECK(claim_runs(p, prepare(p, false), 10, runs) == ClaimRunsVerdict::kNotClean);
}
