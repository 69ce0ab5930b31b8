// A batch of named groups all the way to its output rows in one call: build_groups() -> assign_batch() ->
// assignment_rows() per output chunk. Why one call: a front end that holds a lock around its own code
// (Python's GIL) releases it once per batch for the whole native work, and does no work of its own between
// the three steps (the fleet loop's GIL-held share of CPU caps how it scales on threads; with three calls
// the glue around and between them -- result arrays handed out and taken back in, the builder's arrays
// turned into a GroupBatch, the output ranges and the names widened for assignment_rows -- held it for
// ~0.5 ms per batch plus a share that grew with the group count). Each step is exactly the function it
// calls: the output is the same as calling them one after the other.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kafkagroup/batch.hpp"
#include "kafkagroup/group_builder.hpp"
#include "kafkagroup/metrics_rows.hpp"
#include "kafkagroup/output_rows.hpp"

namespace kafkagroup {

struct PlanOptions {
    std::string strategy;
    bool strict = true;            // build_groups' strict
    int threads = 1;               // assign_batch's threads
    bool stop_on_error = false;    // stop after the first step that finds a bad group (the caller raises)
    int64_t chunk_partitions = 1 << 18;   // batch partitions per output chunk, at most (a bigger group: alone)
    bool arrow = false;            // rows as Arrow record batches (row_batches) plus the metrics rows (metrics)
};

struct PlannedBatch {
    BuiltGroups built;
    bool assigned = false;          // false: stopped (stop_on_error) before assigning; result and rows empty
    BatchResult result;
    StringOut topic_names;          // [TU] each batch topic's name (built.topic_entries of the sub_names)
    bool rows_written = false;      // false: stopped (stop_on_error) after assigning; rows empty
    std::vector<int64_t> chunk_groups;   // output chunk c holds groups chunk_groups[c]..chunk_groups[c+1]
    std::vector<AssignmentRows> rows;    // per chunk (unless options.arrow)
    std::vector<ArrowRecordBatch> row_batches;   // per chunk (options.arrow): assignment_rows_batch()
    ArrowRecordBatch metrics;            // options.arrow, once rows are written: metrics_rows() of the batch
};

// `group_ids` [G] names the groups in the rows; with options.arrow a group failed (metrics_rows) when it was
// refused (by the builder or `skip`) or the engine reported it; `skip` [G] (or empty) marks groups the caller refuses on its
// own (kSkipGroup, as the builder's own refusals). Throws what the three steps throw for a malformed layout.
PlannedBatch plan_batch(const TopicCatalog& catalog, const NamedGroups& groups, const StringColumn& group_ids,
                        View<uint8_t> skip, const PlanOptions& options);

}  // namespace kafkagroup
