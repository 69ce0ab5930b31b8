// Shared by the C++ tests: doctest checks that two results agree.
#pragma once

#include <doctest/doctest.h>

#include "kafkagroup/result.hpp"

namespace kafkagroup_test {

// Every field of two Metrics, one CHECK each (a failure names the field).
inline void check_same_metrics(const kafkagroup::Metrics& a, const kafkagroup::Metrics& b) {
    CHECK(a.balance_gap == b.balance_gap);
    CHECK(a.max_load == b.max_load);
    CHECK(a.min_load == b.min_load);
    CHECK(a.assigned == b.assigned);
    CHECK(a.unassigned == b.unassigned);
    CHECK(a.withheld == b.withheld);
    CHECK(a.moved == b.moved);
    CHECK(a.moved_lower_bound == b.moved_lower_bound);
}

}  // namespace kafkagroup_test
