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

// How plan_parts cuts a batch into parts of whole groups: each part takes 1/(2 * spread) of the groups not yet in a
// part, at least min_groups and at most max_groups (the last part: what is left). So the parts shrink toward the
// end -- at 10,000 groups, max 1,250, min 100, spread 2: 1,250 x 5, 938, 703, 528, ..., 125, 100 x 3, 74 (17 parts).
// Why shrinking (guided self-scheduling): the threads take parts in order from one counter, so a call ends when
// the part started last ends; with equal parts one thread idles for up to a whole part at the end (measured on
// 2 threads, 10,000 small groups, 8 parts of 1,250: 1.3-4.8 ms of ~37 ms per call), with shrinking ones for up to
// a part of min_groups, while the early parts stay large (fewer parts: each has a fixed cost, and max_groups
// bounds the intermediate arrays a thread allocates at once). The cut depends on the group count and these sizes
// only, never on timing or on options.threads: a one-thread call cuts the parts a many-thread call cuts (spread
// is the thread count the sizes are for -- the cores -- not the threads a call runs on), so the outputs'
// record batches are the same whatever the thread count. Sizes are counted in groups, not in estimated work:
// a part of many small groups averages their differences out; one group far bigger than the others is a tail
// of its own wherever it falls.
struct PartSizes {
    int64_t max_groups = 1;   // >= 1
    int64_t min_groups = 1;   // >= 1; above max_groups it is max_groups (equal parts of max_groups)
    int spread = 1;           // >= 1
};

// The bounds of the parts of a batch of `groups` groups (ascending from 0 to `groups`: part p holds groups
// bounds[p]..bounds[p+1]-1, every group in exactly one part; {0} for no groups). Throws std::invalid_argument
// for a size below 1.
std::vector<int64_t> part_bounds(int64_t groups, const PartSizes& sizes);

// A batch cut into parts of whole groups (part_bounds), each planned whole by plan_batch (one thread each, the
// other options as given) on options.threads threads that take parts in order from one counter (on one thread
// too: the parts then run one after the other on the calling thread, the same work as on more, so that a
// one-thread call and a many-thread call differ by their threads alone).
// Why: a front end that runs batches on its own threads holds its lock (Python's GIL) between each batch's
// native call and the next -- reading the next batch's input, importing the outputs -- and its
// threads wait for each other there, start one after the other and end unevenly (the fleet loop on 2 threads,
// 10,000 small groups: ~3-4 ms of ~32 per call with a thread idle); here nothing but the threads' own work runs
// between parts, and the shrinking last parts end the call within a small part of each other.
// Parts are cut only where each can be read on its own: a shared catalog (a per-group one labels its rows with
// the batch's group indices) and name columns of plain strings (a dictionary column would be hashed whole by
// every part); otherwise the batch is one part, planned with options.threads inside assign_batch, as
// plan_batch does. Outputs are those of plan_batch on each part's slice of the batch, in part order: the rows
// and metrics rows of part p are those of its groups alone, as plan_batch writes them for a batch of those
// groups (errors aside, which are reported here in the batch's own indices).
struct PlannedParts {
    std::vector<int64_t> part_groups{0};   // part p holds the batch's groups part_groups[p]..part_groups[p+1]
    // each part's outputs (rows, row_batches, metrics, chunk_groups in the part's own group indices) and flags;
    // its built arrays and engine result are freed once its rows are written (errors: below)
    std::vector<PlannedBatch> parts;
    std::vector<BuildError> build_errors;  // every part's builder errors in the batch's indices, ascending by group
    std::vector<GroupError> engine_errors; // every part's engine errors in the batch's indices, ascending by group
};

PlannedParts plan_parts(const TopicCatalog& catalog, const NamedGroups& groups, const StringColumn& group_ids,
                        View<uint8_t> skip, const PlanOptions& options, const PartSizes& sizes);

}  // namespace kafkagroup
