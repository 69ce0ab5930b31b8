// The assignment rows of a built and assigned batch, written straight into Arrow's string layout: one
// row (group_id, member_id, topic, partition) per assigned partition, groups in batch order, then topics
// in the group's (Java) order, then partitions ascending -- what kafkagroup.spark.executor hands out.
// Why natively: the rows repeat the group's, member's and topic's names once per partition (~75 rows
// per group of the small-group fleet); gathering them with three pyarrow `take` calls, after numpy
// labelled every partition with its group and topic, cost ~3 us per group, most of it in temporary
// index arrays. Here two passes over owner[] (sizes, then bytes) write the final buffers directly.
#pragma once

#include <cstdint>
#include <memory>

#include "kafkagroup/arrow_export.hpp"
#include "kafkagroup/group_builder.hpp"
#include "kafkagroup/output_memory.hpp"
#include "kafkagroup/problem.hpp"

namespace kafkagroup {

// An uninitialised buffer of n elements (every element is written before it is handed out); never a null
// pointer, even for n = 0 (Arrow and numpy take it as a buffer either way). Its memory may be a block an
// earlier output gave back (output_memory.hpp): nothing here may rely on fresh (zeroed) memory.
template <class T>
struct OutBuffer {
    OutputPtr<T> data;
    std::size_t size = 0;

    explicit OutBuffer(std::size_t n = 0) : data(allocate_output<T>(n)), size(n) {}
};

// One Arrow string column: offsets[rows+1] (int32, from 0) into bytes.
struct StringOut {
    OutBuffer<int32_t> offsets;
    OutBuffer<uint8_t> bytes;
};

struct AssignmentRows {
    std::size_t rows = 0;
    StringOut group_id, member_id, topic;
    OutBuffer<int32_t> partition;
};

// What the rows are gathered from: a built batch (group_builder.hpp BuiltGroups, as laid out by
// build_groups) and its names. Group g's members in MemberInfo order are member_perm[member_offsets[g]..]
// (input member rows, named by member_ids); its topics topic_offsets[g]..topic_offsets[g+1] (named by
// topic_names, one per batch topic) own the batch partitions part_offsets[t]..part_offsets[t+1].
struct BatchNamesView {
    StringColumn group_ids;           // [G]
    StringColumn member_ids;          // [M] input member rows
    StringColumn topic_names;         // [TU]
    View<int64_t> member_offsets;     // [G+1]
    View<int64_t> member_perm;        // [M] MemberInfo position -> input member row
    View<int64_t> topic_offsets;      // [G+1]
    View<int64_t> part_offsets;       // [TU+1]
};

// Rows of groups g0..g1-1 for every batch partition p with owner[p] >= 0 (a group-local member id).
// Throws std::invalid_argument for a layout that does not fit (offsets past arrays, an owner outside its
// group's members, more than 2^31-1 bytes in one string column: cut the range smaller) and
// std::logic_error if an assigned row would name a null group, member or topic (the builder refuses
// such groups, so they can have no assigned partitions).
AssignmentRows assignment_rows(const BatchNamesView& names, View<int32_t> owner, int64_t g0, int64_t g1);

// The rows as one Arrow record batch (group_id, member_id, topic utf8, partition int32: the layout of
// kafkagroup.spark.executor.ASSIGNMENT_ARROW_SCHEMA), taking over their buffers without a copy.
ArrowRecordBatch assignment_rows_batch(AssignmentRows&& rows);

}  // namespace kafkagroup
