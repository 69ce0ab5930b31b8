// Rack-aware range assignment (KIP-881), as Apache Kafka's RangeAssignor.assignPartitions does it.
#pragma once

#include <vector>

#include "kafkagroup/assignors.hpp"

namespace kafkagroup {

// Replays Kafka's three phases exactly:
//  1. topics are grouped by (same subscriber set, same partition count when subscriber racks exist);
//     a group of >= 2 such topics is assigned partition index by partition index to the first member
//     whose rack holds a replica of that partition in every topic of the group (co-partitioning first);
//     a lone topic that needs rack awareness gives each subscriber, in order, up to its quota of the
//     partitions that have a replica on its rack (a member without a rack matches any partition);
//  2. then plain range fills every topic's remaining partitions within the same per-member quotas.
// A topic "needs" rack awareness when its subscribers have racks, those racks meet the replica racks,
// and not every partition has replicas on every rack (AbstractPartitionAssignor.useRackAwareAssignment).
// Cost: O(P + replicas + subscriptions) plus a sort of the topics by subscriber set.
std::vector<int32_t> assign_range_with_racks(const Problem& problem, const Prepared& prepared,
                                             const TopicSubscribers& subscribers);

}  // namespace kafkagroup
