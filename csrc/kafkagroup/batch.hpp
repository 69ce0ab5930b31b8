// Many groups in one call: the compact problems of G groups laid end to end (a CSR of groups over
// the same arrays a single Problem uses), assigned one after the other by the engine, results in flat
// arrays. Why: a fleet is mostly small groups, for which the fixed cost of one call from Python
// (argument conversion, result objects, metrics dict: ~20 us) is several times the engine's work
// (~3 us for a group of 5 members and 75 partitions). One call per batch pays it once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kafkagroup/problem.hpp"
#include "kafkagroup/result.hpp"

namespace kafkagroup {

// Which optional inputs a group uses (bits of GroupBatch::group_inputs). A group without a bit is
// assigned exactly as a Problem whose view is empty, even when the batch carries the array for others.
enum GroupInput : uint8_t {
    kInputOwned = 1,        // owned_offsets + owned_partitions
    kInputGeneration = 2,   // generation
    kInputMemberRack = 4,   // member_rack
    kInputReplicaRacks = 8, // replica_offsets + replica_racks
    kSkipGroup = 128,       // not assigned at all (the caller already knows it is bad): owner -1, metrics 0
};

// Group g owns topics topic_offsets[g]..topic_offsets[g+1] of partition_count, members
// member_offsets[g]..member_offsets[g+1] of the member arrays, and the partitions of its topics (in
// batch order: the partitions of group 0's topics, then group 1's, ...). A group whose non-negative
// counts sum to more than kMaxPartitions has no partitions in the batch (and is reported as invalid). Offsets into sub_topics,
// owned_partitions and replica_racks are positions in those flat arrays; the ids stored in them are
// the group's own (topic ids 0..T_g-1, partition ids 0..P_g-1, member ids 0..M_g-1, rack ids >= 1),
// exactly as in a single Problem. All views are borrowed for the duration of the call.
struct GroupBatch {
    View<int64_t> topic_offsets;     // [G+1] into partition_count, from 0, non-decreasing
    View<int64_t> member_offsets;    // [G+1] into the member arrays, from 0, non-decreasing
    View<int32_t> partition_count;   // [T] partitions per topic
    View<int64_t> sub_offsets;       // [M+1] into sub_topics
    View<int32_t> sub_topics;
    View<int64_t> owned_offsets;     // [M+1] or empty
    View<int32_t> owned_partitions;
    View<int32_t> generation;        // [M] or empty
    View<int32_t> member_rack;       // [M] or empty
    View<int64_t> replica_offsets;   // [P+1] or empty (P = sum of partition_count)
    View<int32_t> replica_racks;
    View<uint8_t> group_inputs;      // [G] GroupInput bits, or empty: every group uses every array given
};

// A group the engine refused (bad input) or failed on (a broken invariant: a defect). Its partitions
// are left unassigned and its metrics zero; the other groups are unaffected.
struct GroupError {
    enum Kind : int8_t { kInvalidInput = 1, kInvariant = 2 };
    int64_t group = 0;
    Kind kind = kInvalidInput;
    std::string message;   // the engine's own message (names member / topic / partition indexes)
};

constexpr int kMetricCount = 8;  // columns of BatchResult::metrics, in metric_names() order

struct BatchResult {
    std::vector<int64_t> part_offsets;      // [G+1] each group's partitions in `owner`
    std::vector<int32_t> owner;             // [P] group-local member id, kUnassigned (also for failed groups)
    std::vector<int64_t> withheld_offsets;  // [G+1] into `withheld`
    std::vector<int32_t> withheld;          // group-local partition ids, ascending per group
    std::vector<int64_t> metrics;           // [kMetricCount * G] column-major: metric k of group g at k * G + g
                                            // (a front end hands each metric out as a column without a copy)
    std::vector<double> engine_us;          // [G] wall time of each group's assignment, microseconds
    std::vector<GroupError> errors;         // ascending by group
};

// Metrics fields in the column order of BatchResult::metrics.
std::vector<std::string> metric_names();

// Assigns every group with `strategy` on up to `threads` threads (>= 1; groups are handed out in
// chunks of about equal work, results land in place, so the output does not depend on `threads`).
// Throws std::invalid_argument for an unknown strategy or a malformed batch (offsets that do not
// fit the arrays); a group whose own problem is invalid is reported in `errors` instead. Pure
// function of its arguments: safe to call from many threads at once.
BatchResult assign_batch(const std::string& strategy, const GroupBatch& batch, int threads);

}  // namespace kafkagroup
