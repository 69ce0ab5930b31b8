// Kafka 4's server RangeAssignor (org.apache.kafka.coordinator.group.assignor.RangeAssignor, 4.4.0).
//
// Kafka sorts the members (static ones first by instance id, then by member id: our member order) and,
// for each topic, hands each subscriber in that order the next contiguous range: floor(P/n) partitions,
// one more while P mod n lasts. Its homogeneous and heterogeneous paths differ only in how they count a
// topic's subscribers, so both are the classic range split without racks, which this shares
// (contiguous_ranges, csrc/kafkagroup/range.cpp). Racks are ignored, as Kafka 4.4.0 ignores them.
#include "kafkagroup/assignors.hpp"
#include "kafkagroup/server/server_assignors.hpp"

namespace kafkagroup {
namespace server {

std::vector<int32_t> assign_range(const Problem& p, const Prepared& pr) {
    return contiguous_ranges(pr, topic_subscribers(p, pr));
}

}  // namespace server
}  // namespace kafkagroup
