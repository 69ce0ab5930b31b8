// metrics_rows(): every column is O(G) copies out of the batch's arrays (the engine's metrics are one
// contiguous column each already; copying them keeps this a function of views, whoever owns the batch).
#include "kafkagroup/metrics_rows.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "kafkagroup/batch.hpp"
#include "kafkagroup/output_rows.hpp"

namespace kafkagroup {
namespace {

[[noreturn]] void fail(const std::string& message) { throw std::invalid_argument("metrics_rows: " + message); }

void expect_size(std::size_t size, std::size_t expected, const char* what) {
    if (size != expected)
        fail(std::string(what) + ": expected " + std::to_string(expected) + " entries, got " + std::to_string(size));
}

bool name_null(const NameColumn& names, std::size_t entry) {
    if (names.dictionary) return names.codes[entry] < 0 || names.strings.is_null(static_cast<std::size_t>(names.codes[entry]));
    return names.strings.is_null(entry);
}

std::string_view name_at(const NameColumn& names, std::size_t entry) {
    return names.dictionary ? names.strings.at(static_cast<std::size_t>(names.codes[entry])) : names.strings.at(entry);
}

class Builder {
public:
    explicit Builder(ArrowRecordBatch& out) : out_(out) {}

    template <class T>
    const T* keep(std::vector<T>&& v) {
        if (v.empty()) v.reserve(1);   // a real pointer even for no rows
        return out_.buffers.keep(std::move(v));
    }

    // A column of `values` (int32 "i", int64 "l" or float64 "g"), null where `valid` is false (when given).
    template <class T, class Valid>
    void numbers(const char* name, const char* format, std::vector<T>&& values, Valid valid) {
        const std::size_t n = values.size();
        int64_t nulls = 0;
        std::vector<uint8_t> bits = validity_bitmap(n, valid, nulls);
        const void* validity = nulls ? keep(std::move(bits)) : nullptr;
        out_.columns.push_back(ArrowColumn{name, format, static_cast<int64_t>(n), nulls, {validity, keep(std::move(values))}, {}});
    }
    template <class T>
    void numbers(const char* name, const char* format, std::vector<T>&& values) {
        numbers(name, format, std::move(values), [](std::size_t) { return true; });
    }

    // A utf8 column (or list child) of n strings: string(i) and null(i).
    template <class String, class Null>
    ArrowColumn strings(const char* name, std::size_t n, String string, Null null) {
        if (n > static_cast<std::size_t>(INT32_MAX)) fail(std::string(name) + ": more rows than one Arrow column holds");
        uint64_t bytes = 0;
        for (std::size_t i = 0; i < n; ++i)
            if (!null(i)) bytes += string(i).size();
        if (bytes > static_cast<uint64_t>(INT32_MAX))
            fail(std::string(name) + ": " + std::to_string(bytes) + " bytes do not fit one Arrow string column (2^31-1)");
        std::vector<int32_t> offsets(n + 1);
        std::vector<uint8_t> data(static_cast<std::size_t>(bytes));
        int32_t end = 0;
        for (std::size_t i = 0; i < n; ++i) {
            if (!null(i)) {
                const std::string_view s = string(i);
                if (!s.empty()) std::memcpy(data.data() + end, s.data(), s.size());
                end += static_cast<int32_t>(s.size());
            }
            offsets[i + 1] = end;
        }
        int64_t nulls = 0;
        std::vector<uint8_t> bits = validity_bitmap(n, [&](std::size_t i) { return !null(i); }, nulls);
        const void* validity = nulls ? keep(std::move(bits)) : nullptr;
        return ArrowColumn{name, "u", static_cast<int64_t>(n), nulls, {validity, keep(std::move(offsets)), keep(std::move(data))}, {}};
    }

    void add(ArrowColumn&& column) { out_.columns.push_back(std::move(column)); }

private:
    ArrowRecordBatch& out_;
};

}  // namespace

ArrowRecordBatch metrics_rows(const MetricsRowsView& in) {
    const std::size_t G = in.group_ids.size();
    expect_size(in.member_offsets.size, G + 1, "member_offsets");
    expect_size(in.topic_offsets.size, G + 1, "topic_offsets");
    expect_size(in.metrics.size, static_cast<std::size_t>(kMetricCount) * G, "metrics");
    expect_size(in.engine_us.size, G, "engine_us");
    if (!in.failed.empty()) expect_size(in.failed.size, G, "failed");
    expect_size(in.unknown_offsets.size, G + 1, "unknown_offsets");
    expect_size(in.dropped_claims.size, G, "dropped_claims");
    if (!in.group_ids.valid.empty()) expect_size(in.group_ids.valid.size, G, "group_ids validity");
    for (std::size_t g = 0; g < G; ++g) {
        const int64_t t0 = in.topic_offsets[g], t1 = in.topic_offsets[g + 1];
        if (t0 < 0 || t1 < t0 || static_cast<std::size_t>(t1) >= in.part_offsets.size)
            fail("topic_offsets of group " + std::to_string(g) + " outside part_offsets");
        if (in.member_offsets[g + 1] < in.member_offsets[g]) fail("member_offsets decrease at group " + std::to_string(g));
        if (in.unknown_offsets[g + 1] < in.unknown_offsets[g]) fail("unknown_offsets decrease at group " + std::to_string(g));
    }
    const int64_t u0 = G ? in.unknown_offsets[0] : 0, u1 = G ? in.unknown_offsets[G] : 0;
    const std::size_t names = in.unknown_entries.empty() ? in.unknown_names.size() : in.unknown_entries.size;
    if (u0 < 0 || static_cast<std::size_t>(u1) > names) fail("unknown_offsets run past the unknown topics");
    const std::size_t U = static_cast<std::size_t>(u1 - u0);
    auto unknown_entry = [&](std::size_t i) {
        const std::size_t k = static_cast<std::size_t>(u0) + i;
        if (in.unknown_entries.empty()) return k;
        const int64_t e = in.unknown_entries[k];
        if (e < 0 || static_cast<std::size_t>(e) >= in.unknown_names.size()) fail("unknown_entries[" + std::to_string(k) + "] outside the names");
        return static_cast<std::size_t>(e);
    };

    ArrowRecordBatch out;
    out.length = static_cast<int64_t>(G);
    Builder b(out);
    const auto failed = [&](std::size_t g) { return !in.failed.empty() && in.failed[g] != 0; };

    b.add(b.strings("group_id", G, [&](std::size_t g) { return in.group_ids.at(g); },
                    [&](std::size_t g) { return in.group_ids.is_null(g); }));
    b.add(b.strings("strategy", G, [&](std::size_t) { return std::string_view(in.strategy); },
                    [](std::size_t) { return false; }));
    std::vector<int32_t> members(G), topics(G);
    std::vector<int64_t> partitions(G);
    for (std::size_t g = 0; g < G; ++g) {
        members[g] = static_cast<int32_t>(in.member_offsets[g + 1] - in.member_offsets[g]);
        topics[g] = static_cast<int32_t>(in.topic_offsets[g + 1] - in.topic_offsets[g]);
        partitions[g] = in.part_offsets[static_cast<std::size_t>(in.topic_offsets[g + 1])] -
                        in.part_offsets[static_cast<std::size_t>(in.topic_offsets[g])];
    }
    b.numbers("members", "i", std::move(members));
    b.numbers("topics", "i", std::move(topics));
    b.numbers("partitions", "l", std::move(partitions));

    const std::vector<std::string> metric_order = metric_names();
    auto metric = [&](const char* name) {
        const auto k = static_cast<std::size_t>(std::find(metric_order.begin(), metric_order.end(), name) - metric_order.begin());
        if (k == metric_order.size()) throw std::logic_error(std::string("metrics_rows: no engine metric ") + name);
        return std::vector<int64_t>(in.metrics.data + k * G, in.metrics.data + (k + 1) * G);
    };
    const auto ran = [&](std::size_t g) { return !failed(g); };
    for (const char* name : {"assigned", "unassigned", "withheld", "moved"}) b.numbers(name, "l", metric(name), ran);
    std::vector<int64_t> lower_bound = metric("moved_lower_bound");
    const int64_t* bound = lower_bound.data();   // stays put when the vector is moved into the batch
    b.numbers("moved_lower_bound", "l", std::move(lower_bound), [&](std::size_t g) { return !failed(g) && bound[g] >= 0; });
    for (const char* name : {"balance_gap", "max_load", "min_load"}) b.numbers(name, "l", metric(name), ran);
    b.numbers("engine_us", "g", std::vector<double>(in.engine_us.begin(), in.engine_us.end()), ran);

    std::vector<int32_t> list_offsets(G + 1);
    if (U > static_cast<std::size_t>(INT32_MAX)) fail("more unknown topics than one Arrow list column holds");
    for (std::size_t g = 0; g <= G; ++g) list_offsets[g] = static_cast<int32_t>(in.unknown_offsets[g] - u0);
    ArrowColumn unknown_child = b.strings("item", U, [&](std::size_t i) { return name_at(in.unknown_names, unknown_entry(i)); },
                                          [&](std::size_t i) { return name_null(in.unknown_names, unknown_entry(i)); });
    b.add(ArrowColumn{"unknown_topics", "+l", static_cast<int64_t>(G), 0, {nullptr, b.keep(std::move(list_offsets))},
                      {std::move(unknown_child)}});
    b.numbers("dropped_claims", "l", std::vector<int64_t>(in.dropped_claims.begin(), in.dropped_claims.end()));
    b.add(b.strings("error", G, [](std::size_t) { return std::string_view(); }, [](std::size_t) { return true; }));
    return out;
}

}  // namespace kafkagroup
