// Entry point of the sticky assignors: choose the builder (Kafka's allSubscriptionsEqual test).
#include "kafkagroup/sticky/sticky.hpp"

#include "kafkagroup/subscriptions.hpp"
#include "kafkagroup/sticky/sticky_input.hpp"

namespace kafkagroup {

std::vector<int32_t> assign_sticky(const Problem& problem, const Prepared& prepared, const PreviousOwners& prev) {
    if (prepared.num_members == 0) return std::vector<int32_t>(static_cast<std::size_t>(prepared.num_partitions), kUnassigned);
    const bool uniform = prepared.uniform;
    const sticky::Input input(problem, prepared, prev);
    if (!uniform) return sticky::build_general(input);  // aligns racks itself, after its own clean-up
    std::vector<int32_t> owner = sticky::build_uniform(input);
    // Kafka's constrained builder fills racks greedily; the ownerless partitions can be placed on matching
    // racks without changing any quota, kept partition or the moved count (every member takes any topic).
    if (input.rack_aware) {
        sticky::align_racks(input, owner, /*across_topics=*/true);
        sticky::exchange_for_racks(input, owner, {}, {});
    }
    return owner;
}

}  // namespace kafkagroup
