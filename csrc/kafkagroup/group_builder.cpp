// build_groups(): one pass over the batch's names (hash each distinct name once into a StringTable),
// then one pass per group over its members, subscriptions, claims and partitions (a group's topic names
// are sorted in Java order per group, never the whole batch's). Per-group scratch is indexed by the
// batch's name codes and reset by stamping with the group / member index, so a group costs
// O(its members + entries + partitions + topics * log topics) and nothing is cleared between groups.
#include "kafkagroup/group_builder.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <string>

namespace kafkagroup {
namespace {

[[noreturn]] void fail(const std::string& message) { throw std::invalid_argument(message); }


// CSR offsets over `rows` rows into `total` entries: from 0, non-decreasing, ending at total.
void check_csr(const View<int64_t>& offsets, std::size_t rows, std::size_t total, const char* what) {
    if (offsets.size != rows + 1)
        fail(std::string(what) + ": expected " + std::to_string(rows + 1) + " offsets, got " + std::to_string(offsets.size));
    if (offsets[0] != 0) fail(std::string(what) + ": first offset must be 0");
    for (std::size_t i = 0; i < rows; ++i)
        if (offsets[i + 1] < offsets[i]) fail(std::string(what) + ": offsets decrease at " + std::to_string(i));
    if (static_cast<uint64_t>(offsets[rows]) != total)
        fail(std::string(what) + ": last offset " + std::to_string(offsets[rows]) + " != " + std::to_string(total));
}

// Code point starting at byte i of valid UTF-8 (a stray byte reads as itself).
uint32_t code_point(std::string_view s, std::size_t i) {
    const auto b = [&](std::size_t k) { return static_cast<uint32_t>(static_cast<uint8_t>(s[k])); };
    const uint32_t c = b(i);
    if (c < 0x80) return c;
    if (c >= 0xF0 && i + 3 < s.size()) return ((c & 0x07) << 18) | ((b(i + 1) & 0x3F) << 12) | ((b(i + 2) & 0x3F) << 6) | (b(i + 3) & 0x3F);
    if (c >= 0xE0 && i + 2 < s.size()) return ((c & 0x0F) << 12) | ((b(i + 1) & 0x3F) << 6) | (b(i + 2) & 0x3F);
    if (c >= 0xC0 && i + 1 < s.size()) return ((c & 0x1F) << 6) | (b(i + 1) & 0x3F);
    return c;
}

// First UTF-16 code unit of a code point (the high surrogate above U+FFFF).
uint32_t lead_unit(uint32_t c) { return c >= 0x10000 ? 0xD800 + ((c - 0x10000) >> 10) : c; }

}  // namespace

void check_strings(const StringColumn& s, std::size_t rows, const char* what) {
    if (s.offset_count() == 0) {
        if (rows) fail(std::string(what) + ": expected " + std::to_string(rows + 1) + " offsets, got 0");
        return;
    }
    if (s.offset_count() != rows + 1)
        fail(std::string(what) + ": expected " + std::to_string(rows + 1) + " offsets, got " + std::to_string(s.offset_count()));
    for (std::size_t i = 0; i < rows; ++i)
        if (s.offset(i + 1) < s.offset(i)) fail(std::string(what) + ": offsets decrease at " + std::to_string(i));
    if (s.offset(0) < 0) fail(std::string(what) + ": negative first offset");
    if (static_cast<uint64_t>(s.offset(rows) - s.offset(0)) > s.bytes.size)
        fail(std::string(what) + ": offsets run past the " + std::to_string(s.bytes.size) + " bytes given");
    if (!s.valid.empty() && s.valid.size != rows)
        fail(std::string(what) + ": expected " + std::to_string(rows) + " validity bytes, got " + std::to_string(s.valid.size));
}

int java_compare(std::string_view a, std::string_view b) {
    const std::size_t n = std::min(a.size(), b.size());
    std::size_t i = 0;
    // the first differing byte, 8 at a time (names of one group share long prefixes: "consumer-<group>-...")
    while (i + 8 <= n) {
        uint64_t wa, wb;
        std::memcpy(&wa, a.data() + i, 8);
        std::memcpy(&wb, b.data() + i, 8);
        if (wa != wb) break;
        i += 8;
    }
    while (i < n && a[i] == b[i]) ++i;
    if (i == n) return a.size() < b.size() ? -1 : (a.size() > b.size() ? 1 : 0);
    // The strings agree up to byte i, so they agree up to the start of the code point holding it. UTF-8
    // byte order is code point order; UTF-16 order differs only between a surrogate pair (U+10000 and up)
    // and U+E000..U+FFFF, so compare the first code units, then the code points.
    while (i > 0 && (static_cast<uint8_t>(a[i]) & 0xC0) == 0x80) --i;
    const uint32_t ca = code_point(a, i), cb = code_point(b, i);
    const uint32_t ua = lead_unit(ca), ub = lead_unit(cb);
    if (ua != ub) return ua < ub ? -1 : 1;
    return ca < cb ? -1 : (ca > cb ? 1 : 0);
}

TopicCatalog::TopicCatalog(const TopicRows& rows) {
    const std::size_t K = rows.names.size();
    check_strings(rows.names, K, "topic catalog names");
    if (rows.count.size != K) fail("topic catalog: expected " + std::to_string(K) + " counts, got " + std::to_string(rows.count.size));
    if (!rows.group.empty() && rows.group.size != K) fail("topic catalog: expected " + std::to_string(K) + " group labels");
    per_group_ = !rows.group.empty();
    count_.assign(rows.count.begin(), rows.count.end());
    group_.assign(rows.group.begin(), rows.group.end());
    if (!rows.has_racks.empty()) {
        if (rows.has_racks.size != K || rows.part_start.size != K + 1)
            fail("topic catalog: racks need has_racks[K] and part_start[K+1]");
        const std::size_t Pm = static_cast<std::size_t>(rows.part_start[K]);
        check_csr(rows.rack_off, Pm, rows.rack_codes.size, "topic catalog rack_off");
        for (std::size_t k = 0; k < K; ++k)
            if (rows.has_racks[k] && (rows.part_start[k + 1] - rows.part_start[k] != count_[k] || rows.part_start[k + 1] < rows.part_start[k]))
                fail("topic catalog: row " + std::to_string(k) + " has racks for " +
                     std::to_string(rows.part_start[k + 1] - rows.part_start[k]) + " partitions, count " + std::to_string(count_[k]));
        has_racks_.assign(rows.has_racks.begin(), rows.has_racks.end());
        part_start_.assign(rows.part_start.begin(), rows.part_start.end());
        rack_off_.assign(rows.rack_off.begin(), rows.rack_off.end());
        rack_codes_.assign(rows.rack_codes.begin(), rows.rack_codes.end());
        for (int32_t c : rack_codes_) {
            if (c < 0) fail("topic catalog: negative rack code");
            rack_code_bound_ = std::max(rack_code_bound_, c + 1);
        }
        any_racks_ = std::any_of(has_racks_.begin(), has_racks_.end(), [](uint8_t h) { return h != 0; });
    }
    const int64_t base = K ? rows.names.offset(0) : 0;
    if (K) bytes_.assign(reinterpret_cast<const char*>(rows.names.bytes.data), static_cast<std::size_t>(rows.names.offset(K) - base));
    offsets_.resize(K + 1, 0);
    for (std::size_t k = 0; k <= K && K; ++k) offsets_[k] = rows.names.offset(k) - base;
    names_ = StringTable(K);
    if (per_group_) by_group_.reserve(K);
    else row_of_name_.reserve(K);
    auto name_of = [&](std::size_t k) {
        return std::string_view(bytes_.data() + offsets_[k], static_cast<std::size_t>(offsets_[k + 1] - offsets_[k]));
    };
    std::vector<uint64_t> hashes(K);   // hashed first, inserted with the slot a few rows ahead prefetched
    for (std::size_t k = 0; k < K; ++k) hashes[k] = hash_bytes(name_of(k));
    constexpr std::size_t kAhead = 16;
    for (std::size_t k = 0; k < K; ++k) {
        if (k + kAhead < K) names_.touch(hashes[k + kAhead]);
        if (rows.names.is_null(k) || count_[k] < 0) continue;   // the caller reports the row; it matches nothing
        bool fresh_name = false;
        const int32_t id = names_.insert_hashed(name_of(k), hashes[k], fresh_name);
        bool fresh = true;
        if (per_group_) {
            const uint64_t key = (static_cast<uint64_t>(group_[k]) << 32) | static_cast<uint32_t>(id);
            fresh = by_group_.emplace(key, static_cast<int64_t>(k)).second;
        } else if (fresh_name) {
            row_of_name_.push_back(static_cast<int64_t>(k));
        } else {
            fresh = false;
        }
        if (!fresh) repeated_.push_back(static_cast<int64_t>(k));
    }
    if (!per_group_) {
        rows_are_names_ = names_.size() == K && repeated_.empty();   // every row inserted, each a fresh name
        rows_in_java_order_ = true;
        std::size_t prev = K;   // the previous valid row
        for (std::size_t k = 0; k < K && rows_in_java_order_; ++k) {
            if (rows.names.is_null(k) || count_[k] < 0) continue;
            if (prev < K && java_compare(name_of(prev), name_of(k)) >= 0) rows_in_java_order_ = false;
            prev = k;
        }
    }
}

bool TopicCatalog::lists_names(const StringColumn& s) const {
    const std::size_t K = size();
    if (s.size() < K) return false;
    if (K == 0) return true;
    const int64_t base = s.offset(0);
    for (std::size_t k = 1; k <= K; ++k)
        if (s.offset(k) - base != offsets_[k]) return false;
    if (!s.valid.empty())
        for (std::size_t k = 0; k < K; ++k)
            if (s.valid[k] == 0) return false;
    return std::memcmp(s.bytes.data, bytes_.data(), static_cast<std::size_t>(offsets_[K])) == 0;
}

int64_t TopicCatalog::find(int64_t group, std::string_view name) const {
    const int32_t id = names_.find(name);
    if (id < 0) return -1;
    if (!per_group_) return row_of_name_[id];
    auto it = by_group_.find((static_cast<uint64_t>(group) << 32) | static_cast<uint32_t>(id));
    return it == by_group_.end() ? -1 : it->second;
}

void TopicCatalog::find_all(const std::vector<std::string_view>& names, int64_t* rows) const {
    const std::size_t n = names.size();
    if (per_group_) {
        for (std::size_t i = 0; i < n; ++i) rows[i] = find(-1, names[i]);
        return;
    }
    std::vector<uint64_t> hashes(n);
    for (std::size_t i = 0; i < n; ++i) hashes[i] = hash_bytes(names[i]);
    // three steps ahead of the lookup: its slot, then (slot cached) the key and row it names, then the key's bytes
    constexpr std::size_t kSlot = 24, kKey = 12, kBytes = 6;
    std::vector<int32_t> guess(n, -1);
    for (std::size_t i = 0; i < std::min(n, kSlot); ++i) names_.touch(hashes[i]);
    for (std::size_t i = 0; i < n; ++i) {
        if (i + kSlot < n) names_.touch(hashes[i + kSlot]);
        if (i + kKey < n && (guess[i + kKey] = names_.touch_key(hashes[i + kKey])) >= 0) prefetch(&row_of_name_[guess[i + kKey]]);
        if (i + kBytes < n && guess[i + kBytes] >= 0) names_.touch_bytes(guess[i + kBytes]);
        const int32_t id = names_.find_hashed(names[i], hashes[i]);
        rows[i] = id < 0 ? -1 : row_of_name_[id];
        if (id >= 0) prefetch(&count_[rows[i]]);   // read when the name's group is built
    }
}

GroupBatch BuiltGroups::view() const {
    auto v = [](const auto& vec) {
        using T = typename std::decay_t<decltype(vec)>::value_type;
        return View<T>{vec.data(), vec.size()};
    };
    GroupBatch b;
    b.topic_offsets = v(topic_offsets);
    b.member_offsets = v(member_offsets);
    b.partition_count = v(partition_count);
    b.sub_offsets = v(sub_offsets);
    b.sub_topics = v(sub_topics);
    b.owned_offsets = v(owned_offsets);
    b.owned_partitions = v(owned_partitions);
    b.generation = v(generation);
    b.member_rack = v(member_rack);
    b.replica_offsets = v(replica_offsets);
    b.replica_racks = v(replica_racks);
    b.group_inputs = v(group_inputs);
    return b;
}

namespace {

// The batch's distinct names: each entry of a name column -> a dense code (first appearance order).
class BatchNames {
public:
    explicit BatchNames(std::size_t expected) : table_(expected) {}
    // Starting from a catalog's names (TopicCatalog::rows_are_names: name k has code k), so that a column
    // listing them (lists_names) is interned without hashing them again (see intern's `known`).
    explicit BatchNames(const StringTable& catalog_names) : table_(catalog_names) {}

    // Codes of every entry of `column` (-1 for a null entry), as a view: into `storage` when entries are
    // remapped, or straight into column.codes when the column is already interned -- a dictionary of
    // distinct non-null names whose dictionary index k is batch code k (the first dictionary column of a
    // batch holding distinct names, or a later one with the same names in the same order: what the
    // protocol codec and build_group send). Then the cost is one hash per distinct name, nothing per entry.
    // `lists` (CSR over the entries, e.g. members' subscriptions) lets a list whose names are byte for
    // byte those of the list before it (every member of most groups subscribes alike) copy its codes
    // instead of hashing them again.
    // `known`: the column is a dictionary whose first `known` strings are the first `known` names of this table,
    // in order (the table started from a catalog's names and the column lists them): their codes are their
    // indices, found without hashing (~470 instructions a name, hashed here and again for the catalog's rows,
    // at 1,000 topics the better part of a homogeneous group's build).
    View<int32_t> intern(const NameColumn& column, std::vector<int32_t>& storage, const View<int64_t>& lists = {},
                         std::size_t known = 0) {
        if (!column.dictionary) {
            storage.assign(column.size(), -1);
            const StringColumn& s = column.strings;
            // entries to hash (nulls and copied lists left out), hashed first, then inserted in entry order
            // (codes are first-appearance order) with the slot a few entries ahead prefetched
            pending_.clear();
            copied_.clear();
            if (lists.size < 2 || !s.valid.empty()) {
                for (std::size_t i = 0; i < storage.size(); ++i)
                    if (!s.is_null(i)) pending_.push_back(i);
            } else {
                for (std::size_t l = 0; l + 1 < lists.size; ++l) {
                    const auto e0 = static_cast<std::size_t>(lists[l]), e1 = static_cast<std::size_t>(lists[l + 1]);
                    if (l > 0 && same_names(s, static_cast<std::size_t>(lists[l - 1]), e0, e1)) copied_.push_back(l);
                    else for (std::size_t i = e0; i < e1; ++i) pending_.push_back(i);
                }
            }
            hashes_.resize(pending_.size());
            for (std::size_t j = 0; j < pending_.size(); ++j) hashes_[j] = hash_bytes(s.at(pending_[j]));
            constexpr std::size_t kAhead = 8;
            for (std::size_t j = 0; j < pending_.size(); ++j) {
                if (j + kAhead < pending_.size()) table_.touch(hashes_[j + kAhead]);
                bool fresh = false;
                storage[pending_[j]] = table_.insert_hashed(s.at(pending_[j]), hashes_[j], fresh);
            }
            for (std::size_t l : copied_)   // ascending: the list before is final when it is copied
                std::copy(storage.begin() + static_cast<std::ptrdiff_t>(lists[l - 1]),
                          storage.begin() + static_cast<std::ptrdiff_t>(lists[l]), storage.begin() + static_cast<std::ptrdiff_t>(lists[l]));
            return View<int32_t>{storage.data(), storage.size()};
        }
        // hash each distinct dictionary string once; map entries through one vector per dictionary entry
        const std::size_t D = column.strings.size();
        std::vector<int32_t> dict(D, -1);
        bool identity = true;
        for (std::size_t k = 0; k < D; ++k) {
            if (k < known) { dict[k] = static_cast<int32_t>(k); continue; }
            if (column.strings.is_null(k)) { identity = false; continue; }
            dict[k] = code_of(column.strings.at(k));
            identity &= dict[k] == static_cast<int32_t>(k);
        }
        if (identity) return column.codes;   // a negative code is null either way
        storage.assign(column.size(), -1);
        for (std::size_t i = 0; i < storage.size(); ++i) {
            const int32_t k = column.codes[i];
            if (k >= 0 && static_cast<std::size_t>(k) < D) storage[i] = dict[k];   // bounds: see sub_same
        }
        return View<int32_t>{storage.data(), storage.size()};
    }
    std::size_t size() const { return table_.size(); }
    std::string_view name(int32_t code) const { return table_.key(code); }
    const std::vector<std::string_view>& keys() const { return table_.keys(); }

private:
    // Entries [a, b) and [b, c) (consecutive lists) hold the same strings: same lengths, same bytes.
    static bool same_names(const StringColumn& s, std::size_t a, std::size_t b, std::size_t c) {
        if (c - b != b - a || b == a) return false;
        for (std::size_t k = 1; k <= b - a; ++k)
            if (s.offset(a + k) - s.offset(a) != s.offset(b + k) - s.offset(b)) return false;
        return std::memcmp(s.bytes.data + (s.offset(a) - s.offset(0)), s.bytes.data + (s.offset(b) - s.offset(0)),
                           static_cast<std::size_t>(s.offset(b) - s.offset(a))) == 0;
    }
    int32_t code_of(std::string_view s) {
        bool fresh = false;
        return table_.insert(s, fresh);
    }
    StringTable table_;
    std::vector<std::size_t> pending_, copied_;
    std::vector<uint64_t> hashes_;
};

class Builder {
public:
    Builder(const TopicCatalog& cat, const NamedGroups& in, bool strict, BuiltGroups& out, bool sub_codes_valid)
        : cat_(cat), in_(in), strict_(strict), out_(out), sub_codes_valid_(sub_codes_valid),
          // the subscriptions' dictionary lists the catalog's names first (build_group sends the metadata's
          // names, then any subscribed name the metadata lacks): start from the catalog's table
          catalog_first_(cat.rows_are_names() && in.sub_names.dictionary && cat.lists_names(in.sub_names.strings)),
          names_(catalog_first_ ? BatchNames(cat.name_table())
                 // (a dictionary column names its distinct names: a table for those, not the 1,024 a batch starts with)
                 : BatchNames(in.sub_names.dictionary
                                  ? std::max<std::size_t>(16, in.sub_names.strings.size() + in.owned_names.strings.size())
                                  : 1024)) {}

    void run() {
        const std::size_t G = in_.member_offsets.size - 1;
        const std::size_t M = static_cast<std::size_t>(in_.member_offsets[G]);
        const std::size_t K = catalog_first_ ? cat_.size() : 0;   // codes 0..K-1: the catalog's rows
        sub_code_ = names_.intern(in_.sub_names, sub_store_, in_.sub_offsets, K);
        own_code_ = names_.intern(in_.owned_names, own_store_, {},
                                  K && in_.owned_names.dictionary && cat_.lists_names(in_.owned_names.strings) ? K : 0);
        const std::size_t D = names_.size();
        row_.assign(D, -1);
        row_stamp_.assign(D, -1);
        if (catalog_first_) {
            // code k < K is row k; a later code is a name the table (every catalog name) did not hold: no row
            std::iota(row_.begin(), row_.begin() + static_cast<std::ptrdiff_t>(K), int64_t{0});
        } else if (!cat_.per_group()) {
            cat_.find_all(names_.keys(), row_.data());
        }
        topic_stamp_.assign(D, -1);
        local_.assign(D, -1);
        seen_.assign(D, -1);
        first_entry_.assign(D, -1);
        claim_limit_.assign(D, 0);
        claim_base_.assign(D, 0);
        out_.owned_partitions.resize(in_.owned_names.size());   // at most one per claim; cut to owned_n_ below
        owned_out_ = out_.owned_partitions.data();
        rack_stamp_.assign(static_cast<std::size_t>(std::max<int32_t>(rack_bound_(), 0)), -1);
        rack_local_.assign(rack_stamp_.size(), 0);

        out_.member_offsets.assign(in_.member_offsets.begin(), in_.member_offsets.end());
        out_.topic_offsets.assign(1, 0);
        out_.part_offsets.assign(1, 0);
        out_.sub_offsets.assign(1, 0);
        out_.owned_offsets.assign(1, 0);
        out_.unknown_offsets.assign(1, 0);
        out_.rack_offsets.assign(1, 0);
        out_.member_perm.reserve(M);
        out_.generation.reserve(M);
        out_.member_rack.reserve(M);
        out_.sub_topics.reserve(in_.sub_names.size());
        out_.group_inputs.assign(G, 0);
        out_.dropped_claims.assign(G, 0);
        if (cat_.any_racks()) out_.replica_offsets.assign(1, 0);
        bool any_replica = false;
        for (std::size_t g = 0; g < G; ++g) any_replica |= build_group(static_cast<int64_t>(g));
        out_.owned_partitions.resize(static_cast<std::size_t>(owned_n_));
        if (!any_replica) {   // nobody reads them: do not hand assign_batch an O(P) array
            out_.replica_offsets.clear();
            out_.replica_racks.clear();
        }
    }

private:
    int32_t rack_bound_() const {
        int32_t bound = cat_.rack_code_bound();
        for (int32_t c : in_.member_rack) bound = std::max(bound, c + 1);
        return bound;
    }

    int64_t row_for(int64_t g, int32_t code) {
        if (!cat_.per_group()) return row_[code];
        if (row_stamp_[code] != g) {
            row_stamp_[code] = g;
            row_[code] = cat_.find(g, names_.name(code));
        }
        return row_[code];
    }

    std::string_view member_key(int64_t m, bool& is_static) const {
        if (in_.instance_ids.offset_count() != 0 && !in_.instance_ids.is_null(m)) {
            std::string_view inst = in_.instance_ids.at(static_cast<std::size_t>(m));
            if (!inst.empty()) {
                is_static = true;
                return inst;
            }
        }
        is_static = false;
        return in_.member_ids.is_null(m) ? std::string_view() : in_.member_ids.at(static_cast<std::size_t>(m));
    }

    void error(BuildError& first, BuildErrorCode code, int64_t a, int64_t b = -1, int64_t c = -1) {
        if (first.a == -2) first = BuildError{first.group, code, a, b, c};
    }

    // Returns whether the group uses replica racks.
    bool build_group(int64_t g) {
        const int64_t m0 = in_.member_offsets[g], m1 = in_.member_offsets[g + 1];
        BuildError err{g, BuildErrorCode::kMemberIdMissing, -2, -1, -1};   // a == -2: no error yet
        const bool has_claims_input = !in_.owned_offsets.empty();

        // ---- per member, input order: the shape of what each member sent, and each member's MemberInfo key
        // (read in the same pass: the key is the member id unless the member is static)
        order_.resize(static_cast<std::size_t>(m1 - m0));
        keys_.resize(order_.size());
        statics_.resize(order_.size());
        bool any_static = false;
        for (int64_t m = m0; m < m1; ++m) {
            if (in_.member_ids.is_null(m) || in_.member_ids.at(m).empty()) error(err, BuildErrorCode::kMemberIdMissing, m);
            bool s = false;
            keys_[m - m0] = member_key(m, s);
            statics_[m - m0] = s;
            any_static |= s;
            order_[m - m0] = m;
        }
        if (!in_.sub_valid.empty())
            for (int64_t m = m0; m < m1; ++m)
                if (!in_.sub_valid[m]) error(err, BuildErrorCode::kTopicsNull, m);
        if (!sub_codes_valid_ && any_negative(sub_code_, in_.sub_offsets[m0], in_.sub_offsets[m1]))   // one branch-free scan first
            for (int64_t m = m0; m < m1; ++m)
                for (int64_t e = in_.sub_offsets[m]; e < in_.sub_offsets[m + 1]; ++e)
                    if (sub_code_[e] < 0) error(err, BuildErrorCode::kTopicNameNull, m, e);
        if (has_claims_input && (!in_.owned_partition_valid.empty() ||
                                 any_negative(own_code_, in_.owned_offsets[m0], in_.owned_offsets[m1])))
            for (int64_t m = m0; m < m1; ++m)
                for (int64_t c = in_.owned_offsets[m]; c < in_.owned_offsets[m + 1]; ++c)
                    if (own_code_[c] < 0 || claim_null(c)) error(err, BuildErrorCode::kClaimMalformed, m, c);

        // ---- MemberInfo order: static by instance id, then dynamic by member id (Java order)
        // (one scan of the group's id bytes, and instance id bytes, rather than one per key: a superset of the
        // keys' bytes, which at worst picks java_compare where byte order would do -- the same order)
        const bool astral = has_astral(group_bytes(in_.member_ids, m0, m1)) ||
                            (in_.instance_ids.offset_count() != 0 && has_astral(group_bytes(in_.instance_ids, m0, m1)));
        auto member_info_less = [&](int64_t a, int64_t b) {
            const bool sa = statics_[a - m0], sb = statics_[b - m0];
            if (sa != sb) return sa;
            // without a character beyond U+FFFF, UTF-8 byte order is Java's (UTF-16) order
            return (astral ? java_compare(keys_[a - m0], keys_[b - m0]) : keys_[a - m0].compare(keys_[b - m0])) < 0;
        };
        // members mostly arrive in MemberInfo order already, each key after the one before (a group's own earlier
        // output, ids numbered in join order): one pass of n - 1 compares finds that, against ~n log n for the
        // sort, and then no two neighbours are equal, so there is no repeated key to look for either
        bool ascending = true;
        for (std::size_t k = 1; k < order_.size() && ascending; ++k) {
            const std::size_t a = k - 1, b = k;
            ascending = statics_[a] != statics_[b]
                ? static_cast<bool>(statics_[a])
                : (astral ? java_compare(keys_[a], keys_[b]) : keys_[a].compare(keys_[b])) < 0;
        }
        if (!ascending && !std::is_sorted(order_.begin(), order_.end(), member_info_less))
            std::stable_sort(order_.begin(), order_.end(), member_info_less);
        for (std::size_t k = 1; k < order_.size() && !ascending; ++k) {
            const int64_t a = order_[k - 1], b = order_[k];
            if (statics_[a - m0] == statics_[b - m0] && keys_[a - m0] == keys_[b - m0]) {
                if (statics_[a - m0]) error(err, BuildErrorCode::kSharedInstanceId, a, b);
                else if (!in_.member_ids.is_null(a) && !keys_[a - m0].empty()) error(err, BuildErrorCode::kDuplicateMemberId, a);
            }
        }
        if (any_static) {   // a member id may also repeat across the static and dynamic members
            by_id_.assign(order_.begin(), order_.end());
            auto id = [&](int64_t m) { return in_.member_ids.is_null(m) ? std::string_view() : in_.member_ids.at(m); };
            std::sort(by_id_.begin(), by_id_.end(), [&](int64_t a, int64_t b) {
                const int c = java_compare(id(a), id(b));
                return c != 0 ? c < 0 : a < b;
            });
            for (std::size_t k = 1; k < by_id_.size(); ++k)
                if (!id(by_id_[k]).empty() && id(by_id_[k]) == id(by_id_[k - 1]))
                    error(err, BuildErrorCode::kDuplicateMemberId, std::min(by_id_[k - 1], by_id_[k]));
        }

        // ---- the group's topics: distinct subscribed names, known ones in Java order, unknown ones reported
        known_.clear();
        unknown_.clear();
        int64_t twice = -1;
        same_run_.resize(static_cast<std::size_t>(m1 - m0));
        for (int64_t m = m0; m < m1; ++m) {
            // a member listing the codes of the member before it (most members of a group do) adds no
            // topic and repeats that member's verdict on a topic listed twice; same_run_ numbers such runs
            // (equal lists, transitively), so the MemberInfo pass below compares members that are not
            // neighbours in row order (a JoinGroup's order) by their run
            const bool repeats = m > m0 && (said_same(m) || same_subscription(m - 1, m));
            same_run_[static_cast<std::size_t>(m - m0)] = repeats ? same_run_[static_cast<std::size_t>(m - 1 - m0)] : m;
            if (repeats) continue;
            for (int64_t e = in_.sub_offsets[m]; e < in_.sub_offsets[m + 1]; ++e) {
                const int32_t c = sub_code_[e];
                if (c < 0) continue;
                if (seen_[c] == m) { if (twice < 0) twice = m; }
                else seen_[c] = m;
                if (topic_stamp_[c] != g) {
                    topic_stamp_[c] = g;
                    local_[c] = -1;
                    if (first_entry_[c] < 0) first_entry_[c] = e;   // groups and entries come in order
                    (row_for(g, c) >= 0 ? known_ : unknown_).push_back(c);
                }
            }
        }
        if (cat_.per_group()) check_meta_repeats(g, err);
        if (twice >= 0) error(err, BuildErrorCode::kTopicListedTwice, twice);
        auto by_name = [&](int32_t a, int32_t b) { return java_compare(names_.name(a), names_.name(b)) < 0; };
        if (cat_.rows_in_java_order()) {   // (known codes have distinct rows: a shared catalog has no repeats)
            auto by_row = [&](int32_t a, int32_t b) { return row_for(g, a) < row_for(g, b); };
            if (!std::is_sorted(known_.begin(), known_.end(), by_row)) std::sort(known_.begin(), known_.end(), by_row);
        } else if (!std::is_sorted(known_.begin(), known_.end(), by_name)) {
            std::sort(known_.begin(), known_.end(), by_name);
        }
        std::sort(unknown_.begin(), unknown_.end(), by_name);
        for (int32_t c : unknown_) out_.unknown_entries.push_back(first_entry_[c]);
        out_.unknown_offsets.push_back(static_cast<int64_t>(out_.unknown_entries.size()));

        base_.assign(1, 0);
        for (std::size_t t = 0; t < known_.size(); ++t) {
            local_[known_[t]] = static_cast<int32_t>(t);
            const int64_t row = row_for(g, known_[t]);
            const int64_t count = cat_.count(row);
            base_.push_back(base_.back() + count);
            if (base_.back() > kMaxPartitions && base_[t] <= kMaxPartitions)
                error(err, BuildErrorCode::kTooManyPartitions, row, base_.back());
            out_.partition_count.push_back(static_cast<int32_t>(std::min<int64_t>(count, INT32_MAX)));
            out_.topic_row.push_back(row);
            out_.topic_entries.push_back(first_entry_[known_[t]]);
            claim_limit_[known_[t]] = static_cast<uint64_t>(count);
            claim_base_[known_[t]] = base_[t];
        }
        const bool too_large = base_.back() > kMaxPartitions;
        const int64_t part0 = out_.part_offsets.back();
        for (std::size_t t = 0; t < known_.size(); ++t)
            out_.part_offsets.push_back(part0 + (too_large ? 0 : base_[t + 1]));
        out_.topic_offsets.push_back(static_cast<int64_t>(out_.partition_count.size()));

        // ---- members in MemberInfo order: subscriptions, claims, generation, racks
        // (a member's claims are in the group's range of entries: any entry there is a claim of the group)
        const bool has_claims = has_claims_input && in_.owned_offsets[m1] > in_.owned_offsets[m0];
        bool has_generation = false, has_member_racks = false;
        int64_t dropped = 0;
        int64_t prev = -1;
        // (the claims' arrays and the output's count in locals: written through owned_out, members could alias
        // them, and the compiler would reload each one per claim)
        const int32_t* const own_code = own_code_.data;
        const int64_t* const own_part = in_.owned_partition.data;
        const uint64_t* const claim_limit = claim_limit_.data();
        const int64_t* const claim_base = claim_base_.data();
        int32_t* const owned_out = owned_out_;
        const bool nullable_claims = !in_.owned_partition_valid.empty();
        int64_t owned_n = owned_n_;
        // (each member's entries sized once and written in place: a push_back was an out-of-line call, five a
        // member, about a sixth of a member's cost in a 1,000-member group)
        const std::size_t n = order_.size();
        const std::size_t at_perm = out_.member_perm.size(), at_sub = out_.sub_offsets.size(),
                          at_own = out_.owned_offsets.size(), at_gen = out_.generation.size();
        out_.member_perm.resize(at_perm + n);
        out_.sub_offsets.resize(at_sub + n);
        out_.owned_offsets.resize(at_own + n);
        out_.generation.resize(at_gen + n);
        // (as raw pointers: sized above, they stay put while sub_topics grows)
        int64_t* const perm_out = out_.member_perm.data() + at_perm;
        int64_t* const sub_end = out_.sub_offsets.data() + at_sub;
        int64_t* const own_end = out_.owned_offsets.data() + at_own;
        int32_t* const gen_out = out_.generation.data() + at_gen;
        for (std::size_t k = 0; k < n; ++k) {
            const int64_t m = order_[k];
            perm_out[k] = m;
            const std::size_t at = out_.sub_topics.size();
            if (prev >= 0 && (same_run_[static_cast<std::size_t>(prev - m0)] == same_run_[static_cast<std::size_t>(m - m0)] ||
                              same_subscription(prev, m))) {   // the previous member's output again
                // (the previous member's first entry: prev >= 0, so k >= 1 and sub_end[k - 2] is at or after sub_offsets[at_sub - 1])
                const std::size_t from = static_cast<std::size_t>(sub_end[static_cast<std::ptrdiff_t>(k) - 2]);
                out_.sub_topics.resize(at + (at - from));
                std::copy(out_.sub_topics.begin() + static_cast<std::ptrdiff_t>(from),
                          out_.sub_topics.begin() + static_cast<std::ptrdiff_t>(at),
                          out_.sub_topics.begin() + static_cast<std::ptrdiff_t>(at));
            } else {
                for (int64_t e = in_.sub_offsets[m]; e < in_.sub_offsets[m + 1]; ++e) {
                    const int32_t c = sub_code_[e];
                    // a code is checked here too: a member said to repeat another's was not (sub_same)
                    if (static_cast<std::size_t>(c) < local_.size() && local_[c] >= 0) out_.sub_topics.push_back(local_[c]);
                }
            }
            prev = m;
            sub_end[k] = static_cast<int64_t>(out_.sub_topics.size());
            if (has_claims_input)
                for (int64_t e = in_.owned_offsets[m], e1 = in_.owned_offsets[m + 1]; e < e1; ++e) {
                    if (!nullable_claims) {
                        // fast path, a run of claims each a partition of a topic of this group (claim_limit_ is 0
                        // for any other code): no call in the loop, so its state stays in registers
                        for (; e < e1; ++e) {
                            const int32_t c = own_code[e];
                            const int64_t part = own_part[e];
                            if (c < 0 || static_cast<uint64_t>(part) >= claim_limit[c]) break;
                            owned_out[owned_n++] = static_cast<int32_t>(claim_base[c] + part);
                        }
                        if (e == e1) break;
                    }
                    const int32_t c = own_code[e];
                    if (c >= 0 && static_cast<uint64_t>(own_part[e]) < claim_limit[c] && !claim_null(e)) {
                        owned_out[owned_n++] = static_cast<int32_t>(claim_base[c] + own_part[e]);
                        continue;
                    }
                    if (c < 0 || claim_null(e)) { ++dropped; continue; }   // malformed: reported above
                    const int64_t row = row_for(g, c);
                    const int64_t p = in_.owned_partition[e];
                    if (row < 0 || p < 0 || p >= cat_.count(row)) {
                        if (strict_) error(err, row < 0 ? BuildErrorCode::kClaimUnknownTopic : BuildErrorCode::kClaimOutOfRange, m, e, row);
                        ++dropped;
                    } else if (topic_stamp_[c] == g && local_[c] >= 0) {
                        owned_out[owned_n++] = static_cast<int32_t>(base_[local_[c]] + p);
                    } else {
                        ++dropped;   // a topic nobody in the group subscribes to any more
                    }
                }
            own_end[k] = owned_n;
            int64_t gen = in_.generation.empty() ? -1 : in_.generation[m];
            if (gen < INT32_MIN || gen > INT32_MAX) gen = -1;   // reported below
            has_generation |= gen != -1;
            gen_out[k] = static_cast<int32_t>(gen);
        }
        owned_n_ = owned_n;
        for (int32_t c : known_) claim_limit_[c] = 0;
        if (!in_.generation.empty())
            for (int64_t m = m0; m < m1; ++m)
                if (in_.generation[m] < INT32_MIN || in_.generation[m] > INT32_MAX) error(err, BuildErrorCode::kGenerationRange, m);

        // racks: group-local ids by first appearance, member racks first, then replica racks
        int32_t next_rack = 1;
        auto intern_rack = [&](int32_t code) {
            if (rack_stamp_[code] != g) {
                rack_stamp_[code] = g;
                rack_local_[code] = next_rack++;
                out_.rack_codes.push_back(code);
            }
            return rack_local_[code];
        };
        const std::size_t at_rack = out_.member_rack.size();
        out_.member_rack.resize(at_rack + n);
        for (std::size_t k = 0; k < n; ++k) {
            const int32_t code = in_.member_rack.empty() ? -1 : in_.member_rack[order_[k]];
            has_member_racks |= code >= 0;
            out_.member_rack[at_rack + k] = code >= 0 ? intern_rack(code) : 0;
        }
        bool has_replica_racks = false;
        if (cat_.any_racks() && !too_large) {
            for (std::size_t t = 0; t < known_.size(); ++t) {
                const int64_t row = out_.topic_row[out_.topic_row.size() - known_.size() + t];
                const int64_t count = cat_.count(row);
                if (!cat_.has_racks(row)) {
                    out_.replica_offsets.insert(out_.replica_offsets.end(), static_cast<std::size_t>(count), out_.replica_offsets.back());
                    continue;
                }
                has_replica_racks = true;
                const int64_t q0 = cat_.part_start(row);
                for (int64_t q = q0; q < q0 + count; ++q) {
                    for (int64_t r = cat_.rack_off()[q]; r < cat_.rack_off()[q + 1]; ++r)
                        out_.replica_racks.push_back(intern_rack(cat_.rack_codes()[r]));
                    out_.replica_offsets.push_back(static_cast<int64_t>(out_.replica_racks.size()));
                }
            }
        }
        out_.rack_offsets.push_back(static_cast<int64_t>(out_.rack_codes.size()));

        uint8_t bits = (has_claims ? kInputOwned : 0) | (has_generation ? kInputGeneration : 0) |
                       (has_member_racks ? kInputMemberRack : 0) | (has_replica_racks ? kInputReplicaRacks : 0);
        if (err.a != -2) {
            bits |= kSkipGroup;
            out_.errors.push_back(err);
        }
        out_.group_inputs[g] = bits;
        out_.dropped_claims[g] = dropped;
        return has_replica_racks;
    }

    // The bytes of strings a..b-1 of a column (null entries' bytes included), as one view.
    static std::string_view group_bytes(const StringColumn& s, int64_t a, int64_t b) {
        if (a >= b) return {};
        return std::string_view(reinterpret_cast<const char*>(s.bytes.data) + (s.offset(a) - s.offset(0)),
                                static_cast<std::size_t>(s.offset(b) - s.offset(a)));
    }

    // A character beyond U+FFFF: a 4-byte UTF-8 sequence, whose lead byte is 0xF0..0xF4.
    static bool has_astral(std::string_view s) {
        // (first whether any byte is >= 0x80, 8 bytes at a time: ASCII ids, the usual, are settled by that)
        uint64_t any = 0;
        std::size_t i = 0;
        for (; i + 8 <= s.size(); i += 8) {
            uint64_t w;
            std::memcpy(&w, s.data() + i, 8);
            any |= w;
        }
        for (; i < s.size(); ++i) any |= static_cast<uint8_t>(s[i]);
        if ((any & 0x8080808080808080ull) == 0) return false;
        uint8_t high = 0;
        for (char ch : s) high = std::max(high, static_cast<uint8_t>(ch));
        return high >= 0xF0;
    }

    static bool any_negative(const View<int32_t>& codes, int64_t from, int64_t to) {
        int32_t low = 0;
        for (int64_t e = from; e < to; ++e) low = std::min(low, codes[e]);
        return low < 0;
    }

    // The caller said member m lists the codes of member m - 1 (NamedGroups::sub_same).
    bool said_same(int64_t m) const { return !in_.sub_same.empty() && in_.sub_same[m]; }

    // Members a and b list the same name codes in the same order.
    bool same_subscription(int64_t a, int64_t b) const {
        const int64_t a0 = in_.sub_offsets[a], n = in_.sub_offsets[a + 1] - a0, b0 = in_.sub_offsets[b];
        return n > 0 && in_.sub_offsets[b + 1] - b0 == n &&
               std::memcmp(sub_code_.data + a0, sub_code_.data + b0, static_cast<std::size_t>(n) * sizeof(int32_t)) == 0;
    }

    bool claim_null(int64_t e) const { return !in_.owned_partition_valid.empty() && !in_.owned_partition_valid[e]; }

    // A per-group table naming one topic twice: the repeated rows of this group.
    void check_meta_repeats(int64_t g, BuildError& err) {
        const auto& rows = cat_.repeated_rows();
        auto it = std::lower_bound(rows.begin(), rows.end(), g,
                                   [&](int64_t row, int64_t group) { return cat_.row_group(row) < group; });
        if (it != rows.end() && cat_.row_group(*it) == g) error(err, BuildErrorCode::kDuplicateMetaTopic, *it);
    }

    const TopicCatalog& cat_;
    const NamedGroups& in_;
    const bool strict_;
    BuiltGroups& out_;
    const bool sub_codes_valid_;   // every sub_names entry is a dictionary code >= 0 (checked in build_groups)
    const bool catalog_first_;     // names_ started from the catalog's names, which sub_names lists first
    BatchNames names_;
    std::vector<int32_t> sub_store_, own_store_, local_, rack_local_;
    View<int32_t> sub_code_, own_code_;
    std::vector<uint64_t> claim_limit_;   // per code: its partition count while it is a topic of the group, else 0
    int32_t* owned_out_ = nullptr;        // out_.owned_partitions, sized for every claim; owned_n_ written
    int64_t owned_n_ = 0;
    std::vector<int64_t> claim_base_;     // per code: group-local id of its partition 0, while claim_limit_ > 0   // per sub / owned entry: batch name code, -1 null
    std::vector<int64_t> row_, row_stamp_, topic_stamp_, seen_, first_entry_, rack_stamp_;
    std::vector<int64_t> order_, by_id_, base_;
    std::vector<int64_t> same_run_;   // per member of the group: the first row of its run of equal subscription lists
    std::vector<std::string_view> keys_;
    std::vector<char> statics_;
    std::vector<int32_t> known_, unknown_;
};

}  // namespace

bool check_layout(const TopicCatalog& catalog, const NamedGroups& in) {
    if (in.member_offsets.empty()) fail("member_offsets: expected G+1 offsets, got 0");
    const std::size_t G = in.member_offsets.size - 1;
    const int64_t M64 = in.member_offsets[G];
    if (M64 < 0) fail("member_offsets: negative total");
    const std::size_t M = static_cast<std::size_t>(M64);
    check_csr(in.member_offsets, G, M, "member_offsets");
    check_strings(in.member_ids, M, "member_ids");
    if (in.instance_ids.offset_count() != 0) check_strings(in.instance_ids, M, "instance_ids");
    check_csr(in.sub_offsets, M, in.sub_names.size(), "sub_offsets");
    if (!in.sub_valid.empty() && in.sub_valid.size != M) fail("sub_valid: expected one byte per member");
    if (!in.sub_same.empty() && in.sub_same.size != M) fail("sub_same: expected one byte per member");
    // Codes past the dictionary are refused. Returns whether every code checked is >= 0 (no null entry):
    // the builder then skips looking for nulls. `skip(e0)` says an entry range [e0, e1) need not be read
    // (entries of a member the caller said repeats the previous member's: the builder never reads them).
    auto check_names = [](const NameColumn& c, const char* what, auto&& ranges) {
        check_strings(c.strings, c.strings.size(), what);
        // first two branch-free OR reductions (they vectorize), which settle the common case -- no null (no
        // negative code), none past the dictionary; then min / max otherwise
        const uint32_t size = static_cast<uint32_t>(std::min<std::size_t>(c.strings.size(), INT32_MAX));
        int32_t signs = 0;
        uint32_t past = 0;
        ranges([&](int64_t e0, int64_t e1) {
            for (int64_t e = e0; e < e1; ++e) {
                signs |= c.codes[e];
                past |= static_cast<uint32_t>(static_cast<uint32_t>(c.codes[e]) >= size);
            }
        });
        if (signs >= 0 && !past) return c.dictionary && c.strings.valid.empty();
        int32_t high = -1, low = 0;
        ranges([&](int64_t e0, int64_t e1) {
            for (int64_t e = e0; e < e1; ++e) {
                high = std::max(high, c.codes[e]);
                low = std::min(low, c.codes[e]);
            }
        });
        if (high >= static_cast<int64_t>(c.strings.size())) fail(std::string(what) + ": code past the dictionary");
        return c.dictionary && c.strings.valid.empty() && low >= 0;
    };
    auto every_entry = [](const NameColumn& c) {
        return [&c](auto&& scan) { scan(0, static_cast<int64_t>(c.codes.size)); };
    };
    // Sub codes of a member said to repeat the previous member's (NamedGroups::sub_same) are never read
    // (the builder copies that member's output), unless the dictionary is remapped (then each is read and
    // bounds-checked in BatchNames) or the member opens its group: skip them.
    const bool skip_said = !in.sub_same.empty() && in.sub_names.dictionary;
    std::vector<uint8_t> opens;
    if (skip_said) {
        opens.assign(M, 0);
        for (std::size_t g = 0; g < G; ++g)
            if (in.member_offsets[g] < in.member_offsets[g + 1]) opens[static_cast<std::size_t>(in.member_offsets[g])] = 1;
    }
    const bool sub_codes_valid = skip_said
        ? check_names(in.sub_names, "sub_names", [&](auto&& scan) {
              for (std::size_t m = 0; m < M; ++m)
                  if (!in.sub_same[m] || opens[m]) scan(in.sub_offsets[m], in.sub_offsets[m + 1]);
          })
        : check_names(in.sub_names, "sub_names", every_entry(in.sub_names));
    if (!in.owned_offsets.empty()) {
        check_csr(in.owned_offsets, M, in.owned_names.size(), "owned_offsets");
        check_names(in.owned_names, "owned_names", every_entry(in.owned_names));
        if (in.owned_partition.size != in.owned_names.size()) fail("owned_partition: expected one per claim");
        if (!in.owned_partition_valid.empty() && in.owned_partition_valid.size != in.owned_names.size())
            fail("owned_partition_valid: expected one byte per claim");
    } else if (in.owned_names.size()) {
        fail("owned_names given without owned_offsets");
    }
    if (!in.generation.empty() && in.generation.size != M) fail("generation: expected one per member");
    if (!in.member_rack.empty() && in.member_rack.size != M) fail("member_rack: expected one per member");
    if (catalog.per_group())
        for (std::size_t k = 1; k < catalog.repeated_rows().size(); ++k)
            if (catalog.row_group(catalog.repeated_rows()[k]) < catalog.row_group(catalog.repeated_rows()[k - 1]))
                fail("per-group topic rows must be grouped in ascending group order");
    return sub_codes_valid;
}

BuiltGroups build_groups(const TopicCatalog& catalog, const NamedGroups& in, bool strict) {
    const bool sub_codes_valid = check_layout(catalog, in);
    BuiltGroups out;
    Builder(catalog, in, strict, out, sub_codes_valid).run();
    return out;
}

}  // namespace kafkagroup
