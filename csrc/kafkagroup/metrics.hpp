// The quality certificate of an assignment, computed from the problem and owner[] alone.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "kafkagroup/ownership.hpp"
#include "kafkagroup/problem.hpp"
#include "kafkagroup/result.hpp"

namespace kafkagroup {

// The per-partition part of the metrics (loads, unassigned, moved), counted stretch by stretch in partition
// order. A builder that writes owner[] in partition order counts each stretch right after writing it, while
// that stretch of owner[] and of the previous owners is still in the cache (kTallyChunk partitions: 128 KB of
// each), instead of reading both arrays back from memory in a pass of its own (32 MB at 4M partitions);
// compute_metrics counts whatever no builder counted. Only owners that are final when counted may be counted
// (not before rack passes); a cooperative transfer found later is taken back with withdraw().
class PartitionTally {
public:
    static constexpr int32_t kTallyChunk = int32_t{1} << 15;

    PartitionTally(const Prepared& prepared, const PreviousOwners& prev);
    // Counts the partitions of topics up to t_end - 1 not counted yet, from the whole arrays owner[] and
    // prev.owner; owner holds at least those partitions.
    void count_until(int32_t t_end, const int32_t* owner);
    // Counts partitions counted() .. end - 1: now[i] and before[i] are the owner and the previous owner of
    // partition counted() + i; before is null when nobody owned anything. For a builder that writes owner[]
    // over the previous owners' own array (sticky/stretch_writer.hpp): it hands each stretch over before it
    // overwrites the previous owners.
    void count_stretch(int32_t end, const int32_t* now, const int32_t* before);
    // Counts partitions counted() .. end - 1 from what a builder knows of them without reading them back:
    // loads[m] of them (an array of num_members) owned by member m, `unassigned` of them free in subscribed
    // topics, `moved` of them given to a member other than their valid previous owner.
    void count_known(int32_t end, const int64_t* loads, int64_t unassigned, int64_t moved);
    // A partition counted as member m's and withheld afterwards (a cooperative transfer without a valid
    // previous owner, found from the claims after every stretch was counted): counted as free instead.
    void withdraw(int32_t m) {
        --loads_[static_cast<std::size_t>(m)];
        ++unassigned_;
    }
    // For a builder that counts as it decides (sticky/clean_claims.cpp: by segments, with no previous owners'
    // array to compare with): every partition counted, with these loads [M], free partitions of subscribed
    // topics (withheld ones included) and moved partitions.
    void count_all(std::vector<int64_t> loads, int64_t unassigned, int64_t moved) {
        loads_ = std::move(loads);
        unassigned_ = unassigned;
        moved_ = moved;
        next_ = pr_.num_partitions;
    }
    int32_t counted() const { return next_; }   // partitions 0 .. counted() - 1 are counted
    const std::vector<int64_t>& loads() const { return loads_; }
    int64_t unassigned() const { return unassigned_; }   // withheld partitions included (see compute_metrics)
    int64_t moved() const { return moved_; }

private:
    const Prepared& pr_;
    const PreviousOwners& prev_;
    std::vector<int64_t> loads_;
    int64_t unassigned_ = 0, moved_ = 0;
    int32_t next_ = 0;    // the first partition not counted
    int32_t topic_ = 0;   // the topic of partition next_ (or the first topic starting at or after it)
};

// Fills every Metrics field (see result.hpp). `prev` is previous_owners(problem, prepared); `tally` holds
// the topics a builder counted already (the rest are counted here). O(P + total subscriptions).
Metrics compute_metrics(const Problem& problem, const Prepared& prepared, const std::vector<int32_t>& owner,
                        const std::vector<int32_t>& withheld, const PreviousOwners& prev, PartitionTally& tally);
Metrics compute_metrics(const Problem& problem, const Prepared& prepared, const std::vector<int32_t>& owner,
                        const std::vector<int32_t>& withheld, const PreviousOwners& prev);

// The members holding partitions of each topic: members[offsets[t] .. offsets[t + 1]) with held[k] of topic
// t's partitions each, in the order of their first partition. `assigned` (the partitions with an owner) sizes
// the lists. O(P).
struct TopicHolders {
    std::vector<int64_t> offsets;   // [T+1]
    std::vector<int32_t> members;
    std::vector<int32_t> held;
};
TopicHolders topic_holders(const Prepared& prepared, const std::vector<int32_t>& owner, int64_t assigned);

// The Metrics fields that follow from the loads (max_load, min_load, balance_gap, moved_lower_bound), given
// per-member loads and valid previous partitions (`owned`, total_owned their sum): compute_metrics' last step,
// also called by an assignor that knows these counts without a pass over owner[] (the server range). The
// holders are asked for only when the balance gap needs them (different subscriptions, loads more than one
// apart). Leaves out's other fields as they are.
void complete_metrics(const Problem& problem, const Prepared& prepared, const std::vector<int64_t>& load,
                      const std::vector<int64_t>& owned, int64_t total_owned, bool nothing_withheld,
                      const std::function<TopicHolders()>& holders_of, Metrics& out);

}  // namespace kafkagroup
