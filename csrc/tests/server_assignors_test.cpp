// Kafka 4's server-side assignors (csrc/kafkagroup/server/) at the engine boundary, without Python: validity,
// the homogeneous builder's promise (loads within one, moves equal to the exact lower bound), the heterogeneous
// builder's stability, range's closed form, and the refusal of a partition held twice. Seeded random groups
// over several rounds, each round's result the next one's previous target assignment. Kafka's own classes
// judge the same assignors in tests/core/test_server_assignors_kafka.py.
#include <doctest/doctest.h>

#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kafkagroup/engine.hpp"
#include "kafkagroup/problem.hpp"

using namespace kafkagroup;

namespace {

template <class T>
View<T> view(const std::vector<T>& v) {
    return View<T>{v.data(), v.size()};
}

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
        Problem p;
        p.partition_count = view(counts);
        p.sub_offsets = view(sub_offsets);
        p.sub_topics = view(sub_topics);
        p.owned_offsets = view(owned_offsets);
        p.owned_partitions = view(owned);
        return p;
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
