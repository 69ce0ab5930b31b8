// Entry point of the sticky assignors: choose the builder (Kafka's allSubscriptionsEqual test).
#include "kafkagroup/sticky/sticky.hpp"

#include "kafkagroup/subscriptions.hpp"
#include "kafkagroup/sticky/sticky_input.hpp"

namespace kafkagroup {

std::vector<int32_t> assign_sticky(const Problem& problem, const Prepared& prepared, const PreviousOwners& prev,
                                   PartitionTally* tally) {
    if (prepared.num_members == 0) return std::vector<int32_t>(static_cast<std::size_t>(prepared.num_partitions), kUnassigned);
    const bool uniform = prepared.uniform;
    const sticky::Input input(problem, prepared, prev);
    if (!uniform) return sticky::build_general(input);  // aligns racks itself, after its own clean-up
    // With racks the passes below still move partitions: nothing is final before they ran.
    std::vector<int32_t> owner = sticky::build_uniform(input, input.rack_aware ? nullptr : tally);
    // Kafka's constrained builder fills racks greedily; the ownerless partitions can be placed on matching
    // racks without changing any quota, kept partition or the moved count (every member takes any topic).
    if (input.rack_aware) {
        sticky::align_racks(input, owner, /*across_topics=*/true);
        sticky::exchange_for_racks(input, owner, {}, {});
    }
    return owner;
}

AssignResult assign_sticky_call(const Problem& problem, const Prepared& prepared, PreviousOwners& prev,
                                PartitionTally& tally, bool cooperative) {
    AssignResult result;
    if (prepared.num_members > 0 && prepared.uniform && !prev.none()) {
        const sticky::Input input(problem, prepared, prev);
        if (!input.rack_aware) {
            Transfers transfers(problem, prepared, prev);
            // Written over prev.owner's array (sticky.hpp): taken here, its data (input.sticky_owner) unchanged.
            std::vector<int32_t> over = std::move(prev.owner);
            if (!cooperative) {
                result.owner = sticky::build_uniform(input, &tally, &over);
                return result;
            }
            result.owner = sticky::build_uniform(input, &tally, &over, &transfers);
            result.withheld = transfers.finish(prepared, result.owner, &tally);
            return result;
        }
    }
    // Nobody owned anything (nothing to withhold: the target is final as written), or a path whose owner[] is
    // final only after every pass (racks, different subscriptions), counted by compute_metrics.
    if (!cooperative || prev.none()) {
        result.owner = assign_sticky(problem, prepared, prev, &tally);
        return result;
    }
    result.owner = assign_sticky(problem, prepared, prev);
    result.withheld = withhold_transfers(problem, prepared, prev, result.owner);
    return result;
}

}  // namespace kafkagroup
