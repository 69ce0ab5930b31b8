// The C++ engine on its own, without Python: `make cxx-test` builds csrc/kafkagroup as a static library
// and links this program (doctest, from Debian's doctest-dev). It checks what the engine promises at its
// own boundary: prepare()'s refusals, the load index against the one-at-a-time procedure it replaces,
// and the general builder's invariants (validity, balance, stability) on seeded random groups.
// The Python suite checks the same engine through pybind11; this runs in a second and needs no build of
// the extension, so a change in csrc/ can be checked first here.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "kafkagroup/engine.hpp"
#include "kafkagroup/problem.hpp"
#include "test_views.hpp"
#include "kafkagroup/sticky/load_index.hpp"

using namespace kafkagroup;

namespace {

using kafkagroup_test::problem_of;

// Owns the arrays a Problem borrows.
struct Group {
    std::vector<int32_t> partition_count;
    std::vector<int64_t> sub_offsets{0};
    std::vector<int32_t> sub_topics;
    std::vector<int64_t> owned_offsets;
    std::vector<int32_t> owned_partitions;
    std::vector<int32_t> generation;

    void add_member(const std::vector<int32_t>& topics) {
        sub_topics.insert(sub_topics.end(), topics.begin(), topics.end());
        sub_offsets.push_back(static_cast<int64_t>(sub_topics.size()));
    }
    int32_t members() const { return static_cast<int32_t>(sub_offsets.size()) - 1; }
    // Claims: every member owns what `owner` gives it, at generation `gen`.
    void own(const std::vector<int32_t>& owner, int32_t gen) {
        owned_offsets.assign(1, 0);
        owned_partitions.clear();
        generation.assign(members(), gen);
        for (int32_t m = 0; m < members(); ++m) {
            for (int32_t p = 0; p < static_cast<int32_t>(owner.size()); ++p)
                if (owner[p] == m) owned_partitions.push_back(p);
            owned_offsets.push_back(static_cast<int64_t>(owned_partitions.size()));
        }
    }
    Problem problem() const {
        return problem_of(partition_count, sub_offsets, sub_topics, owned_offsets, owned_partitions, generation);
    }
};

std::string refusal(const Group& g) {
    try {
        prepare(g.problem());
    } catch (const std::invalid_argument& e) {
        return e.what();
    }
    return "";
}

// A random group: 1-5 topics of 0-12 partitions, 1-8 members each subscribing to a random non-empty set.
Group random_group(std::mt19937& rng, bool uniform) {
    Group g;
    const int topics = std::uniform_int_distribution<int>(1, 5)(rng);
    for (int t = 0; t < topics; ++t) g.partition_count.push_back(std::uniform_int_distribution<int>(0, 12)(rng));
    const int members = std::uniform_int_distribution<int>(1, 8)(rng);
    for (int m = 0; m < members; ++m) {
        std::vector<int32_t> subs;
        for (int t = 0; t < topics; ++t)
            if (uniform || std::bernoulli_distribution(0.5)(rng)) subs.push_back(t);
        if (subs.empty()) subs.push_back(std::uniform_int_distribution<int>(0, topics - 1)(rng));
        g.add_member(subs);
    }
    return g;
}

std::vector<int32_t> topic_of_partition(const Group& g) {
    std::vector<int32_t> topic;
    for (int32_t t = 0; t < static_cast<int32_t>(g.partition_count.size()); ++t)
        topic.insert(topic.end(), g.partition_count[t], t);
    return topic;
}

bool subscribes(const Group& g, int32_t m, int32_t t) {
    return std::find(g.sub_topics.begin() + g.sub_offsets[m], g.sub_topics.begin() + g.sub_offsets[m + 1], t) !=
           g.sub_topics.begin() + g.sub_offsets[m + 1];
}

// Kafka's verifyValidityAndBalance, restated: every partition of a subscribed topic has exactly one owner
// that subscribes to it, and no partition could move to an eligible member with >= 2 fewer partitions.
void check_valid_and_balanced(const Group& g, const std::vector<int32_t>& owner) {
    const auto topic = topic_of_partition(g);
    std::vector<int64_t> load(g.members(), 0);
    for (std::size_t p = 0; p < owner.size(); ++p) {
        bool subscribed = false;
        for (int32_t m = 0; m < g.members(); ++m) subscribed |= subscribes(g, m, topic[p]);
        if (!subscribed) {
            CHECK(owner[p] == kUnassigned);
            continue;
        }
        REQUIRE(owner[p] >= 0);
        CHECK(subscribes(g, owner[p], topic[p]));
        ++load[owner[p]];
    }
    for (std::size_t p = 0; p < owner.size(); ++p) {
        if (owner[p] < 0) continue;
        for (int32_t m = 0; m < g.members(); ++m)
            if (subscribes(g, m, topic[p])) CHECK_MESSAGE(load[m] >= load[owner[p]] - 1, "partition " << p);
    }
}

}  // namespace

TEST_CASE("prepare refuses inconsistent problems, naming what is wrong") {
    Group g;
    g.partition_count = {3, -1};
    g.add_member({0});
    CHECK(refusal(g) == "topic 1: negative partition count -1");

    g.partition_count = {3};
    g.sub_topics = {4};
    CHECK(refusal(g).find("topic") != std::string::npos);

    g.sub_topics = {0};
    g.owned_offsets = {0, 1};
    g.owned_partitions = {3};  // topic 0 has partitions 0..2
    g.generation = {1};
    CHECK(refusal(g).find("partition") != std::string::npos);

    // Refused before anything is sized by the count (kMaxPartitions), naming the topic that crosses it.
    Group huge;
    huge.partition_count = {static_cast<int32_t>(kMaxPartitions), 1};
    huge.add_member({0});
    CHECK(refusal(huge).find("topic 1") != std::string::npos);
    CHECK(refusal(huge).find("2^28") != std::string::npos);
    huge.partition_count = {INT32_MAX};
    CHECK(refusal(huge).find("topic 0") != std::string::npos);

    Group bad_offsets;
    bad_offsets.partition_count = {1};
    bad_offsets.sub_offsets = {0, 1, 0};
    bad_offsets.sub_topics = {0};
    CHECK(refusal(bad_offsets).find("offsets") != std::string::npos);
}

TEST_CASE("the load index hands out partitions exactly as one-at-a-time to the least loaded, lowest id") {
    std::mt19937 rng(7);
    sticky::LoadIndex index;
    for (int round = 0; round < 2000; ++round) {
        const int members = std::uniform_int_distribution<int>(1, 30)(rng);
        // Narrow and wide load spreads exercise the histogram and the sorted path.
        const int spread = round % 2 ? 5 : 500;
        std::vector<int32_t> load(members), subscribers;
        for (int m = 0; m < members; ++m) {
            load[m] = std::uniform_int_distribution<int>(0, spread)(rng);
            if (std::bernoulli_distribution(0.7)(rng)) subscribers.push_back(m);
        }
        if (subscribers.empty()) continue;
        const int64_t n = std::uniform_int_distribution<int>(0, 3 * spread)(rng);

        std::vector<int64_t> expected(members, 0), current(load.begin(), load.end());
        for (int64_t k = 0; k < n; ++k) {
            int32_t best = subscribers[0];
            for (int32_t m : subscribers)
                if (current[m] < current[best]) best = m;  // ascending ids: ties keep the lower id
            ++current[best];
            ++expected[best];
        }
        auto level = index.water_level(subscribers.data(), subscribers.size(), load.data(), n);
        int64_t handed = 0;
        for (int32_t m : subscribers) {
            const int64_t got = sticky::LoadIndex::grant(load[m], level);
            CHECK_MESSAGE(got == expected[m], "round " << round << " member " << m);
            handed += got;
        }
        CHECK(handed == n);
    }
}

TEST_CASE("sticky: valid, balanced, and an unchanged group gets its assignment back") {
    std::mt19937 rng(11);
    for (int round = 0; round < 400; ++round) {
        Group g = random_group(rng, round % 3 == 0);
        for (const char* strategy : {"sticky", "cooperative-sticky"}) {
            const AssignResult first = assign(strategy, g.problem());
            check_valid_and_balanced(g, first.owner);
            CHECK(first.metrics.unassigned == 0);

            Group again = g;
            again.own(first.owner, 1);
            const AssignResult second = assign(strategy, again.problem());
            CHECK_MESSAGE(second.owner == first.owner, strategy << " round " << round);
            CHECK(second.metrics.moved == 0);
            CHECK(second.metrics.withheld == 0);
        }
    }
}

TEST_CASE("cooperative-sticky withholds exactly the partitions that change owner, then hands them over") {
    std::mt19937 rng(13);
    for (int round = 0; round < 300; ++round) {
        Group g = random_group(rng, round % 2 == 0);
        const AssignResult base = assign("cooperative-sticky", g.problem());
        // One more member subscribing to everything: some partitions must move to it.
        Group grown = g;
        grown.own(base.owner, 1);
        std::vector<int32_t> all(g.partition_count.size());
        for (std::size_t t = 0; t < all.size(); ++t) all[t] = static_cast<int32_t>(t);
        grown.add_member(all);
        grown.generation.push_back(-1);
        grown.owned_offsets.push_back(grown.owned_offsets.back());

        const AssignResult withholding = assign("cooperative-sticky", grown.problem());
        for (int32_t p : withholding.withheld) {
            CHECK(withholding.owner[p] == kUnassigned);
            CHECK(base.owner[p] >= 0);
        }
        for (std::size_t p = 0; p < base.owner.size(); ++p)
            if (withholding.owner[p] >= 0 && base.owner[p] >= 0) CHECK(withholding.owner[p] == base.owner[p]);

        // The withheld partitions are revoked (their owners no longer claim them); the next round assigns them.
        Group revoked = grown;
        std::vector<int32_t> kept = withholding.owner;
        revoked.own(kept, 2);
        const AssignResult handover = assign("cooperative-sticky", revoked.problem());
        CHECK(handover.withheld.empty());
        check_valid_and_balanced(revoked, handover.owner);
    }
}

TEST_CASE("range and roundrobin assign every subscribed partition to a subscriber") {
    std::mt19937 rng(17);
    for (int round = 0; round < 300; ++round) {
        Group g = random_group(rng, round % 2 == 0);
        for (const char* strategy : {"range", "roundrobin"}) {
            const AssignResult r = assign(strategy, g.problem());
            const auto topic = topic_of_partition(g);
            for (std::size_t p = 0; p < r.owner.size(); ++p) {
                if (r.owner[p] >= 0) CHECK(subscribes(g, r.owner[p], topic[p]));
            }
            CHECK(r.metrics.unassigned == 0);
        }
    }
}

TEST_CASE("an unknown strategy is refused") {
    Group g;
    g.partition_count = {1};
    g.add_member({0});
    CHECK_THROWS_AS(assign("nosuch", g.problem()), std::invalid_argument);
}
