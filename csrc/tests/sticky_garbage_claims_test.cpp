// The sticky assignors' whole engine call (assign(): the clean-claims path of sticky/clean_claims.cpp, whose
// claim_runs read lets engine.cpp skip check_claims when it found every claim in range, then the general path
// when it gives way) against the general path alone (prepare() checking the claims first, previous_owners,
// assign_sticky_call, compute_metrics), on small groups whose claims are mostly clean but carry garbage: ids
// below 0 or at and past P (INT32_MIN, INT32_MAX and their neighbours), a partition named twice, a member's runs
// rotated or reversed, members with no claim, P of 0 and 1, one to three topics. Either both refuse the group
// with the same message or both give the same owner[], withheld[] and metrics: an out-of-range claim can never
// reach previous_owners unchecked, whichever reader gave way and where.
#include <doctest/doctest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kafkagroup/engine.hpp"
#include "kafkagroup/metrics.hpp"
#include "kafkagroup/ownership.hpp"
#include "kafkagroup/problem.hpp"
#include "kafkagroup/sticky/sticky.hpp"
#include "test_checks.hpp"
#include "test_views.hpp"

using namespace kafkagroup;

namespace {

AssignResult checked_general_path(const Problem& p, bool cooperative) {
    const Prepared pr = prepare(p);   // the claims checked here, before anything reads them
    PreviousOwners prev = previous_owners(p, pr);
    PartitionTally tally(pr, prev);
    AssignResult r = assign_sticky_call(p, pr, prev, tally, cooperative);
    r.metrics = compute_metrics(p, pr, r.owner, r.withheld, prev, tally);
    return r;
}

}  // namespace

TEST_CASE("sticky on clean claims with garbage mixed in: the engine's answer or error is the general path's") {
    std::mt19937 rng(12345);
    const auto uniform = [&](int a, int b) { return std::uniform_int_distribution<int>(a, b)(rng); };
    int assigned = 0, refused = 0;
    for (int round = 0; round < 3000; ++round) {
        CAPTURE(round);
        std::vector<int32_t> counts;
        const int topics = uniform(1, 3);
        const int scale = std::vector<int>{1, 3, 20, 200, 5000}[static_cast<std::size_t>(uniform(0, 4))];
        for (int t = 0; t < topics; ++t) counts.push_back(uniform(0, scale));
        int32_t P = 0;
        for (const int32_t c : counts) P += c;
        const int M = uniform(0, 10);
        // runs of partitions to random members (or nobody): clean claims, as after a sticky assignment
        std::vector<std::vector<int32_t>> claims(static_cast<std::size_t>(M));
        const int longest = std::vector<int>{1, 2, 17, 100, 5000}[static_cast<std::size_t>(uniform(0, 4))];
        for (int32_t part = 0; part < P && M > 0;) {
            const int run = uniform(1, longest);
            const int m = uniform(-1, M - 1);
            for (int32_t k = part; k < std::min(P, part + run); ++k)
                if (m >= 0) claims[static_cast<std::size_t>(m)].push_back(k);
            part += run;
        }
        std::vector<int32_t> sub_topics, owned, generation;
        std::vector<int64_t> sub_offsets{0}, owned_offsets{0};
        for (int m = 0; m < M; ++m) {
            std::vector<int32_t>& c = claims[static_cast<std::size_t>(m)];
            const int order = uniform(0, 99);
            if (order < 10 && c.size() > 1) std::rotate(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(c.size() / 2), c.end());
            else if (order < 15) std::reverse(c.begin(), c.end());
            if (uniform(0, 99) < 6) {   // an id out of range, or at the edges of the range
                const int32_t edge[] = {-1, P, P + 1, INT32_MAX, INT32_MIN, INT32_MAX - 1, INT32_MIN + 1, P - 1, 0};
                c.insert(c.begin() + uniform(0, static_cast<int>(c.size())), edge[uniform(0, 8)]);
            }
            if (uniform(0, 99) < 5 && P > 0) c.push_back(uniform(0, P - 1));   // perhaps named twice
            if (uniform(0, 99) < 3 && !c.empty() && c.back() < INT32_MAX) c.push_back(c.back() + 1);   // may pass P
            for (int t = 0; t < topics; ++t) sub_topics.push_back(t);
            sub_offsets.push_back(static_cast<int64_t>(sub_topics.size()));
            owned.insert(owned.end(), c.begin(), c.end());
            owned_offsets.push_back(static_cast<int64_t>(owned.size()));
            generation.push_back(uniform(-1, 2));
        }
        const Problem p = uniform(0, 1) ? kafkagroup_test::problem_of(counts, sub_offsets, sub_topics, owned_offsets, owned, generation)
                                        : kafkagroup_test::problem_of(counts, sub_offsets, sub_topics, owned_offsets, owned);
        for (const bool cooperative : {false, true}) {
            CAPTURE(cooperative);
            std::string want_error, got_error;
            AssignResult want, got;
            try {
                want = checked_general_path(p, cooperative);
            } catch (const std::invalid_argument& e) {
                want_error = e.what();
            }
            try {
                got = assign(cooperative ? "cooperative-sticky" : "sticky", p);
            } catch (const std::invalid_argument& e) {
                got_error = e.what();
            }
            REQUIRE(got_error == want_error);
            if (!want_error.empty()) {
                ++refused;
                continue;
            }
            REQUIRE(got.owner == want.owner);
            REQUIRE(got.withheld == want.withheld);
            kafkagroup_test::check_same_metrics(got.metrics, want.metrics);
            ++assigned;
        }
    }
    // both outcomes exercised
    CHECK(refused > 300);
    CHECK(assigned > 3000);
}
