// Facts about the members' subscriptions that several assignors and the metrics need, computed one way.
#pragma once

#include <vector>

#include "kafkagroup/problem.hpp"

namespace kafkagroup {

// True when every member subscribes to exactly the same set of topics (and there is >= 1 member).
// Kafka's allSubscriptionsEqual. O(subscriptions), a memcmp per member in the usual case.
bool subscriptions_uniform(const Problem& problem, const Prepared& prepared);

// [T] 1 where some member subscribes to topic t, else 0. With `uniform` (subscriptions_uniform is true)
// member 0's list is everyone's: O(T + its topics) instead of O(T + subscriptions).
std::vector<char> subscribed_topics(const Problem& problem, const Prepared& prepared, bool uniform = false);

}  // namespace kafkagroup
