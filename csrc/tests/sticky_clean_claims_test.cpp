// The sticky call read straight from clean claims (sticky/clean_claims.cpp) against the general path
// (previous_owners, assign_sticky_call, compute_metrics): equal owners, withheld partitions and metrics on
// groups of several windows whose members' claims interleave, through both of its readers (the sorted runs of
// claim_runs.hpp for long runs, the windows for short ones); and the claims it must refuse (doubled, out of
// order for the windows, out of range, on a topic nobody subscribes to, racks), where the engine's answer is
// the general path's.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kafkagroup/engine.hpp"
#include "kafkagroup/metrics.hpp"
#include "kafkagroup/ownership.hpp"
#include "kafkagroup/problem.hpp"
#include "kafkagroup/sticky/claim_runs.hpp"
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

// `longest`: the longest run handed to one member (1: interleaved partition by partition).
Group clean_group(std::mt19937& rng, int32_t longest) {
    Group g;
    const int topics = std::uniform_int_distribution<int>(1, 8)(rng);
    for (int t = 0; t < topics; ++t)
        g.partition_count.push_back(t == 1 ? 0 : std::uniform_int_distribution<int>(1, 30000)(rng));  // one empty topic
    const int members = std::uniform_int_distribution<int>(1, 300)(rng);
    int32_t P = 0;
    for (int32_t c : g.partition_count) P += c;
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
    int64_t withheld = 0, moved = 0, windows = 0;   // what the rounds exercised
    int by_runs = 0, by_windows = 0;                  // rounds read through each reader
    for (int round = 0; round < 30; ++round) {
        // Odd rounds: runs of up to 2,000 (claim_runs' sorted runs); even ones: up to 40 (mostly the windows).
        const Group g = clean_group(rng, std::uniform_int_distribution<int32_t>(1, round % 2 ? 2000 : 40)(rng));
        const Problem p = g.problem();
        const Prepared unchecked = prepare(p, /*check_claims_now=*/false);
        CHECK_FALSE(unchecked.claims_checked);
        std::vector<sticky::ClaimRun> runs;
        const sticky::RunsRead read = sticky::claim_runs(p, unchecked, sticky::claim_runs_limit(unchecked.num_partitions), runs);
        REQUIRE(read != sticky::RunsRead::not_clean);
        (read == sticky::RunsRead::sorted ? by_runs : by_windows) += 1;
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
        windows += unchecked.num_partitions / 16384 + 1;
    }
    CHECK(withheld > 0);
    CHECK(moved > 0);
    CHECK(windows > 60);
    CHECK(by_runs >= 5);
    CHECK(by_windows >= 5);
}

TEST_CASE("claim_runs: the claims as sorted runs, or why not") {
    // 100 partitions; member 0: 40..59 then 0..9 (out of order), member 1: 10..19 and 70, member 2: 90..99.
    const std::vector<int32_t> counts{60, 40};
    const std::vector<int64_t> sub_offsets{0, 2, 4, 6}, owned_offsets{0, 30, 41, 51};
    const std::vector<int32_t> sub_topics{0, 1, 0, 1, 0, 1}, generation{1, 1, 1};
    std::vector<int32_t> claims;
    for (int32_t k = 40; k < 60; ++k) claims.push_back(k);
    for (int32_t k = 0; k < 10; ++k) claims.push_back(k);
    for (int32_t k = 10; k < 20; ++k) claims.push_back(k);
    claims.push_back(70);
    for (int32_t k = 90; k < 100; ++k) claims.push_back(k);
    const Problem p = problem_of(counts, sub_offsets, sub_topics, owned_offsets, claims, generation);
    const Prepared pr = prepare(p, false);
    std::vector<sticky::ClaimRun> runs;
    REQUIRE(sticky::claim_runs(p, pr, 100, runs) == sticky::RunsRead::sorted);
    const std::vector<std::vector<int32_t>> want{{0, 10, 0}, {10, 10, 1}, {40, 20, 0}, {70, 1, 1}, {90, 10, 2}};
    REQUIRE(runs.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
        CAPTURE(i);
        CHECK(runs[i].begin == want[i][0]);
        CHECK(runs[i].length == want[i][1]);
        CHECK(runs[i].member == want[i][2]);
    }
    // Five runs: a limit of four gives up.
    CHECK(sticky::claim_runs(p, pr, 4, runs) == sticky::RunsRead::too_many);
    // A run reaching past the last partition (98, 99, 100) and a negative claim: not clean.
    std::vector<int32_t> past = claims;
    past[48] = 98, past[49] = 99, past[50] = 100;
    CHECK(sticky::claim_runs(problem_of(counts, sub_offsets, sub_topics, owned_offsets, past, generation), pr, 100, runs) ==
          sticky::RunsRead::not_clean);
    std::vector<int32_t> negative = claims;
    negative[30] = -1;
    CHECK(sticky::claim_runs(problem_of(counts, sub_offsets, sub_topics, owned_offsets, negative, generation), pr, 100, runs) ==
          sticky::RunsRead::not_clean);
    // The engine's call on the out-of-order claims (runs) equals the general path's.
    for (const bool cooperative : {false, true}) {
        const std::optional<AssignResult> got = assign_sticky_clean(p, pr, cooperative);
        REQUIRE(got.has_value());
        check_same(*got, general_path(p, cooperative));
    }
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
        {"a member's claims out of order, in runs (sorted by claim_runs)", {span(20000, 20100) + span(0, 100), span(100, 200), m2},
         true, false},
        // Interleaved (runs of one: the windows), member 0's out of order: members 0 and 1 alternate over 0..39,999.
        {"a member's claims out of order, interleaved (windows)", {every_other(20000, 40000) + every_other(0, 20000),
                                                                   every_other(1, 40000)}, false, false},
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
