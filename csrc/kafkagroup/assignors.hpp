// The deterministic assignors. Each returns owner[P] (member id or kUnassigned); engine.cpp wraps them.
#pragma once

#include <cstdint>
#include <vector>

#include "kafkagroup/problem.hpp"

namespace kafkagroup {

// Subscribers of each topic, members in ascending id (= Java's MemberInfo order): topic t's list is
// members[first[t] .. first[t] + size[t]). When every member subscribes to the same topics (the usual
// group), all subscribed topics share one list 0..M-1: O(M + T + subscriptions / memcmp) instead of a
// CSR of every subscription (1M entries at 2,000 members x 500 topics). Otherwise a CSR, O(M + subs).
struct TopicSubscribers {
    std::vector<int64_t> first;  // [T]
    std::vector<int64_t> size;   // [T]
    std::vector<int32_t> members;
    const int32_t* begin(int32_t t) const { return members.data() + first[t]; }
    const int32_t* end(int32_t t) const { return members.data() + first[t] + size[t]; }
    int64_t count(int32_t t) const { return size[t]; }
};
TopicSubscribers topic_subscribers(const Problem& problem, const Prepared& prepared);

// Each topic's partitions split into contiguous ranges over its subscribers in ascending id: floor(P/n)
// each and one more for the first P mod n. The classic RangeAssignor without racks and Kafka 4's server
// range assignor are both exactly this (range.cpp; server/range.cpp). O(P + subscriptions).
std::vector<int32_t> contiguous_ranges(const Prepared& prepared, const TopicSubscribers& subscribers);

// Apache Kafka's RangeAssignor, including KIP-881 rack-aware assignment (range.cpp, range_racks.cpp).
std::vector<int32_t> assign_range(const Problem& problem, const Prepared& prepared);

// Apache Kafka's RoundRobinAssignor (roundrobin.cpp).
std::vector<int32_t> assign_roundrobin(const Problem& problem, const Prepared& prepared);

}  // namespace kafkagroup
