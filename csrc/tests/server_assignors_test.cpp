// Kafka 4's server-side assignors (csrc/kafkagroup/server/) at the engine boundary, without Python: validity,
// the homogeneous builder's promise (loads within one, moves equal to the exact lower bound), the heterogeneous
// builder's stability, range's closed form, and the refusal of a partition held twice. Seeded random groups
// over several rounds, each round's result the next one's previous target assignment. Kafka's own classes
// judge the same assignors in tests/core/test_server_assignors_kafka.py.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kafkagroup/engine.hpp"
#include "kafkagroup/problem.hpp"
#include "test_views.hpp"

using namespace kafkagroup;

namespace {

using kafkagroup_test::problem_of;
using kafkagroup_test::view;

struct ServerGroup {
    std::vector<int32_t> counts;
    std::vector<int64_t> sub_offsets{0};
    std::vector<int32_t> sub_topics;
    std::vector<int64_t> owned_offsets;
    std::vector<int32_t> owned;

    int32_t members() const { return static_cast<int32_t>(sub_offsets.size()) - 1; }
    int32_t partitions() const {
        int32_t n = 0;
        for (int32_t c : counts) n += c;
        return n;
    }
    void previous(const std::vector<int32_t>& owner) {
        owned_offsets.assign(1, 0);
        owned.clear();
        for (int32_t m = 0; m < members(); ++m) {
            for (int32_t p = 0; p < static_cast<int32_t>(owner.size()); ++p)
                if (owner[p] == m) owned.push_back(p);
            owned_offsets.push_back(static_cast<int64_t>(owned.size()));
        }
    }
    Problem problem() const {
        return problem_of(counts, sub_offsets, sub_topics, owned_offsets, owned);
    }
    bool subscribes(int32_t m, int32_t t) const {
        for (int64_t i = sub_offsets[m]; i < sub_offsets[m + 1]; ++i)
            if (sub_topics[i] == t) return true;
        return false;
    }
};

ServerGroup random_server_group(std::mt19937& rng, bool homogeneous) {
    ServerGroup g;
    const int topics = std::uniform_int_distribution<int>(1, 6)(rng);
    for (int t = 0; t < topics; ++t) g.counts.push_back(std::uniform_int_distribution<int>(0, 15)(rng));
    const int members = std::uniform_int_distribution<int>(1, 10)(rng);
    std::vector<int32_t> common;
    for (int t = 0; t < topics; ++t)
        if (std::bernoulli_distribution(0.6)(rng)) common.push_back(t);
    for (int m = 0; m < members; ++m) {
        if (homogeneous) {
            g.sub_topics.insert(g.sub_topics.end(), common.begin(), common.end());
        } else {
            for (int t = 0; t < topics; ++t)
                if (std::bernoulli_distribution(0.5)(rng)) g.sub_topics.push_back(t);
        }
        g.sub_offsets.push_back(static_cast<int64_t>(g.sub_topics.size()));
    }
    return g;
}

void check_valid(const ServerGroup& g, const std::vector<int32_t>& owner) {
    int32_t part = 0;
    for (int32_t t = 0; t < static_cast<int32_t>(g.counts.size()); ++t) {
        bool any = false;
        for (int32_t m = 0; m < g.members(); ++m) any = any || g.subscribes(m, t);
        for (int32_t k = 0; k < g.counts[t]; ++k, ++part) {
            if (any) {
                REQUIRE(owner[part] >= 0);
                REQUIRE(g.subscribes(owner[part], t));
            } else {
                REQUIRE(owner[part] == kUnassigned);
            }
        }
    }
}

}  // namespace

TEST_CASE("server-uniform: valid; equal subscriptions balanced with the fewest moves; stable") {
    std::mt19937 rng(848);
    for (int round = 0; round < 300; ++round) {
        const bool homogeneous = round % 2 == 0;
        ServerGroup g = random_server_group(rng, homogeneous);
        std::vector<int32_t> owner(static_cast<std::size_t>(g.partitions()), kUnassigned);
        for (int step = 0; step < 4; ++step) {
            g.previous(owner);
            AssignResult r = assign("server-uniform", g.problem());
            check_valid(g, r.owner);
            if (homogeneous) {
                CHECK(r.metrics.max_load - r.metrics.min_load <= 1);
                CHECK(r.metrics.moved == r.metrics.moved_lower_bound);
            }
            // the same group with its own result: nothing moves
            g.previous(r.owner);
            CHECK(assign("server-uniform", g.problem()).owner == r.owner);
            owner = r.owner;
            // one member lost its previous assignment (a restart): its partitions are free next round
            const int32_t gone = std::uniform_int_distribution<int32_t>(0, g.members() - 1)(rng);
            for (int32_t& o : owner) o = o == gone ? kUnassigned : o;
        }
    }
}

TEST_CASE("server-range: contiguous ranges per topic over its subscribers in member order") {
    ServerGroup g;
    g.counts = {7, 2};
    g.sub_topics = {0, 0, 1, 0, 1};
    g.sub_offsets = {0, 1, 3, 5};
    g.previous({});
    g.owned = {};
    g.owned_offsets = {0, 0, 0, 0};
    // topic 0: 7 over members 0,1,2 -> 3, 2, 2; topic 1: 2 over members 1, 2 -> 1, 1
    CHECK(assign("server-range", g.problem()).owner == std::vector<int32_t>{0, 0, 0, 1, 1, 2, 2, 1, 2});
}

TEST_CASE("server-uniform refuses a partition held by two members; server-range ignores it") {
    ServerGroup g;
    g.counts = {3};
    g.sub_topics = {0, 0};
    g.sub_offsets = {0, 1, 2};
    g.owned = {1, 1};
    g.owned_offsets = {0, 1, 2};
    CHECK_THROWS_WITH_AS(assign("server-uniform", g.problem()),
                         doctest::Contains("members 0 and 1 both hold partition 1 of topic 0"), std::invalid_argument);
    CHECK(assign("server-range", g.problem()).owner == std::vector<int32_t>{0, 0, 1});
}

namespace {

// Kafka's range split as its definition reads, from every topic's full subscriber list: what
// server/range.cpp computes from the subscribers that receive a partition only.
std::vector<int32_t> range_by_definition(const ServerGroup& g) {
    std::vector<int32_t> owner(static_cast<std::size_t>(g.partitions()), kUnassigned);
    int32_t base = 0;
    for (int32_t t = 0; t < static_cast<int32_t>(g.counts.size()); base += g.counts[t], ++t) {
        std::vector<int32_t> subs;
        for (int32_t m = 0; m < g.members(); ++m)
            if (g.subscribes(m, t)) subs.push_back(m);
        if (subs.empty()) continue;
        const int32_t n = static_cast<int32_t>(subs.size()), per = g.counts[t] / n, extra = g.counts[t] % n;
        int32_t part = base;
        for (int32_t i = 0; i < n; ++i)
            for (int32_t k = 0; k < per + (i < extra ? 1 : 0); ++k) owner[part++] = subs[i];
    }
    return owner;
}

// The homogeneous builder as server/uniform_homogeneous.cpp's header defines it, partition by partition in
// the row's order: quotas (the larger ones first to members that held more), keep up to quota, hand the
// rest out in member order. Its fast path (claims counted, owners copied) must give exactly this.
std::vector<int32_t> homogeneous_by_definition(const ServerGroup& g) {
    const int32_t M = g.members();
    std::vector<int32_t> prev(static_cast<std::size_t>(g.partitions()), kUnassigned), base{0};
    for (int32_t c : g.counts) base.push_back(base.back() + c);
    std::vector<int32_t> claims_on(prev.size(), 0);
    for (int32_t m = 0; m < M; ++m)
        for (int64_t i = g.owned_offsets[m]; i < g.owned_offsets[m + 1]; ++i) {
            const int32_t part = g.owned[i];
            int32_t t = 0;
            while (base[t + 1] <= part) ++t;
            if (!g.subscribes(m, t)) continue;
            if (prev[part] != m) ++claims_on[part];
            prev[part] = m;
        }
    for (std::size_t part = 0; part < prev.size(); ++part)
        if (claims_on[part] > 1) prev[part] = kUnassigned;   // contested (the engine refuses it first)
    std::vector<int32_t> order;   // the row's partitions in visiting order
    for (int64_t i = g.sub_offsets[0]; i < g.sub_offsets[1]; ++i)
        for (int32_t part = base[g.sub_topics[i]]; part < base[g.sub_topics[i] + 1]; ++part) order.push_back(part);
    std::vector<int32_t> owner(prev.size(), kUnassigned);
    if (order.empty()) return owner;
    const int64_t q = static_cast<int64_t>(order.size()) / M;
    int64_t extra = static_cast<int64_t>(order.size()) % M;
    std::vector<int64_t> held(static_cast<std::size_t>(M), 0), quota(static_cast<std::size_t>(M), q), used(static_cast<std::size_t>(M), 0);
    for (int32_t part : order)
        if (prev[part] >= 0) ++held[prev[part]];
    for (int32_t m = 0; m < M && extra > 0; ++m)
        if (held[m] > q) ++quota[m], --extra;
    for (int32_t m = 0; m < M && extra > 0; ++m)
        if (quota[m] == q) ++quota[m], --extra;
    std::vector<int32_t> free;
    for (int32_t part : order) {
        const int32_t m = prev[part];
        if (m >= 0 && used[m] < quota[m]) owner[part] = m, ++used[m];
        else free.push_back(part);
    }
    std::size_t next = 0;
    for (int32_t m = 0; m < M; ++m)
        for (int64_t k = used[m]; k < quota[m] && next < free.size(); ++k) owner[free[next++]] = m;
    return owner;
}

}  // namespace

TEST_CASE("server-range equals the split over every topic's full subscriber list") {
    std::mt19937 rng(4404);
    for (int round = 0; round < 400; ++round) {
        ServerGroup g;
        const int topics = std::uniform_int_distribution<int>(1, 8)(rng);
        for (int t = 0; t < topics; ++t) g.counts.push_back(std::uniform_int_distribution<int>(0, 12)(rng));
        const int members = std::uniform_int_distribution<int>(1, 30)(rng);
        const double share = std::uniform_real_distribution<double>(0.1, 1.0)(rng);
        for (int m = 0; m < members; ++m) {
            const std::size_t from = g.sub_topics.size();
            for (int t = 0; t < topics; ++t)
                if (std::bernoulli_distribution(share)(rng)) g.sub_topics.push_back(t);
            if (round % 3 == 0) std::shuffle(g.sub_topics.begin() + from, g.sub_topics.end(), rng);   // unsorted lists
            g.sub_offsets.push_back(static_cast<int64_t>(g.sub_topics.size()));
        }
        g.previous({});
        g.owned_offsets.assign(static_cast<std::size_t>(members) + 1, 0);
        CHECK(assign("server-range", g.problem()).owner == range_by_definition(g));
    }
}

TEST_CASE("server-uniform, equal subscriptions: the builder's definition whatever the claims look like") {
    std::mt19937 rng(21);
    for (int round = 0; round < 400; ++round) {
        ServerGroup g = random_server_group(rng, /*homogeneous=*/true);
        // Some rows list their topics out of order (the partition-by-partition path), most in order.
        if (round % 4 == 1) {
            std::vector<int32_t> row(g.sub_topics.begin(), g.sub_topics.begin() + g.sub_offsets[1]);
            std::shuffle(row.begin(), row.end(), rng);
            for (int32_t m = 0; m < g.members(); ++m) std::copy(row.begin(), row.end(), g.sub_topics.begin() + g.sub_offsets[m]);
        }
        std::vector<int32_t> owner(static_cast<std::size_t>(g.partitions()), kUnassigned);
        for (int step = 0; step < 4; ++step) {
            // one or two members join: members that held more than the new quota give some up, shared out in
            // order between the two
            for (int joining = step % 2 == 1 ? 1 + round % 2 : 0; joining > 0; --joining) {
                const std::vector<int32_t> row(g.sub_topics.begin(), g.sub_topics.begin() + g.sub_offsets[1]);
                g.sub_topics.insert(g.sub_topics.end(), row.begin(), row.end());
                g.sub_offsets.push_back(static_cast<int64_t>(g.sub_topics.size()));
            }
            g.previous(owner);
            // Claims as a coordinator may list them: in any order, a partition listed twice by its member,
            // a claim on a topic nobody subscribes to (ignored).
            for (int32_t m = 0; m < g.members(); ++m)
                std::shuffle(g.owned.begin() + g.owned_offsets[m], g.owned.begin() + g.owned_offsets[m + 1], rng);
            if (step == 2 && g.owned_offsets[1] > 0) {   // member 0 lists its first claim again
                g.owned.insert(g.owned.begin() + g.owned_offsets[1], g.owned[0]);
                for (std::size_t m = 1; m < g.owned_offsets.size(); ++m) ++g.owned_offsets[m];
            }
            if (step == 3) {
                for (int32_t t = 0; t < static_cast<int32_t>(g.counts.size()); ++t) {
                    if (g.subscribes(0, t) || g.counts[t] == 0) continue;
                    int32_t first = 0;
                    for (int32_t u = 0; u < t; ++u) first += g.counts[u];
                    g.owned.insert(g.owned.begin() + g.owned_offsets[1], first);
                    for (std::size_t m = 1; m < g.owned_offsets.size(); ++m) ++g.owned_offsets[m];
                    break;
                }
            }
            const std::vector<int32_t> expected = homogeneous_by_definition(g);
            AssignResult r = assign("server-uniform", g.problem());
            CHECK(r.owner == expected);
            // the homogeneous form (one row for everyone) gives the same
            Problem shared = g.problem();
            const std::vector<int64_t> row_offsets{0, g.sub_offsets[1]};
            shared.sub_offsets = view(row_offsets);
            shared.sub_topics = View<int32_t>{g.sub_topics.data(), static_cast<std::size_t>(g.sub_offsets[1])};
            shared.shared_members = g.members();
            CHECK(assign("server-uniform", shared).owner == expected);
            owner = r.owner;
            if (step == 0) continue;   // step 1 starts from claims on every partition (what members give up is all that is free)
            const int32_t gone = std::uniform_int_distribution<int32_t>(0, g.members() - 1)(rng);
            for (int32_t& o : owner) o = o == gone ? kUnassigned : o;
        }
    }
}

TEST_CASE("server-uniform refuses a partition held twice even when one claim is on a topic its member left") {
    ServerGroup g;
    g.counts = {2, 2};
    g.sub_topics = {0, 1, 0};   // member 0: topics 0 and 1; member 1: topic 0 only
    g.sub_offsets = {0, 2, 3};
    g.owned = {2, 0, 2};        // member 1 still lists partition 0 of topic 1, which member 0 holds
    g.owned_offsets = {0, 1, 3};
    CHECK_THROWS_WITH_AS(assign("server-uniform", g.problem()),
                         doctest::Contains("members 0 and 1 both hold partition 0 of topic 1"), std::invalid_argument);
    // a member listing its own partition twice is one claim
    g.owned = {2, 2, 0};
    g.owned_offsets = {0, 2, 3};
    CHECK_NOTHROW(assign("server-uniform", g.problem()));
}

TEST_CASE("subscriptions are checked whether or not a list is ascending") {
    ServerGroup g;
    g.counts = {1, 1, 1};
    g.owned_offsets = {0, 0, 0};
    g.sub_offsets = {0, 2, 4};
    for (const auto& [topics, message] : std::vector<std::pair<std::vector<int32_t>, std::string>>{
             {{0, 1, 1, 3}, "member 1: subscribed topic id 3 is not in 0..2"},
             {{0, 1, 2, 2}, "member 1: subscribes to topic 2 twice"},
             {{0, 1, -1, 2}, "member 1: subscribed topic id -1 is not in 0..2"},
             {{1, 0, 2, 1}, ""}}) {
        g.sub_topics = topics;
        if (message.empty()) CHECK_NOTHROW(assign("server-range", g.problem()));
        else CHECK_THROWS_WITH_AS(assign("server-range", g.problem()), doctest::Contains(message.c_str()), std::invalid_argument);
    }
}
