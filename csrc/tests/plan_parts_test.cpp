// plan_batch.hpp part_bounds: how plan_parts cuts a batch, checked against the rule it states (every group in
// exactly one part, parts of 1/(2 * spread) of the groups left within [min, max], the last part what is left).
// Linked into the same program as engine_test.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "kafkagroup/plan_batch.hpp"

using namespace kafkagroup;

TEST_CASE("part_bounds: every group in one part, parts shrinking from max to min toward the end") {
    for (const int64_t groups : {0, 1, 2, 7, 99, 100, 101, 1200, 10000, 100003}) {
        for (const PartSizes sizes : {PartSizes{1250, 100, 2}, PartSizes{2000, 100, 16}, PartSizes{7, 3, 1},
                                      PartSizes{5, 5, 2}, PartSizes{1, 1, 1}, PartSizes{10, 50, 2},
                                      PartSizes{groups + 5, 1, 2}}) {
            CAPTURE(groups);
            CAPTURE(sizes.max_groups);
            CAPTURE(sizes.min_groups);
            CAPTURE(sizes.spread);
            const std::vector<int64_t> b = part_bounds(groups, sizes);
            REQUIRE(!b.empty());
            CHECK(b.front() == 0);
            CHECK(b.back() == groups);
            const int64_t least = std::min(sizes.min_groups, sizes.max_groups);
            for (std::size_t p = 0; p + 1 < b.size(); ++p) {
                const int64_t size = b[p + 1] - b[p], left = groups - b[p];
                CHECK(size >= 1);   // ascending: each group once
                // the rule, stated plainly: ceil(left / (2 * spread)) within [least, max], or what is left
                const int64_t want = std::min(left, std::max(least, std::min(sizes.max_groups,
                                                                           (left + 2 * sizes.spread - 1) / (2 * sizes.spread))));
                CHECK(size == want);
                if (p > 0) CHECK(size <= b[p] - b[p - 1]);   // never growing
            }
        }
    }
    // the example of plan_batch.hpp
    const std::vector<int64_t> b = part_bounds(10000, PartSizes{1250, 100, 2});
    std::vector<int64_t> sizes;
    for (std::size_t p = 0; p + 1 < b.size(); ++p) sizes.push_back(b[p + 1] - b[p]);
    CHECK(sizes == std::vector<int64_t>{1250, 1250, 1250, 1250, 1250, 938, 703, 528, 396, 297, 222, 167, 125, 100,
                                        100, 100, 74});
    // min == max: equal parts, the last one smaller (what plan_parts cut before the sizes shrank)
    CHECK(part_bounds(10, PartSizes{4, 4, 3}) == std::vector<int64_t>{0, 4, 8, 10});
    CHECK_THROWS_AS(part_bounds(10, PartSizes{0, 1, 1}), std::invalid_argument);
    CHECK_THROWS_AS(part_bounds(10, PartSizes{4, 0, 1}), std::invalid_argument);
    CHECK_THROWS_AS(part_bounds(10, PartSizes{4, 1, 0}), std::invalid_argument);
    CHECK_THROWS_AS(part_bounds(-1, PartSizes{4, 1, 1}), std::invalid_argument);
}
