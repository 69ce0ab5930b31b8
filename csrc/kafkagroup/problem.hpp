// The compact assignment problem: the data contract across the native boundary (see DESIGN.md).
//
// Strings never reach this layer. Topics are dense ids 0..T-1 ordered as Java's String.compareTo
// orders their names; partition p of topic t has the global id topic_base[t] + p, so "sorted by
// topic, then partition" is "sorted by global id". Members are dense ids 0..M-1 in Java's MemberInfo
// order (static members by group.instance.id, then dynamic members by member id); every assignor
// that needs another order derives it here, in C++.
//
// All arrays are borrowed views (the caller keeps them alive for the duration of a call); nothing
// here allocates per partition except the result. Capacity: at most kMaxPartitions partitions in
// total (ids are int32; offsets are int64 so CSR arrays may exceed that many entries).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kafkagroup {

template <class T>
struct View {
    const T* data = nullptr;
    std::size_t size = 0;
    const T& operator[](std::size_t i) const { return data[i]; }
    const T* begin() const { return data; }
    const T* end() const { return data + size; }
    bool empty() const { return size == 0; }
};

// Rack ids are dense int32 ids interned by the caller; 0 means "no rack". Any id >= 1 is accepted: ids
// beyond what dense interning produces are renumbered (rack_ids.hpp) before tables are sized by them.
// The largest total partition count the engine accepts: 2^28 (268,435,456). Every assignor allocates
// owner[P] (4 bytes per partition, 1 GiB at the bound) and per-partition working arrays several times
// that, so a count near int32's 2^31-1 would allocate tens of GB before failing. prepare() refuses a
// larger total before anything is sized by it. (Kafka clusters hold millions of partitions at most.)
constexpr int64_t kMaxPartitions = int64_t{1} << 28;
constexpr int32_t kNoRack = 0;
// Generation of a member whose owned partitions carry no generation (eager sticky user data v0, or
// a subscription older than v2).
constexpr int32_t kUnknownGeneration = -1;
constexpr int32_t kUnassigned = -1;

struct Problem {
    View<int32_t> partition_count;   // [T] partitions per topic (>= 0)
    View<int64_t> sub_offsets;       // [M+1] CSR offsets into sub_topics
    View<int32_t> sub_topics;        // topic ids each member subscribes to (any order, no duplicates)
    View<int64_t> owned_offsets;     // [M+1] or empty: CSR offsets into owned_partitions
    View<int32_t> owned_partitions;  // global partition ids each member claims to own
    View<int32_t> generation;        // [M] or empty: generation of each member's claims (-1 unknown)
    View<int32_t> member_rack;       // [M] or empty: rack id of each member (0 = none)
    View<int64_t> replica_offsets;   // [P+1] or empty: CSR offsets into replica_racks
    View<int32_t> replica_racks;     // rack ids of each partition's replicas (0 never appears)
    // The homogeneous form (Kafka's HOMOGENEOUS subscription type): when >= 0, the group has this many
    // members and every one of them subscribes to all of sub_topics, in that order; sub_offsets is then
    // {0, sub_topics.size} (member 0's row, which is everyone's). A 10,000-member group subscribed to 1,000
    // topics passes 1,000 ids instead of 10M. The server assignors read this form as it is (they read
    // member 0's row only when subscriptions are equal); engine.cpp expands it to the CSR for the others.
    int64_t shared_members = -1;
};

// Derived, validated facts about a Problem. Built once per call by `prepare` (validate.cpp), which
// throws std::invalid_argument naming the member / topic / partition index on any inconsistency:
// negative counts, offsets that are not monotone or out of range, unknown topic ids, partition ids out
// of range. Claims are not judged here (duplicates and stale generations follow each assignor's rule).
struct Prepared {
    int32_t num_topics = 0;
    int32_t num_members = 0;
    int32_t num_partitions = 0;
    std::vector<int32_t> topic_base;  // [T+1] prefix sums of partition_count
    bool has_owned = false;
    bool has_racks = false;           // member racks and replica racks both given
    // Kafka's allSubscriptionsEqual (subscriptions_uniform) and the topics some member subscribes to
    // (subscribed_topics), computed once here: the assignors and the metrics read them (each was
    // recomputed up to three times per call, an O(subscriptions) pass each time).
    bool uniform = false;
    std::vector<char> topic_subscribed;  // [T] 1 where some member subscribes to the topic
    // Every claim names a partition of 0..P-1 (checked by prepare(problem), or by check_claims after
    // prepare(problem, false)). Until then no claim may be used as an index.
    bool claims_checked = true;

    int32_t topic_of(int32_t partition) const;  // binary search over topic_base
};

// check_claims_now = false leaves the claims' range check to the caller (claims_checked is then false): for a
// path that reads the claims once, checking each before it uses it (sticky.hpp, assign_sticky_clean), and calls
// check_claims only when it gives way. Errors come out as with the check in place: when a later check fails,
// prepare() checks the claims first.
Prepared prepare(const Problem& problem, bool check_claims_now = true);
// Every claim in 0..P-1, else std::invalid_argument naming the first bad claim's member (member order).
void check_claims(const Problem& problem, const Prepared& prepared);

}  // namespace kafkagroup
