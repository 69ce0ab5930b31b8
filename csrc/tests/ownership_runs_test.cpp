// previous_owners (ownership.cpp) against a per-claim reference of its rules (ownership.hpp: a claim counts when
// its member subscribes to the topic; the highest generation wins; a tie between two members at that generation
// voids it), on groups whose members' claims come as runs of consecutive partitions listed in any order, some
// of them claimed again by another member at a random generation: a member's later runs then lie below owner[]'s
// end, where previous_owners writes runs as blocks (take_all_topics) instead of claim by claim.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "kafkagroup/ownership.hpp"
#include "kafkagroup/problem.hpp"
#include "test_views.hpp"

using namespace kafkagroup;

namespace {

struct Reference {
    std::vector<int32_t> owner;
    std::vector<int64_t> owned;
    int64_t ties = 0;   // partitions voided by a tie
};

// Every member subscribes to every topic here, so every claim counts.
Reference reference_owners(int32_t P, int32_t M, const std::vector<std::vector<int32_t>>& claims,
                           const std::vector<int32_t>& generation) {
    std::vector<int32_t> best(static_cast<std::size_t>(P), INT32_MIN);
    std::vector<std::set<int32_t>> at_best(static_cast<std::size_t>(P));
    for (int32_t m = 0; m < M; ++m)
        for (int32_t part : claims[static_cast<std::size_t>(m)]) {
            const int32_t g = generation[static_cast<std::size_t>(m)];
            if (g > best[part]) best[part] = g, at_best[part] = {m};
            else if (g == best[part]) at_best[part].insert(m);
        }
    Reference r{std::vector<int32_t>(static_cast<std::size_t>(P), kUnassigned), std::vector<int64_t>(static_cast<std::size_t>(M), 0)};
    for (int32_t part = 0; part < P; ++part) r.ties += at_best[part].size() > 1;
    for (int32_t part = 0; part < P; ++part)
        if (at_best[part].size() == 1) {
            r.owner[part] = *at_best[part].begin();
            ++r.owned[static_cast<std::size_t>(r.owner[part])];
        }
    return r;
}

}  // namespace

TEST_CASE("previous owners from runs of claims in any order, some claimed twice, equal a per-claim reference") {
    std::mt19937 rng(2626);
    int64_t below_end_runs = 0, voided = 0;
    for (int round = 0; round < 60; ++round) {
        CAPTURE(round);
        const int32_t T = std::uniform_int_distribution<int32_t>(1, 6)(rng);
        std::vector<int32_t> counts;
        int32_t P = 0;
        for (int32_t t = 0; t < T; ++t) counts.push_back(std::uniform_int_distribution<int32_t>(0, 3000)(rng)), P += counts.back();
        const int32_t M = std::uniform_int_distribution<int32_t>(1, 30)(rng);
        std::vector<std::vector<std::vector<int32_t>>> runs(static_cast<std::size_t>(M));   // per member, its runs
        for (int32_t part = 0; part < P;) {
            const int32_t n = std::min(P - part, std::uniform_int_distribution<int32_t>(1, 400)(rng));
            const int32_t m = std::uniform_int_distribution<int32_t>(-1, M - 1)(rng);
            std::vector<int32_t> run;
            for (int32_t k = part; k < part + n; ++k) run.push_back(k);
            if (m >= 0) runs[static_cast<std::size_t>(m)].push_back(run);
            // sometimes a second claimant of a piece of it
            if (std::uniform_int_distribution<int>(0, 4)(rng) == 0) {
                const int32_t other = std::uniform_int_distribution<int32_t>(0, M - 1)(rng);
                const int32_t from = std::uniform_int_distribution<int32_t>(0, n - 1)(rng);
                runs[static_cast<std::size_t>(other)].push_back(std::vector<int32_t>(run.begin() + from, run.end()));
            }
            part += n;
        }
        std::vector<int32_t> sub_topics, owned_partitions, generation;
        std::vector<int64_t> sub_offsets{0}, owned_offsets{0};
        std::vector<std::vector<int32_t>> claims(static_cast<std::size_t>(M));
        for (int32_t m = 0; m < M; ++m) {
            for (int32_t t = 0; t < T; ++t) sub_topics.push_back(t);
            sub_offsets.push_back(static_cast<int64_t>(sub_topics.size()));
            auto& mine = runs[static_cast<std::size_t>(m)];
            std::shuffle(mine.begin(), mine.end(), rng);   // any order of a member's runs
            for (const auto& run : mine) claims[static_cast<std::size_t>(m)].insert(claims[static_cast<std::size_t>(m)].end(), run.begin(), run.end());
            owned_partitions.insert(owned_partitions.end(), claims[static_cast<std::size_t>(m)].begin(), claims[static_cast<std::size_t>(m)].end());
            owned_offsets.push_back(static_cast<int64_t>(owned_partitions.size()));
            generation.push_back(std::uniform_int_distribution<int32_t>(-1, 2)(rng));
        }
        // runs that start below the largest claim of an earlier member (below owner[]'s end when read)
        int32_t reach = -1;
        for (int32_t m = 0; m < M; ++m) {
            for (const auto& run : runs[static_cast<std::size_t>(m)]) below_end_runs += run.size() > 1 && run.front() < reach;
            for (const auto& run : runs[static_cast<std::size_t>(m)]) reach = std::max(reach, run.back());
        }
        const Problem p = kafkagroup_test::problem_of(counts, sub_offsets, sub_topics, owned_offsets, owned_partitions, generation);
        const Prepared pr = prepare(p);
        const PreviousOwners got = previous_owners(p, pr);
        const Reference want = reference_owners(P, M, claims, generation);
        if (!owned_partitions.empty()) CHECK(got.owner == want.owner);
        CHECK(got.owned == want.owned);
        voided += want.ties;
    }
    CHECK(below_end_runs > 200);
    CHECK(voided > 0);
}

TEST_CASE("a partition tied, taken by a higher generation, then tied again is voided once") {
    // Partitions 0..9 of one topic. Members 0 and 1 (generation 1) both claim 0..4: tied. Member 2 (generation 2)
    // claims 0..2: it takes them. Member 3 (generation 2) claims 0: tied again (the partition flagged twice).
    // Member 4 (generation 0) claims 5..9 alone.
    const std::vector<int32_t> counts{10}, sub_topics{0, 0, 0, 0, 0}, generation{1, 1, 2, 2, 0};
    const std::vector<int64_t> sub_offsets{0, 1, 2, 3, 4, 5}, owned_offsets{0, 5, 10, 13, 14, 19};
    const std::vector<int32_t> claims{0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 0, 5, 6, 7, 8, 9};
    const Problem p = kafkagroup_test::problem_of(counts, sub_offsets, sub_topics, owned_offsets, claims, generation);
    const PreviousOwners got = previous_owners(p, prepare(p));
    CHECK(got.owner == std::vector<int32_t>{-1, 2, 2, -1, -1, 4, 4, 4, 4, 4});
    CHECK(got.owned == std::vector<int64_t>{0, 0, 2, 0, 5});
}
