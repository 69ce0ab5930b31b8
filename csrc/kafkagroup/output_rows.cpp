// assignment_rows(): pass 1 counts rows and bytes per column (and checks the layout), pass 2 writes them.
// Per group the members' names are looked up once (MemberInfo order -> input row -> bytes) and reused
// for every partition the group assigns.
#include "kafkagroup/output_rows.hpp"

#include <climits>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace kafkagroup {
namespace {

[[noreturn]] void fail(const std::string& message) { throw std::invalid_argument("assignment_rows: " + message); }

void check_offsets(const View<int64_t>& offsets, std::size_t rows, const char* what) {
    if (offsets.size != rows + 1)
        fail(std::string(what) + ": expected " + std::to_string(rows + 1) + " offsets, got " + std::to_string(offsets.size));
}

void check_column(const StringColumn& s, const char* what) {
    if (s.offset_count() == 0) fail(std::string(what) + ": no offsets");
    const std::size_t n = s.size();
    if (!s.valid.empty() && s.valid.size != n) fail(std::string(what) + ": expected one validity byte per string");
    for (std::size_t i = 0; i < n; ++i)
        if (s.offset(i + 1) < s.offset(i)) fail(std::string(what) + ": offsets decrease at " + std::to_string(i));
    if (s.offset(0) < 0) fail(std::string(what) + ": negative first offset");
    if (static_cast<uint64_t>(s.offset(n) - s.offset(0)) > s.bytes.size) fail(std::string(what) + ": offsets run past the bytes");
}

[[noreturn]] void null_name(const char* what, int64_t group) {
    throw std::logic_error(std::string("assignment_rows: group ") + std::to_string(group) + " assigns a partition but its " +
                           what + " is null");
}

std::string_view name_at(const StringColumn& s, std::size_t i, const char* what, int64_t group) {
    if (s.is_null(i)) null_name(what, group);
    return s.at(i);
}

// n bytes from src to dst. Names are short (ids and topic names of a few dozen bytes): two overlapping
// fixed-size copies cover 8..32 bytes without a call into memcpy for each of the millions of rows.
inline void copy_name(uint8_t* dst, const char* src, std::size_t n) {
    if (n >= 16 && n <= 32) {
        std::memcpy(dst, src, 16);
        std::memcpy(dst + n - 16, src + n - 16, 16);
    } else if (n >= 8 && n < 16) {
        std::memcpy(dst, src, 8);
        std::memcpy(dst + n - 8, src + n - 8, 8);
    } else {
        std::memcpy(dst, src, n);
    }
}

// Appends strings to a column being filled.
struct Filler {
    int32_t* offsets;
    uint8_t* bytes;
    int32_t end = 0;

    explicit Filler(StringOut& out) : offsets(out.offsets.data.get()), bytes(out.bytes.data.get()) { *offsets++ = 0; }
    void put(std::string_view s) {
        copy_name(bytes + end, s.data(), s.size());
        end += static_cast<int32_t>(s.size());
        *offsets++ = end;
    }
};

StringOut string_out(std::size_t rows, uint64_t bytes, const char* what) {
    if (bytes > static_cast<uint64_t>(INT32_MAX))
        fail(std::string(what) + ": " + std::to_string(bytes) + " bytes do not fit one Arrow string column "
             "(2^31-1 bytes, Arrow's 32-bit string offsets); the rows are gathered in chunks of whole groups, "
             "so a chunk (or one group) that large needs shorter names or a smaller chunk");
    return StringOut{OutBuffer<int32_t>(rows + 1), OutBuffer<uint8_t>(static_cast<std::size_t>(bytes))};
}

}  // namespace

AssignmentRows assignment_rows(const BatchNamesView& in, View<int32_t> owner, int64_t g0, int64_t g1) {
    check_column(in.group_ids, "group_ids");
    check_column(in.member_ids, "member_ids");
    check_column(in.topic_names, "topic_names");
    const std::size_t G = in.group_ids.size(), TU = in.topic_names.size();
    check_offsets(in.member_offsets, G, "member_offsets");
    check_offsets(in.topic_offsets, G, "topic_offsets");
    check_offsets(in.part_offsets, TU, "part_offsets");
    if (g0 < 0 || g1 < g0 || static_cast<std::size_t>(g1) > G)
        fail("group range " + std::to_string(g0) + ".." + std::to_string(g1) + " outside 0.." + std::to_string(G));
    if (in.member_perm.size != static_cast<std::size_t>(in.member_offsets[G]))
        fail("member_perm: expected " + std::to_string(in.member_offsets[G]) + " entries, got " + std::to_string(in.member_perm.size));
    if (static_cast<uint64_t>(in.topic_offsets[G]) != TU) fail("topic_offsets must end at the number of topic names");
    if (owner.size != static_cast<std::size_t>(in.part_offsets[TU]))
        fail("owner: expected " + std::to_string(in.part_offsets[TU]) + " entries, got " + std::to_string(owner.size));
    const std::size_t M = in.member_ids.size();

    std::vector<std::string_view> members;   // group g's member names, MemberInfo order
    std::vector<char> member_null;
    auto load_members = [&](int64_t g) {
        const int64_t m0 = in.member_offsets[g], m1 = in.member_offsets[g + 1];
        if (m0 < 0 || m1 < m0 || static_cast<std::size_t>(m1) > in.member_perm.size) fail("member_offsets of group " + std::to_string(g));
        members.resize(static_cast<std::size_t>(m1 - m0));
        member_null.resize(members.size());
        for (int64_t k = m0; k < m1; ++k) {
            const int64_t row = in.member_perm[k];
            if (row < 0 || static_cast<std::size_t>(row) >= M) fail("member_perm[" + std::to_string(k) + "] outside the member rows");
            member_null[k - m0] = in.member_ids.is_null(row);
            members[k - m0] = member_null[k - m0] ? std::string_view() : in.member_ids.at(row);
        }
    };
    auto topic_range = [&](int64_t g, int64_t& t0, int64_t& t1) {
        t0 = in.topic_offsets[g];
        t1 = in.topic_offsets[g + 1];
        if (t0 < 0 || t1 < t0 || static_cast<std::size_t>(t1) > TU) fail("topic_offsets of group " + std::to_string(g));
    };

    // ---- pass 1: rows and bytes per column; every index checked
    uint64_t rows = 0, group_bytes = 0, member_bytes = 0, topic_bytes = 0;
    for (int64_t g = g0; g < g1; ++g) {
        load_members(g);
        int64_t t0, t1;
        topic_range(g, t0, t1);
        uint64_t group_rows = 0;
        for (int64_t t = t0; t < t1; ++t) {
            const int64_t p0 = in.part_offsets[t], p1 = in.part_offsets[t + 1];
            if (p0 < 0 || p1 < p0 || static_cast<std::size_t>(p1) > owner.size) fail("part_offsets of topic " + std::to_string(t));
            uint64_t topic_rows = 0;
            for (int64_t p = p0; p < p1; ++p) {
                const int32_t o = owner[p];
                if (o < 0) continue;
                if (static_cast<std::size_t>(o) >= members.size())
                    fail("owner[" + std::to_string(p) + "] = " + std::to_string(o) + " but group " + std::to_string(g) +
                         " has " + std::to_string(members.size()) + " members");
                if (member_null[o]) null_name("member id", g);
                member_bytes += members[o].size();
                ++topic_rows;
            }
            if (topic_rows) topic_bytes += topic_rows * name_at(in.topic_names, t, "topic name", g).size();
            group_rows += topic_rows;
        }
        if (group_rows) group_bytes += group_rows * name_at(in.group_ids, g, "group id", g).size();
        rows += group_rows;
    }

    // ---- pass 2: the columns
    AssignmentRows out;
    out.rows = static_cast<std::size_t>(rows);
    out.group_id = string_out(out.rows, group_bytes, "group_id");
    out.member_id = string_out(out.rows, member_bytes, "member_id");
    out.topic = string_out(out.rows, topic_bytes, "topic");
    out.partition = OutBuffer<int32_t>(out.rows);
    Filler group_col(out.group_id), member_col(out.member_id), topic_col(out.topic);
    int32_t* partition = out.partition.data.get();
    for (int64_t g = g0; g < g1; ++g) {
        load_members(g);
        // (a null name's view is empty and never written: pass 1 found no row under it)
        const std::string_view group_name = in.group_ids.at(static_cast<std::size_t>(g));
        for (int64_t t = in.topic_offsets[g]; t < in.topic_offsets[g + 1]; ++t) {
            const int64_t p0 = in.part_offsets[t], p1 = in.part_offsets[t + 1];
            const std::string_view topic_name = in.topic_names.at(static_cast<std::size_t>(t));
            for (int64_t p = p0; p < p1; ++p) {
                const int32_t o = owner[p];
                if (o < 0) continue;
                group_col.put(group_name);
                member_col.put(members[o]);
                topic_col.put(topic_name);
                *partition++ = static_cast<int32_t>(p - p0);
            }
        }
    }
    return out;
}

ArrowRecordBatch assignment_rows_batch(AssignmentRows&& rows) {
    ArrowRecordBatch out;
    out.length = static_cast<int64_t>(rows.rows);
    auto strings = [&](const char* name, StringOut&& s) {
        const int32_t* offsets = out.buffers.keep(std::move(s.offsets.data), s.offsets.size);
        const uint8_t* bytes = out.buffers.keep(std::move(s.bytes.data), s.bytes.size);
        out.columns.push_back(ArrowColumn{name, "u", out.length, 0, {nullptr, offsets, bytes}, {}});
    };
    strings("group_id", std::move(rows.group_id));
    strings("member_id", std::move(rows.member_id));
    strings("topic", std::move(rows.topic));
    const int32_t* partition = out.buffers.keep(std::move(rows.partition.data), rows.partition.size);
    out.columns.push_back(ArrowColumn{"partition", "i", out.length, 0, {nullptr, partition}, {}});
    return out;
}

}  // namespace kafkagroup
