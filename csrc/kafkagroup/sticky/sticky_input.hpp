// What the sticky builders read, derived once per call from the Problem. Internal to sticky/.
#pragma once

#include <cstdint>
#include <vector>

#include "kafkagroup/metrics.hpp"
#include "kafkagroup/ownership.hpp"
#include "kafkagroup/problem.hpp"
#include "kafkagroup/sticky/sticky.hpp"

namespace kafkagroup {
namespace sticky {

struct Input {
    const Problem& problem;
    const Prepared& prepared;
    int32_t M = 0, T = 0, P = 0;
    const std::vector<char>& topic_subscribed;  // [T] 1 when some member subscribes to the topic (Prepared's)
    // Some member validly owned some partition (previous_owners() recorded an owner).
    bool any_owned = false;
    // [P] valid previous owner the builders try to keep, or -1: previous_owners()' owner[], or (rack-aware
    // mode only) a copy without the owners whose racks do not match. Null when nobody owned anything and
    // the group takes the uniform builder without racks, which then reads no owner (no P entries of -1
    // made for it); the general builder and the rack code, which read it per partition, get those -1s.
    const int32_t* sticky_owner = nullptr;
    // [M] partitions each member owns in sticky_owner, without racks (previous_owners() counted them as it
    // recorded them: no pass over sticky_owner to count them again); null in rack-aware mode.
    const int64_t* owned_count = nullptr;
    // [P] rack-aware mode only (else nullptr): the valid previous owner whose racks do not match, or -1.
    // Such an owner ranks below rack alignment but above any other mismatched member: it keeps the
    // partition unless a rack-matching member can take it without hurting balance, so that a result fed
    // back as owned comes back unchanged (a fixed point) instead of trading mismatched partitions.
    const int32_t* weak_owner = nullptr;
    // KIP-881. Enabled by Kafka's rule (rack_awareness.cpp); when off, racks_match() is always true.
    bool rack_aware = false;

    Input(const Problem& p, const Prepared& pr, const PreviousOwners& prev);
    Input(const Input&) = delete;
    Input& operator=(const Input&) = delete;

    bool subscribed(int32_t t) const { return topic_subscribed[t] != 0; }
    int32_t topic_begin(int32_t t) const { return prepared.topic_base[t]; }
    int32_t topic_end(int32_t t) const { return prepared.topic_base[t + 1]; }
    // Does member m sit in a rack holding a replica of partition `part`? True when not rack aware or
    // the member has no rack (Kafka's racksMismatch is false for a member without rack).
    bool racks_match(int32_t m, int32_t part) const;
    // The weak owner of `part` (see weak_owner), or -1.
    int32_t weak(int32_t part) const { return weak_owner ? weak_owner[part] : -1; }

private:
    std::vector<int32_t> owner_storage_, weak_owner_;
};

// Kafka's AbstractPartitionAssignor.useRackAwareAssignment: some member rack is a replica rack, and not
// every partition has its replicas on exactly the set of all replica racks.
bool use_rack_aware_assignment(const Problem& problem, const Prepared& prepared);

// `tally` (may be null) counts each stretch as build_uniform writes it (metrics.hpp); only without racks.
// With previous owners and without racks, owner[] is written over `over` (the previous owners, as
// in.sticky_owner has them: that very array, or null for a copy made here) and returned in its storage;
// `transfers` (may be null) withholds the cooperative transfers of each stretch (stretch_writer.hpp).
std::vector<int32_t> build_uniform(const Input& in, PartitionTally* tally, std::vector<int32_t>* over = nullptr,
                                   Transfers* transfers = nullptr);
std::vector<int32_t> build_general(const Input& in);

// Rack-aware mode, both paths (rack_alignment.cpp): redistributes the partitions not held by their sticky
// owner among their holders to put the most on rack-matching members; each holder keeps its count per
// topic, or (across_topics, for equal subscriptions) its total. An aligned placement is left as it is.
void align_racks(const Input& in, std::vector<int32_t>& owner, bool across_topics);

// Rack-aware mode, different subscriptions (rack_alignment.cpp): a partition on a mismatched member one
// above its topic's lowest load moves to a rack-matching subscriber at that lowest load (the load vector
// is the same multiset, no partition leaves its sticky owner, one more rack match). Per topic, using the
// topic's subscribers tsub_member[tsub_off[t], tsub_off[t+1]). Returns whether anything moved.
// O(subscriptions + P * replicas).
// Rack-aware mode, both paths (rack_exchange.cpp): the exact pass after the cheap ones, on groups small
// enough for it: chains of moves that keep the load vector and the partitions kept by their sticky owner,
// for the most rack matches, then the fewest partitions away from their weak owner. The subscribers of
// topic t are tsub_member[tsub_off[t], tsub_off[t+1]), or every member when tsub_off is empty.
void exchange_for_racks(const Input& in, std::vector<int32_t>& owner, const std::vector<int64_t>& tsub_off,
                        const std::vector<int32_t>& tsub_member);

bool shift_to_matching_racks(const Input& in, std::vector<int32_t>& owner, std::vector<int32_t>& load,
                             const std::vector<int64_t>& tsub_off, const std::vector<int32_t>& tsub_member);

}  // namespace sticky
}  // namespace kafkagroup
