// The deterministic assignors. Each returns owner[P] (member id or kUnassigned); engine.cpp wraps them.
#pragma once

#include <cstdint>
#include <vector>

#include "kafkagroup/problem.hpp"

namespace kafkagroup {

// Subscribers of each topic as CSR, members in ascending id (= Java's MemberInfo order). O(M + subs).
struct TopicSubscribers {
    std::vector<int64_t> offsets;  // [T+1]
    std::vector<int32_t> members;
    const int32_t* begin(int32_t t) const { return members.data() + offsets[t]; }
    const int32_t* end(int32_t t) const { return members.data() + offsets[t + 1]; }
    int64_t count(int32_t t) const { return offsets[t + 1] - offsets[t]; }
};
TopicSubscribers topic_subscribers(const Problem& problem, const Prepared& prepared);

// Apache Kafka's RangeAssignor, including KIP-881 rack-aware assignment (range.cpp, range_racks.cpp).
std::vector<int32_t> assign_range(const Problem& problem, const Prepared& prepared);

// Apache Kafka's RoundRobinAssignor (roundrobin.cpp).
std::vector<int32_t> assign_roundrobin(const Problem& problem, const Prepared& prepared);

}  // namespace kafkagroup
