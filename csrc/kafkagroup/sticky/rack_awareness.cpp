// KIP-881 for the sticky assignors: when racks matter, and whether a member matches a partition.
#include "kafkagroup/rack_ids.hpp"
#include "kafkagroup/sticky/sticky_input.hpp"
#include "kafkagroup/subscriptions.hpp"

namespace kafkagroup {
namespace sticky {

bool use_rack_aware_assignment(const Problem& p, const Prepared& pr) {
    if (!pr.has_racks) return false;
    // Kafka only looks at partitions of subscribed topics (AbstractPartitionAssignor builds
    // partitionsPerTopic from the subscriptions).
    const std::vector<char>& subscribed = pr.topic_subscribed;
    const std::size_t R = static_cast<std::size_t>(max_rack_id(p)) + 1;
    std::vector<char> member_rack(R, 0), replica_rack(R, 0);
    bool any_member_rack = false;
    for (std::size_t m = 0; m < p.member_rack.size; ++m)
        if (p.member_rack[m] != kNoRack) member_rack[p.member_rack[m]] = 1, any_member_rack = true;
    if (!any_member_rack) return false;
    // Union of replica racks; then: does every partition carry exactly that union?
    std::size_t union_size = 0;
    for (int32_t t = 0; t < pr.num_topics; ++t) {
        if (!subscribed[t]) continue;
        for (int32_t part = pr.topic_base[t]; part < pr.topic_base[t + 1]; ++part)
            for (int64_t i = p.replica_offsets[part]; i < p.replica_offsets[part + 1]; ++i)
                if (!replica_rack[p.replica_racks[i]]) replica_rack[p.replica_racks[i]] = 1, ++union_size;
    }
    bool overlap = false;
    for (std::size_t r = 1; r < R; ++r) overlap = overlap || (member_rack[r] && replica_rack[r]);
    if (!overlap) return false;
    // A partition's rack set equals the union iff its distinct racks number union_size (they are a
    // subset of the union by construction). Duplicated replica racks are counted once via a stamp.
    std::vector<int32_t> stamp(R, -1);
    for (int32_t t = 0; t < pr.num_topics; ++t) {
        if (!subscribed[t]) continue;
        for (int32_t part = pr.topic_base[t]; part < pr.topic_base[t + 1]; ++part) {
            std::size_t distinct = 0;
            for (int64_t i = p.replica_offsets[part]; i < p.replica_offsets[part + 1]; ++i)
                if (stamp[p.replica_racks[i]] != part) stamp[p.replica_racks[i]] = part, ++distinct;
            if (distinct != union_size) return true;
        }
    }
    return false;
}

bool Input::racks_match(int32_t m, int32_t part) const {
    if (!rack_aware) return true;
    const int32_t rack = problem.member_rack[m];
    if (rack == kNoRack) return true;
    for (int64_t i = problem.replica_offsets[part]; i < problem.replica_offsets[part + 1]; ++i)
        if (problem.replica_racks[i] == rack) return true;
    return false;
}

Input::Input(const Problem& p, const Prepared& pr, const PreviousOwners& prev)
    : problem(p), prepared(pr), M(pr.num_members), T(pr.num_topics), P(pr.num_partitions),
      topic_subscribed(pr.topic_subscribed), any_owned(!prev.none()),
      sticky_owner(prev.none() ? nullptr : prev.owner.data()), rack_aware(use_rack_aware_assignment(p, pr)) {
    // Kafka keeps a previously owned partition only when its racks match the owner's (rack-aware mode):
    // rack alignment ranks above stickiness, balance above both.
    // The dropped owners are remembered as weak owners (see weak_owner).
    if (rack_aware) {
        if (prev.none()) owner_storage_.assign(static_cast<std::size_t>(P), kUnassigned);
        else owner_storage_ = prev.owner;
        weak_owner_.assign(static_cast<std::size_t>(P), kUnassigned);
        for (int32_t part = 0; part < P; ++part)
            if (owner_storage_[part] >= 0 && !racks_match(owner_storage_[part], part)) {
                weak_owner_[part] = owner_storage_[part];
                owner_storage_[part] = kUnassigned;
            }
        sticky_owner = owner_storage_.data();
        weak_owner = weak_owner_.data();
    } else {
        owned_count = prev.owned.data();
        if (!sticky_owner && !pr.uniform) {   // the general builder reads sticky_owner per partition
            owner_storage_.assign(static_cast<std::size_t>(P), kUnassigned);
            sticky_owner = owner_storage_.data();
        }
    }
}

}  // namespace sticky
}  // namespace kafkagroup
