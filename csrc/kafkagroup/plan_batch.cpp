// plan_batch(): the three steps in order, then the rows cut into chunks of whole groups (the rule of
// kafkagroup.spark.executor.output_chunks: a chunk ends before the group that would take it past
// chunk_partitions batch partitions; a group bigger than that is a chunk of its own).
#include "kafkagroup/plan_batch.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

namespace kafkagroup {
namespace {

std::string_view name_entry(const NameColumn& names, int64_t entry) {
    if (!names.dictionary) return names.strings.at(static_cast<std::size_t>(entry));
    return names.strings.at(static_cast<std::size_t>(names.codes[static_cast<std::size_t>(entry)]));
}

// The batch topics' names in Arrow's layout (what the output rows and the withheld rows name topics by).
StringOut topic_names_of(const BuiltGroups& built, const NameColumn& sub_names) {
    uint64_t bytes = 0;
    for (const int64_t e : built.topic_entries) bytes += name_entry(sub_names, e).size();
    if (bytes > static_cast<uint64_t>(INT32_MAX))
        throw std::invalid_argument("plan_batch: the batch's topic names take " + std::to_string(bytes) +
                                    " bytes, more than one Arrow string column holds (2^31-1)");
    StringOut out{OutBuffer<int32_t>(built.topic_entries.size() + 1), OutBuffer<uint8_t>(static_cast<std::size_t>(bytes))};
    int32_t end = 0;
    out.offsets.data[0] = 0;
    for (std::size_t t = 0; t < built.topic_entries.size(); ++t) {
        const std::string_view name = name_entry(sub_names, built.topic_entries[t]);
        if (!name.empty()) std::memcpy(out.bytes.data.get() + end, name.data(), name.size());
        end += static_cast<int32_t>(name.size());
        out.offsets.data[t + 1] = end;
    }
    return out;
}

}  // namespace

PlannedBatch plan_batch(const TopicCatalog& catalog, const NamedGroups& groups, const StringColumn& group_ids,
                        View<uint8_t> skip, const PlanOptions& options) {
    PlannedBatch out;
    out.built = build_groups(catalog, groups, options.strict);
    BuiltGroups& built = out.built;
    const std::size_t G = built.group_inputs.size();
    if (group_ids.size() != G)
        throw std::invalid_argument("plan_batch: " + std::to_string(group_ids.size()) + " group ids for " +
                                    std::to_string(G) + " groups");
    if (!skip.empty() && skip.size != G)
        throw std::invalid_argument("plan_batch: skip: expected " + std::to_string(G) + " entries, got " +
                                    std::to_string(skip.size));
    bool skipped = !built.errors.empty();
    for (std::size_t g = 0; g < skip.size; ++g)
        if (skip[g]) {
            built.group_inputs[g] |= kSkipGroup;
            skipped = true;
        }
    out.topic_names = topic_names_of(built, groups.sub_names);
    if (skipped && options.stop_on_error) return out;

    out.result = assign_batch(options.strategy, built.view(), options.threads);
    out.assigned = true;
    if (!out.result.errors.empty() && options.stop_on_error) return out;

    const auto& topic_offsets = built.topic_offsets;
    const auto& part_offsets = built.part_offsets;
    std::vector<int64_t> group_end(G);   // batch partition where each group ends
    for (std::size_t g = 0; g < G; ++g) group_end[g] = part_offsets[static_cast<std::size_t>(topic_offsets[g + 1])];
    const BatchNamesView names{group_ids, groups.member_ids,
                               StringColumn{View<int64_t>{},
                                            View<uint8_t>{out.topic_names.bytes.data.get(), out.topic_names.bytes.size},
                                            View<uint8_t>{},
                                            View<int32_t>{out.topic_names.offsets.data.get(), out.topic_names.offsets.size}},
                               View<int64_t>{built.member_offsets.data(), built.member_offsets.size()},
                               View<int64_t>{built.member_perm.data(), built.member_perm.size()},
                               View<int64_t>{topic_offsets.data(), topic_offsets.size()},
                               View<int64_t>{part_offsets.data(), part_offsets.size()}};
    const View<int32_t> owner{out.result.owner.data(), out.result.owner.size()};
    const int64_t limit = std::max<int64_t>(1, options.chunk_partitions);
    out.chunk_groups.push_back(0);
    for (std::size_t g0 = 0; g0 < G;) {
        const int64_t start = part_offsets[static_cast<std::size_t>(topic_offsets[g0])];
        const auto past = std::upper_bound(group_end.begin(), group_end.end(), start + limit);
        const std::size_t g1 = std::max(static_cast<std::size_t>(past - group_end.begin()), g0 + 1);
        AssignmentRows rows = assignment_rows(names, owner, static_cast<int64_t>(g0), static_cast<int64_t>(g1));
        if (options.arrow)
            out.row_batches.push_back(assignment_rows_batch(std::move(rows)));
        else
            out.rows.push_back(std::move(rows));
        out.chunk_groups.push_back(static_cast<int64_t>(g1));
        g0 = g1;
    }
    out.rows_written = true;
    if (options.arrow) {
        std::vector<uint8_t> failed(G, 0);
        for (std::size_t g = 0; g < G; ++g) failed[g] = (built.group_inputs[g] & kSkipGroup) != 0;
        for (const GroupError& e : out.result.errors) failed[static_cast<std::size_t>(e.group)] = 1;
        const BatchResult& r = out.result;
        out.metrics = metrics_rows(MetricsRowsView{
            group_ids, options.strategy, View<int64_t>{built.member_offsets.data(), built.member_offsets.size()},
            View<int64_t>{topic_offsets.data(), topic_offsets.size()}, View<int64_t>{part_offsets.data(), part_offsets.size()},
            View<int64_t>{r.metrics.data(), r.metrics.size()}, View<double>{r.engine_us.data(), r.engine_us.size()},
            View<uint8_t>{failed.data(), failed.size()},
            View<int64_t>{built.unknown_offsets.data(), built.unknown_offsets.size()}, groups.sub_names,
            View<int64_t>{built.unknown_entries.data(), built.unknown_entries.size()},
            View<int64_t>{built.dropped_claims.data(), built.dropped_claims.size()}});
    }
    return out;
}

}  // namespace kafkagroup
