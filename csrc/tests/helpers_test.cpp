// The small helpers several assignors share (stable_order.hpp, subscriptions.hpp, rack_ids.hpp, runs.hpp) and the
// batch planners' worker_pool.hpp, checked against the plain statement of what each computes. Linked into the
// same program as engine_test.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <numeric>
#include <random>
#include <system_error>
#include <thread>
#include <vector>

#include "kafkagroup/problem.hpp"
#include "kafkagroup/rack_ids.hpp"
#include "kafkagroup/runs.hpp"
#include "kafkagroup/stable_order.hpp"
#include "kafkagroup/subscriptions.hpp"
#include "kafkagroup/worker_pool.hpp"

using namespace kafkagroup;

namespace {

template <class T>
View<T> view(const std::vector<T>& v) {
    return View<T>{v.data(), v.size()};
}

std::vector<int32_t> stable_sorted_indices(const std::vector<int64_t>& keys) {
    std::vector<int32_t> order(keys.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return keys[a] < keys[b]; });
    return order;
}

// Subscriptions in CSR form; each member's topics in a shuffled order (the contract allows any order).
struct Subscriptions {
    std::vector<int32_t> partition_count;
    std::vector<int64_t> sub_offsets{0};
    std::vector<int32_t> sub_topics;
    Problem problem() const {
        Problem p;
        p.partition_count = view(partition_count);
        p.sub_offsets = view(sub_offsets);
        p.sub_topics = view(sub_topics);
        return p;
    }
};

}  // namespace

TEST_CASE("counting_sort_pays: a table of up to 4n + 64 entries") {
    CHECK(counting_sort_pays(1, 0));
    CHECK(counting_sort_pays(64, 0));
    CHECK_FALSE(counting_sort_pays(65, 0));
    CHECK(counting_sort_pays(4 * 1000 + 64, 1000));
    CHECK_FALSE(counting_sort_pays(4 * 1000 + 65, 1000));
}

TEST_CASE("stable_order_by_key is std::stable_sort of the indices, on both sides of the counting-sort cut") {
    CHECK(stable_order_by_key({}).empty());
    CHECK(stable_order_by_key({7}) == std::vector<int32_t>{0});
    CHECK(stable_order_by_key({3, 1, 3, 0, 1}) == std::vector<int32_t>{3, 1, 4, 0, 2});
    std::mt19937_64 rng(5);
    for (int round = 0; round < 400; ++round) {
        const std::size_t n = std::uniform_int_distribution<std::size_t>(1, 300)(rng);
        // Spans from a handful of values (many ties, counting sort) to far beyond 4n + 64 (stable_sort).
        const int64_t lo = std::uniform_int_distribution<int64_t>(0, 1'000'000)(rng);
        const int64_t span = round % 4 == 0 ? int64_t{1} << 40 : std::uniform_int_distribution<int64_t>(0, 8 * n + 200)(rng);
        std::vector<int64_t> keys(n);
        for (int64_t& k : keys) k = lo + std::uniform_int_distribution<int64_t>(0, span)(rng);
        CHECK(stable_order_by_key(keys) == stable_sorted_indices(keys));
    }
}

TEST_CASE("subscribed_topics marks exactly the topics some member lists; the uniform shortcut agrees") {
    std::mt19937 rng(11);
    for (int round = 0; round < 300; ++round) {
        Subscriptions s;
        const int topics = std::uniform_int_distribution<int>(1, 9)(rng);
        s.partition_count.assign(static_cast<std::size_t>(topics), 1);
        const int members = std::uniform_int_distribution<int>(1, 6)(rng);
        const bool uniform = round % 3 == 0;
        std::vector<int32_t> shared;
        for (int t = 0; t < topics; ++t)
            if (std::bernoulli_distribution(0.5)(rng)) shared.push_back(t);
        for (int m = 0; m < members; ++m) {
            std::vector<int32_t> list = shared;
            if (!uniform) {
                list.clear();
                for (int t = 0; t < topics; ++t)
                    if (std::bernoulli_distribution(0.4)(rng)) list.push_back(t);
            }
            std::shuffle(list.begin(), list.end(), rng);
            s.sub_topics.insert(s.sub_topics.end(), list.begin(), list.end());
            s.sub_offsets.push_back(static_cast<int64_t>(s.sub_topics.size()));
        }
        const Problem p = s.problem();
        const Prepared pr = prepare(p);
        std::vector<char> expected(static_cast<std::size_t>(topics), 0);
        for (int32_t t : s.sub_topics) expected[t] = 1;
        CHECK(subscribed_topics(p, pr) == expected);
        // Equal sets per member, whatever their order, is what subscriptions_uniform recognises.
        std::vector<std::vector<int32_t>> sets;
        for (int m = 0; m < members; ++m) {
            std::vector<int32_t> set(s.sub_topics.begin() + s.sub_offsets[m], s.sub_topics.begin() + s.sub_offsets[m + 1]);
            std::sort(set.begin(), set.end());
            sets.push_back(set);
        }
        const bool equal_sets = std::all_of(sets.begin(), sets.end(), [&](const auto& set) { return set == sets[0]; });
        CHECK(subscriptions_uniform(p, pr) == equal_sets);
        if (equal_sets) CHECK(subscribed_topics(p, pr, /*uniform=*/true) == expected);
    }
    Subscriptions none;
    none.partition_count = {1, 2};
    const Problem p = none.problem();
    const Prepared pr = prepare(p);
    CHECK_FALSE(subscriptions_uniform(p, pr));  // no member: Kafka's allSubscriptionsEqual needs one
    CHECK(subscribed_topics(p, pr) == std::vector<char>{0, 0});
}

TEST_CASE("max_member_rack and max_rack_id: the largest id, kNoRack when there is none") {
    Problem p;
    CHECK(max_member_rack(p) == kNoRack);
    CHECK(max_rack_id(p) == kNoRack);
    const std::vector<int32_t> member_rack{0, 3, 1}, replica_racks{2, 7, 1};
    p.member_rack = view(member_rack);
    CHECK(max_member_rack(p) == 3);
    CHECK(max_rack_id(p) == 3);
    p.replica_racks = view(replica_racks);
    CHECK(max_member_rack(p) == 3);  // replicas do not count for members' tables
    CHECK(max_rack_id(p) == 7);
}

TEST_CASE("run_end finds where a run ends, wherever it ends within the 16- and 8-entry steps") {
    // Runs of every length from 1 to 70 starting at every offset 0..19, ended by a different value in a,
    // in b, or by the end of the range: the wide steps (16 entries per compare with SSE2, 8 without) must
    // stop at the same entry as a plain loop.
    for (int32_t begin = 0; begin < 20; ++begin)
        for (int32_t length = 1; length <= 70; ++length)
            for (int which = 0; which < 3; ++which) {
                std::vector<int32_t> a(static_cast<std::size_t>(begin + length + 5), 7), b(a.size(), -1);
                const int32_t stop = begin + length;
                if (which == 0) a[stop] = 8;
                if (which == 1) b[stop] = 3;
                const int32_t end = which == 2 ? stop : static_cast<int32_t>(a.size());
                CHECK(kafkagroup::run_end(b.data(), begin, end) == (which == 1 ? stop : end));
                CHECK(kafkagroup::run_end(a.data(), begin, end) == (which == 0 ? stop : end));
                CHECK(kafkagroup::run_end(a.data(), b.data(), begin, end) == stop);
            }
}

TEST_CASE("consecutive_end: the portable scan, the AVX2 one (where the CPU has it) and the dispatch agree with a plain loop") {
    // Runs of consecutive ids of every length 1..100 from every offset 0..9, broken by a wrong id (one too
    // high, one too low, a repeat) or by the end of the range, so that every step width (32, 16, 8, 4, 1)
    // meets the break at each of its positions.
    for (int64_t begin = 0; begin < 10; ++begin)
        for (int64_t length = 1; length <= 100; ++length)
            for (int how = 0; how < 4; ++how) {
                std::vector<int32_t> claims(static_cast<std::size_t>(begin + length + 40));
                for (std::size_t k = 0; k < claims.size(); ++k) claims[k] = 1000 + static_cast<int32_t>(k);
                const int64_t stop = begin + length;
                if (how == 0) claims[stop] += 1;
                if (how == 1) claims[stop] -= 2;
                if (how == 2) claims[stop] = claims[stop - 1];
                const int64_t end = how == 3 ? stop : static_cast<int64_t>(claims.size());
                CHECK(kafkagroup::consecutive_end_portable(claims.data(), begin, end) == stop);
                CHECK(kafkagroup::consecutive_end(claims.data(), begin, end) == stop);
#if defined(KAFKAGROUP_RUNS_AVX2)
                if (kafkagroup::runs_detail::kHaveAvx2) CHECK(kafkagroup::consecutive_end_avx2(claims.data(), begin, end) == stop);
#endif
            }
}

TEST_CASE("fill_run writes exactly n copies of v, any value, any offset and length, nothing around them") {
    // Through wmemset where wchar_t is 32 bits: negative values (kUnassigned) and the largest ids must come back
    // as they went in, and the entries before and after the run must stay untouched, at every alignment.
    for (int32_t value : {-1, 0, 5, 268435455, INT32_MIN, INT32_MAX})
        for (std::size_t offset = 0; offset < 9; ++offset)
            for (std::size_t n = 0; n <= 70; ++n) {
                std::vector<int32_t> a(offset + n + 9, 42);
                kafkagroup::fill_run(a.data() + offset, n, value);
                for (std::size_t i = 0; i < a.size(); ++i)
                    CHECK(a[i] == (i >= offset && i < offset + n ? value : 42));
            }
}

// worker_pool.hpp: every item of the shared queue is done once, by the loops that could be started, and a
// thread that cannot be started (the thread limit) leaves the call with fewer loops instead of ending the
// process (std::thread's destructor on the joinable threads already started).
TEST_CASE("run_workers: a failed thread start leaves the queue to the loops already running") {
    for (const int refuse_from : {1, 2, 3, 99}) {   // the first worker index whose thread cannot be started
        constexpr int kItems = 10000, kWorkers = 4;
        std::atomic<int> next{0};
        std::vector<std::atomic<int>> done(kItems);
        std::vector<int> by_worker(kWorkers, 0);
        auto loop = [&](int w) {
            for (int i = next++; i < kItems; i = next++) {
                ++done[static_cast<std::size_t>(i)];
                ++by_worker[static_cast<std::size_t>(w)];
            }
        };
        int attempts = 0;
        auto start = [&](auto& work, int w) {
            ++attempts;
            if (w >= refuse_from) throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again));
            return std::thread(work, w);
        };
        const int ran = run_workers(kWorkers, loop, start);
        CHECK(ran == std::min(refuse_from, kWorkers));
        CHECK(attempts == std::min(refuse_from, kWorkers - 1));   // none tried after the first refusal
        for (int i = 0; i < kItems; ++i) CHECK(done[static_cast<std::size_t>(i)] == 1);
        for (int w = ran; w < kWorkers; ++w) CHECK(by_worker[static_cast<std::size_t>(w)] == 0);
    }
    CHECK(run_workers(1, [](int) {}) == 1);
    CHECK(run_workers(0, [](int) {}) == 1);   // the caller's loop always runs
}
