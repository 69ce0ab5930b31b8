// The server assignors' direct paths (server/clean_claims.hpp; range_direct, uniform_direct) against the
// general path they stand in for: previous_owners, the assignor, compute_metrics. On random groups, equal and
// different subscriptions, over rounds whose previous targets are the last result with edits a coordinator
// may send: members without claims, a partition claimed by two members or listed twice by one, stray claims
// on topics a member left, claims and subscription rows out of order. A direct path must answer exactly when
// the claims are clean by the plain definition (below; for range, once the claims that do not count are left
// out), and then with the general path's owner and metrics.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <random>
#include <utility>
#include <stdexcept>
#include <vector>

#include "kafkagroup/metrics.hpp"
#include "kafkagroup/ownership.hpp"
#include "kafkagroup/problem.hpp"
#include "test_checks.hpp"
#include "test_views.hpp"
#include "kafkagroup/assignors.hpp"
#include "kafkagroup/server/clean_claims.hpp"
#include "kafkagroup/server/server_assignors.hpp"

using namespace kafkagroup;

namespace {

using kafkagroup_test::problem_of;
using kafkagroup_test::view;

struct Group {
    std::vector<int32_t> counts;
    std::vector<int64_t> sub_offsets{0};
    std::vector<int32_t> sub_topics;
    std::vector<int64_t> owned_offsets{0};
    std::vector<int32_t> owned;

    int32_t members() const { return static_cast<int32_t>(sub_offsets.size()) - 1; }
    int32_t topic_of(int32_t part) const {
        int32_t t = 0;
        for (int32_t base = counts[0]; base <= part; base += counts[++t]) {}
        return t;
    }
    bool subscribes(int32_t m, int32_t t) const {
        return std::find(sub_topics.begin() + sub_offsets[m], sub_topics.begin() + sub_offsets[m + 1], t) !=
               sub_topics.begin() + sub_offsets[m + 1];
    }
    Problem problem() const {
        return problem_of(counts, sub_offsets, sub_topics, owned_offsets, owned);
    }
};

// Clean, as clean_claims.hpp defines it: every claim on a topic its member subscribes to, no partition named
// twice. `counted_only`: claims on topics their member does not subscribe to are left out first (they do not
// count, ownership.hpp's rule 1), what range_direct requires.
bool clean_by_definition(const Group& g, bool counted_only = false) {
    std::vector<int32_t> named;
    for (int32_t m = 0; m < g.members(); ++m)
        for (int64_t i = g.owned_offsets[m]; i < g.owned_offsets[m + 1]; ++i) {
            if (!g.subscribes(m, g.topic_of(g.owned[i]))) {
                if (counted_only) continue;
                return false;
            }
            named.push_back(g.owned[i]);
        }
    std::sort(named.begin(), named.end());
    return std::adjacent_find(named.begin(), named.end()) == named.end();
}

void check_same(const AssignResult& direct, const AssignResult& general) {
    CHECK(direct.owner == general.owner);
    CHECK(direct.withheld.empty());
    kafkagroup_test::check_same_metrics(direct.metrics, general.metrics);
}

// One group: the general path's result (nullopt when it refuses the claims) beside the direct path's.
void check_group(const Group& g, bool uniform, int& direct_answers) {
    const Problem p = g.problem();
    const Prepared pr = prepare(p);
    const std::optional<AssignResult> direct = uniform ? server::uniform_direct(p, pr) : server::range_direct(p, pr);
    // range answers whenever no partition is named twice by claims that count (stray claims on topics a
    // member left are skipped); uniform whenever the claims are clean, with equal subscriptions only when the
    // row's topics with partitions (the order the builder visits partitions in) are ascending, and there are
    // some
    bool expected = clean_by_definition(g, /*counted_only=*/!uniform);
    if (uniform) {
        std::vector<int32_t> visited;
        for (int64_t i = g.sub_offsets[0]; i < g.sub_offsets[1]; ++i)
            if (g.counts[g.sub_topics[i]] > 0) visited.push_back(g.sub_topics[i]);
        if (pr.uniform) expected = expected && !visited.empty() && std::is_sorted(visited.begin(), visited.end());
    }
    REQUIRE(direct.has_value() == expected);
    if (!direct) return;
    ++direct_answers;
    if (pr.uniform && g.members() > 1) {   // the homogeneous form (one row for everyone) answers the same
        Problem shared = p;
        const std::vector<int64_t> row_offsets{0, g.sub_offsets[1]};
        shared.sub_offsets = view(row_offsets);
        shared.sub_topics = View<int32_t>{g.sub_topics.data(), static_cast<std::size_t>(g.sub_offsets[1])};
        shared.shared_members = g.members();
        const Prepared shared_pr = prepare(shared);
        const std::optional<AssignResult> again =
            uniform ? server::uniform_direct(shared, shared_pr) : server::range_direct(shared, shared_pr);
        REQUIRE(again.has_value());
        check_same(*again, *direct);
    }
    const PreviousOwners prev_owners = previous_owners(p, pr);
    const std::vector<int32_t> prev =
        prev_owners.none() ? std::vector<int32_t>(static_cast<std::size_t>(pr.num_partitions), kUnassigned)
                           : prev_owners.owner;
    AssignResult general;
    if (uniform) {
        server::check_single_owner(p, pr, prev);   // clean claims: never throws
        general.owner = server::assign_uniform(p, pr, prev);
    } else {
        general.owner = server::assign_range(p, pr);
    }
    general.metrics = compute_metrics(p, pr, general.owner, general.withheld, prev_owners);
    check_same(*direct, general);
}

// many: hundreds of topics of at most one partition, so that members hold a few partitions each over long
// subscription lists (the walk then answers by binary searches in a member's list)
Group random_group(std::mt19937& rng, bool homogeneous, bool many = false) {
    Group g;
    const int topics = many ? std::uniform_int_distribution<int>(150, 250)(rng) : std::uniform_int_distribution<int>(1, 7)(rng);
    for (int t = 0; t < topics; ++t)
        g.counts.push_back(many ? std::bernoulli_distribution(0.25)(rng) : std::uniform_int_distribution<int>(0, 14)(rng));
    const int members = std::uniform_int_distribution<int>(1, 12)(rng);
    std::vector<int32_t> row;
    for (int t = 0; t < topics; ++t)
        if (std::bernoulli_distribution(0.7)(rng)) row.push_back(t);
    if (std::bernoulli_distribution(0.2)(rng)) std::shuffle(row.begin(), row.end(), rng);   // unsorted row
    for (int m = 0; m < members; ++m) {
        if (homogeneous) {
            g.sub_topics.insert(g.sub_topics.end(), row.begin(), row.end());
        } else {
            const std::size_t from = g.sub_topics.size();
            for (int t = 0; t < topics; ++t)
                if (std::bernoulli_distribution(0.6)(rng)) g.sub_topics.push_back(t);
            if (std::bernoulli_distribution(0.2)(rng)) std::shuffle(g.sub_topics.begin() + from, g.sub_topics.end(), rng);
        }
        g.sub_offsets.push_back(static_cast<int64_t>(g.sub_topics.size()));
    }
    g.owned_offsets.assign(static_cast<std::size_t>(members) + 1, 0);
    return g;
}

// owned lists from an owner array, then one of the edits a coordinator's input may carry.
void set_previous(Group& g, const std::vector<int32_t>& owner, std::mt19937& rng) {
    const int32_t M = g.members(), P = static_cast<int32_t>(owner.size());
    std::vector<std::vector<int32_t>> lists(static_cast<std::size_t>(M));
    for (int32_t part = 0; part < P; ++part)
        if (owner[part] >= 0 && owner[part] < M) lists[owner[part]].push_back(part);
    const int edit = std::uniform_int_distribution<int>(0, 7)(rng);
    const int32_t m = std::uniform_int_distribution<int32_t>(0, M - 1)(rng);
    if (P > 0) {
        const int32_t part = std::uniform_int_distribution<int32_t>(0, P - 1)(rng);
        if (edit == 1) lists[m].clear();                                  // a member without claims
        if (edit == 2) lists[m].push_back(part);                          // maybe claimed twice, or stray
        if (edit == 3 && !lists[m].empty()) lists[m].push_back(lists[m][0]);   // one member lists one twice
        if (edit == 4 && M > 1) lists[(m + 1) % M].push_back(part);       // another member's claim on it
        if (edit == 5) std::shuffle(lists[m].begin(), lists[m].end(), rng);   // claims out of order
        if (edit == 6) {   // m leaves a topic it holds partitions of: stray claims
            for (int64_t i = g.sub_offsets[m]; i < g.sub_offsets[m + 1]; ++i) {
                const int32_t t = g.sub_topics[i];
                bool holds = false;
                for (int32_t c : lists[m]) holds = holds || g.topic_of(c) == t;
                if (!holds) continue;
                g.sub_topics.erase(g.sub_topics.begin() + i);
                for (int32_t k = m + 1; k <= M; ++k) --g.sub_offsets[k];
                break;
            }
        }
    }
    g.owned.clear();
    g.owned_offsets.assign(1, 0);
    for (const auto& l : lists) {
        g.owned.insert(g.owned.end(), l.begin(), l.end());
        g.owned_offsets.push_back(static_cast<int64_t>(g.owned.size()));
    }
}

void run_rounds(bool uniform, uint32_t seed) {
    std::mt19937 rng(seed);
    int direct_answers = 0, groups = 0;
    for (int round = 0; round < 600; ++round) {
        Group g = random_group(rng, /*homogeneous=*/round % 3 != 0, /*many=*/round % 5 == 0);
        std::vector<int32_t> owner;
        for (int step = 0; step < 5; ++step) {
            if (step == 0) {
                g.owned.clear();   // a first assignment: no claims
            } else {
                // one or two members join with member 0's subscription (two: what members over quota give up
                // is shared out, in order)
                for (int joining = step % 2 == 0 ? 1 + round % 2 : 0; joining > 0; --joining) {
                    g.sub_topics.insert(g.sub_topics.end(), g.sub_topics.begin(), g.sub_topics.begin() + g.sub_offsets[1]);
                    g.sub_offsets.push_back(static_cast<int64_t>(g.sub_topics.size()));
                }
                set_previous(g, owner, rng);
            }
            ++groups;
            check_group(g, uniform, direct_answers);
            const Problem p = g.problem();
            const Prepared pr = prepare(p);
            const PreviousOwners prev_owners = previous_owners(p, pr);
            const std::vector<int32_t> prev =
                prev_owners.none() ? std::vector<int32_t>(static_cast<std::size_t>(pr.num_partitions), kUnassigned)
                                   : prev_owners.owner;
            if (uniform) {
                try {
                    server::check_single_owner(p, pr, prev);
                } catch (const std::invalid_argument&) {
                    break;   // the group is refused: start another
                }
                owner = server::assign_uniform(p, pr, prev);
            } else {
                owner = server::assign_range(p, pr);
            }
        }
    }
    // many groups take the direct path, many do not
    CHECK(direct_answers > groups / 5);
    CHECK(direct_answers < groups);
}

}  // namespace

TEST_CASE("server-range's direct path: the general path's owner and metrics exactly when the claims are clean") {
    run_rounds(/*uniform=*/false, 2121);
}

TEST_CASE("server-uniform's direct path: the general path's owner and metrics exactly when the claims are clean") {
    run_rounds(/*uniform=*/true, 2122);
}

// The heterogeneous builder records the partitions it writes and reads those where it looks for changed
// partitions (restore's moved and foreign lists, the moved count); with tracking off it scans every partition.
// Both must give the same owner[], loads and moved count, on first assignments (tracking gives up past P/16
// writes) and over rounds where members join, leave and change subscriptions (few writes: tracking holds).
TEST_CASE("server-uniform, different subscriptions: tracked writes give what scanning every partition gives") {
    std::mt19937 rng(2123);
    int tracked_rounds = 0;
    for (int round = 0; round < 300; ++round) {
        Group g = random_group(rng, /*homogeneous=*/false, /*many=*/round % 5 == 0);
        std::vector<int32_t> owner;
        for (int step = 0; step < 5; ++step) {
            if (step > 0) {
                g.sub_topics.insert(g.sub_topics.end(), g.sub_topics.begin(), g.sub_topics.begin() + g.sub_offsets[1]);
                g.sub_offsets.push_back(static_cast<int64_t>(g.sub_topics.size()));
                set_previous(g, owner, rng);
            }
            const Problem p = g.problem();
            const Prepared pr = prepare(p);
            const PreviousOwners prev_owners = previous_owners(p, pr);
            const std::vector<int32_t> prev =
                prev_owners.none() ? std::vector<int32_t>(static_cast<std::size_t>(pr.num_partitions), kUnassigned)
                                   : prev_owners.owner;
            const server::HeterogeneousResult tracked =
                server::build_heterogeneous(p, pr, topic_subscribers(p, pr), prev, nullptr, /*track_writes=*/true);
            const server::HeterogeneousResult scanned =
                server::build_heterogeneous(p, pr, topic_subscribers(p, pr), prev, &prev_owners.owned, /*track_writes=*/false);
            REQUIRE(tracked.owner == scanned.owner);
            CHECK(tracked.load == scanned.load);
            CHECK(tracked.moved == scanned.moved);
            int64_t moved = 0;
            for (std::size_t part = 0; part < prev.size(); ++part) moved += prev[part] >= 0 && tracked.owner[part] != prev[part];
            CHECK(tracked.moved == moved);
            tracked_rounds += step > 0 && moved > 0;
            owner = tracked.owner;
        }
    }
    CHECK(tracked_rounds > 50);   // restore's lists were built from the tracked writes many times
}

// The claims walk writes a run of consecutive claims as a range: it must see a partition named twice inside or
// across runs, and accept only what claim-by-claim writing accepts.
TEST_CASE("server claims walk: runs of consecutive claims written as ranges, duplicates still found") {
    const auto walk = [](std::vector<int32_t> counts, std::vector<std::vector<int32_t>> lists) {
        std::vector<int64_t> sub_offsets{0}, owned_offsets{0};
        std::vector<int32_t> sub_topics, owned;
        for (const auto& l : lists) {
            for (int32_t t = 0; t < static_cast<int32_t>(counts.size()); ++t) sub_topics.push_back(t);
            sub_offsets.push_back(static_cast<int64_t>(sub_topics.size()));
            owned.insert(owned.end(), l.begin(), l.end());
            owned_offsets.push_back(static_cast<int64_t>(owned.size()));
        }
        const Problem p = problem_of(counts, sub_offsets, sub_topics, owned_offsets, owned);
        const Prepared pr = prepare(p);
        std::vector<int32_t> owner(static_cast<std::size_t>(pr.num_partitions), kUnassigned);
        const bool clean = server::write_clean_claims(p, pr, owner);
        std::vector<int32_t> again(owner.size(), kUnassigned);
        CHECK(server::write_distinct_claims(p, pr, again) == clean);
        if (clean) CHECK(again == owner);
        return std::make_pair(clean, owner);
    };
    std::vector<int32_t> run40(40), run_gap;
    for (int32_t k = 0; k < 40; ++k) run40[k] = k;
    // one run per member, whole lists
    auto [clean, owner] = walk({100}, {run40, {40, 41, 42, 43, 44, 45, 46, 47, 48, 49}});
    CHECK(clean);
    for (int32_t k = 0; k < 50; ++k) CHECK(owner[k] == (k < 40 ? 0 : 1));
    CHECK(owner[50] == kUnassigned);
    // first and last 7 apart over 8 claims, but not a run: a partition named twice
    CHECK_FALSE(walk({100}, {{0, 0, 2, 3, 4, 5, 6, 7}}).first);
    // a run over a partition another member named
    CHECK_FALSE(walk({100}, {{5}, run40}).first);
    // a run inside a longer list, and again later in the same list
    std::vector<int32_t> twice{90, 91};
    twice.insert(twice.end(), run40.begin(), run40.begin() + 20);
    twice.push_back(60);
    twice.insert(twice.end(), run40.begin() + 10, run40.begin() + 18);
    CHECK_FALSE(walk({100}, {twice}).first);
    // runs split by gaps, blocks of 8 that are runs and blocks that are not
    for (int32_t k = 0; k < 60; ++k) run_gap.push_back(k < 30 ? k : 2 * k);
    auto [clean_gap, owner_gap] = walk({200}, {run_gap, {1000 % 200 + 199}});
    CHECK(clean_gap);
    for (int32_t k : run_gap) CHECK(owner_gap[k] == 0);
    CHECK(owner_gap[199] == 1);
    CHECK(owner_gap[30] == kUnassigned);
}
