// plan_batch(): the three steps in order, then the rows cut into chunks of whole groups (the rule of
// kafkagroup.spark.executor.output_chunks: a chunk ends before the group that would take it past
// chunk_partitions batch partitions; a group bigger than that is a chunk of its own).
#include "kafkagroup/plan_batch.hpp"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>

#include "kafkagroup/worker_pool.hpp"

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

// v[b, e), or v itself when it is empty (absent stays absent).
template <class T>
View<T> rows_of(const View<T>& v, std::size_t b, std::size_t e) {
    return v.empty() ? v : View<T>{v.data + b, e - b};
}

// Strings r0..r1-1 of a checked column (an absent column stays absent).
StringColumn rows_of(const StringColumn& s, std::size_t r0, std::size_t r1) {
    if (s.offset_count() == 0) return s;
    StringColumn out;
    if (s.wide())
        out.offsets = View<int64_t>{s.offsets.data + r0, r1 - r0 + 1};
    else
        out.offsets32 = View<int32_t>{s.offsets32.data + r0, r1 - r0 + 1};
    out.bytes = View<uint8_t>{s.bytes.data + (s.offset(r0) - s.offset(0)), static_cast<std::size_t>(s.offset(r1) - s.offset(r0))};
    out.valid = rows_of(s.valid, r0, r1);
    return out;
}

// offsets[r0..r1] shifted to start at 0, kept in `store`.
View<int64_t> rebased(const View<int64_t>& offsets, std::size_t r0, std::size_t r1, std::vector<int64_t>& store) {
    store.resize(r1 - r0 + 1);
    for (std::size_t i = r0; i <= r1; ++i) store[i - r0] = offsets[i] - offsets[r0];
    return View<int64_t>{store.data(), store.size()};
}

// Groups g0..g1-1 of a batch whose layout is checked (check_layout), as a batch of their own: views into the
// batch's arrays, offsets rebased into the slice's own vectors.
struct Slice {
    NamedGroups groups;
    StringColumn group_ids;
    View<uint8_t> skip;
    int64_t g0 = 0, m0 = 0, e0 = 0, c0 = 0;   // the slice's first group, member, sub entry and owned entry
    std::vector<int64_t> member_offsets, sub_offsets, owned_offsets;
};

void cut(const NamedGroups& in, const StringColumn& group_ids, View<uint8_t> skip, std::size_t g0, std::size_t g1,
         Slice& s) {
    const auto m0 = static_cast<std::size_t>(in.member_offsets[g0]), m1 = static_cast<std::size_t>(in.member_offsets[g1]);
    const auto e0 = static_cast<std::size_t>(in.sub_offsets[m0]), e1 = static_cast<std::size_t>(in.sub_offsets[m1]);
    s.g0 = static_cast<int64_t>(g0);
    s.m0 = static_cast<int64_t>(m0);
    s.e0 = static_cast<int64_t>(e0);
    NamedGroups& out = s.groups;
    out.member_offsets = rebased(in.member_offsets, g0, g1, s.member_offsets);
    out.member_ids = rows_of(in.member_ids, m0, m1);
    out.instance_ids = rows_of(in.instance_ids, m0, m1);
    out.sub_offsets = rebased(in.sub_offsets, m0, m1, s.sub_offsets);
    out.sub_valid = rows_of(in.sub_valid, m0, m1);
    out.sub_names.strings = rows_of(in.sub_names.strings, e0, e1);
    out.sub_same = rows_of(in.sub_same, m0, m1);
    if (!in.owned_offsets.empty()) {
        const auto c0 = static_cast<std::size_t>(in.owned_offsets[m0]), c1 = static_cast<std::size_t>(in.owned_offsets[m1]);
        s.c0 = static_cast<int64_t>(c0);
        out.owned_offsets = rebased(in.owned_offsets, m0, m1, s.owned_offsets);
        out.owned_names.strings = rows_of(in.owned_names.strings, c0, c1);
        out.owned_partition = rows_of(in.owned_partition, c0, c1);
        out.owned_partition_valid = rows_of(in.owned_partition_valid, c0, c1);
    }
    out.generation = rows_of(in.generation, m0, m1);
    out.member_rack = rows_of(in.member_rack, m0, m1);
    s.group_ids = rows_of(group_ids, g0, g1);
    s.skip = rows_of(skip, g0, g1);
}

// A builder error of a slice in the batch's indices (group_builder.hpp BuildErrorCode says what a, b, c index).
BuildError in_batch(BuildError e, const Slice& s) {
    e.group += s.g0;
    switch (e.code) {
        case BuildErrorCode::kTopicNameNull:
            e.a += s.m0;
            e.b += s.e0;
            break;
        case BuildErrorCode::kClaimMalformed:
        case BuildErrorCode::kClaimUnknownTopic:
        case BuildErrorCode::kClaimOutOfRange:
            e.a += s.m0;
            e.b += s.c0;
            break;
        case BuildErrorCode::kSharedInstanceId:
            e.a += s.m0;
            e.b += s.m0;
            break;
        case BuildErrorCode::kDuplicateMetaTopic:   // metadata rows and counts: not the slice's
        case BuildErrorCode::kTooManyPartitions:
            break;
        default:   // a: a member
            e.a += s.m0;
    }
    return e;
}

// What plan_parts keeps of a part: its outputs and errors. The rest (the built arrays, the engine's result, the
// topic names; the outputs own their memory) is freed here, on the thread that planned the part, as soon as its
// rows are written: kept to the end of the call, the parts' intermediate arrays would pile up (fresh memory,
// faulted in, for every part) and be freed by one thread while the others wait.
PlannedBatch outputs_of(PlannedBatch&& done) {
    PlannedBatch kept;
    kept.built.errors = std::move(done.built.errors);
    kept.assigned = done.assigned;
    kept.result.errors = std::move(done.result.errors);
    kept.rows_written = done.rows_written;
    kept.chunk_groups = std::move(done.chunk_groups);
    kept.rows = std::move(done.rows);
    kept.row_batches = std::move(done.row_batches);
    kept.metrics = std::move(done.metrics);
    return kept;
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

std::vector<int64_t> part_bounds(int64_t groups, const PartSizes& sizes) {
    if (groups < 0) throw std::invalid_argument("part_bounds: " + std::to_string(groups) + " groups");
    if (sizes.max_groups < 1 || sizes.min_groups < 1 || sizes.spread < 1)
        throw std::invalid_argument("part_bounds: part sizes must be >= 1, got max " + std::to_string(sizes.max_groups) +
                                    ", min " + std::to_string(sizes.min_groups) + ", spread " + std::to_string(sizes.spread));
    const int64_t most = sizes.max_groups, least = std::min(sizes.min_groups, most);
    const int64_t share = 2 * static_cast<int64_t>(sizes.spread);
    std::vector<int64_t> bounds{0};
    for (int64_t g = 0; g < groups;) {
        const int64_t left = groups - g;
        g += std::min(left, std::clamp((left + share - 1) / share, least, most));
        bounds.push_back(g);
    }
    return bounds;
}

PlannedParts plan_parts(const TopicCatalog& catalog, const NamedGroups& groups, const StringColumn& group_ids,
                        View<uint8_t> skip, const PlanOptions& options, const PartSizes& sizes) {
    PlannedParts out;
    const bool cuttable = !catalog.per_group() && !groups.sub_names.dictionary && !groups.owned_names.dictionary;
    if (!cuttable || groups.member_offsets.size < 2) {
        out.parts.push_back(outputs_of(plan_batch(catalog, groups, group_ids, skip, options)));
        out.part_groups.push_back(static_cast<int64_t>(group_ids.size()));
    } else {
        check_layout(catalog, groups);   // before any offset is used to cut
        const std::size_t G = groups.member_offsets.size - 1;
        check_strings(group_ids, G, "plan_batch: group_ids");
        if (!skip.empty() && skip.size != G)
            throw std::invalid_argument("plan_batch: skip: expected " + std::to_string(G) + " entries, got " +
                                        std::to_string(skip.size));
        out.part_groups = part_bounds(static_cast<int64_t>(G), sizes);
        const std::size_t P = out.part_groups.size() - 1;
        std::vector<Slice> slices(P);
        out.parts.resize(P);
        PlanOptions one = options;
        one.threads = 1;
        std::atomic<std::size_t> next{0};
        // (at least one worker whatever options.threads says: none would leave every part unplanned and empty)
        const int workers = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(std::max(1, options.threads)), P));
        std::vector<std::exception_ptr> failures(static_cast<std::size_t>(workers));
        auto work_loop = [&](int w) {
            try {
                for (std::size_t p = next++; p < P; p = next++) {
                    cut(groups, group_ids, skip, static_cast<std::size_t>(out.part_groups[p]),
                        static_cast<std::size_t>(out.part_groups[p + 1]), slices[p]);
                    out.parts[p] = outputs_of(plan_batch(catalog, slices[p].groups, slices[p].group_ids, slices[p].skip, one));
                }
            } catch (...) {   // e.g. bad_alloc: stop everyone, rethrow on the calling thread
                failures[static_cast<std::size_t>(w)] = std::current_exception();
                next = P;
            }
        };
        run_workers(workers, work_loop);
        for (auto& f : failures)
            if (f) std::rethrow_exception(f);
        for (std::size_t p = 0; p < P; ++p) {
            for (const BuildError& e : out.parts[p].built.errors) out.build_errors.push_back(in_batch(e, slices[p]));
            for (GroupError e : out.parts[p].result.errors) {
                e.group += slices[p].g0;
                out.engine_errors.push_back(std::move(e));
            }
        }
        return out;
    }
    out.build_errors = out.parts[0].built.errors;
    out.engine_errors = out.parts[0].result.errors;
    return out;
}

}  // namespace kafkagroup
