// The metrics rows of an assigned batch, one per group, as an Arrow record batch in
// kafkagroup.spark.executor.METRICS_ARROW_SCHEMA's column order and types:
//   group_id utf8, strategy utf8, members int32, topics int32, partitions int64, assigned, unassigned,
//   withheld, moved, moved_lower_bound, balance_gap, max_load, min_load (int64), engine_us float64,
//   unknown_topics list<utf8>, dropped_claims int64, error utf8.
// The rules: a failed group (refused by the builder or the caller, or reported by the engine) has null
// engine metrics and engine_us (its members, topics, partitions, unknown topics and dropped claims are
// still counted); moved_lower_bound is null where the engine knows no bound (-1), so a sum skips it;
// error is all null here: the messages are worded by the front end, which sets the column when a
// group failed.
#pragma once

#include <string>

#include "kafkagroup/arrow_export.hpp"
#include "kafkagroup/group_builder.hpp"
#include "kafkagroup/problem.hpp"

namespace kafkagroup {

struct MetricsRowsView {
    StringColumn group_ids;          // [G]
    std::string strategy;
    View<int64_t> member_offsets;    // [G+1]
    View<int64_t> topic_offsets;     // [G+1]
    View<int64_t> part_offsets;      // [TU+1] (group g's partitions: part_offsets[topic_offsets[g]]..)
    View<int64_t> metrics;           // [kMetricCount * G] column-major, batch.hpp metric_names() order
    View<double> engine_us;          // [G]
    View<uint8_t> failed;            // [G] or empty (none failed): nonzero = the group failed
    View<int64_t> unknown_offsets;   // [G+1] into unknown_entries (or into unknown_names when that is empty)
    NameColumn unknown_names;
    View<int64_t> unknown_entries;   // entries of unknown_names, or empty: entry i names unknown topic i
    View<int64_t> dropped_claims;    // [G]
};

// Throws std::invalid_argument for views that do not fit each other (the message names the array).
ArrowRecordBatch metrics_rows(const MetricsRowsView& in);

}  // namespace kafkagroup
