// Names -> compact problems for many groups in one call: the one statement of Kafka's rules for turning
// what members send (member ids, group.instance.ids, topic names, owned claims, generations, racks) into
// the GroupBatch that assign_batch() assigns. Every front end feeds it: the Arrow batch builder (Spark and
// the fleet loop), kafkagroup.model.build_group (a batch of one group) and the protocol codec.
//
// The rules (Kafka's, see DESIGN.md):
// - topics of a group: the distinct subscribed topics that the metadata holds, ordered as Java's
//   String.compareTo orders their names (UTF-16 code units, not code points: a character above U+FFFF
//   sorts before U+E000..U+FFFF); a subscribed topic missing from the metadata is skipped and reported;
// - members: Kafka's MemberInfo order, static members (non-empty group.instance.id) first by instance
//   id, then dynamic members by member id, both in Java order; a repeated member id or instance id is
//   an error;
// - owned claims: a claim on a topic missing from the metadata or outside 0..count-1 is an error
//   (strict) or dropped and counted; a claim on a topic no member of the group subscribes to is dropped
//   and counted; kept claims become group-local partition ids topic_base[t] + p;
// - generation: per member, -1 unknown, must fit int32; racks: group-local ids >= 1 in order of first
//   appearance, member racks (MemberInfo order) first, then replica racks (topic, partition, replica).
//
// Names arrive in Arrow's string layout (offsets + one byte buffer, optional validity) and are hashed
// here, once per batch: the cost of a batch is O(its names + members + claims + partitions) whatever the
// size of the rest of the fleet; the shared topic metadata (TopicCatalog) is hashed once, when built.
// Bad data never throws: each group's first problem is reported as a BuildError (codes, not text: the
// caller words the message with its own names) and the group is flagged kSkipGroup in group_inputs.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kafkagroup/batch.hpp"
#include "kafkagroup/problem.hpp"
#include "kafkagroup/string_table.hpp"

namespace kafkagroup {

// n strings in Arrow's layout: string i is bytes[offset(i) - offset(0), offset(i+1) - offset(0)), the offsets
// either 64-bit (`offsets`) or Arrow's own 32-bit ones (`offsets32`, when set): a front end hands over an Arrow
// string array's buffers as they are, without widening its offsets first (a copy made under Python's GIL).
// `valid` (one byte per string, 0 = null) may be empty: no nulls. Bytes are UTF-8 (Java order assumes it).
struct StringColumn {
    View<int64_t> offsets;   // [n+1], unless offsets32 is set
    View<uint8_t> bytes;
    View<uint8_t> valid;     // [n] or empty
    View<int32_t> offsets32; // [n+1] or empty

    bool wide() const { return offsets32.empty(); }
    std::size_t offset_count() const { return wide() ? offsets.size : offsets32.size; }
    int64_t offset(std::size_t i) const { return wide() ? offsets[i] : static_cast<int64_t>(offsets32[i]); }
    std::size_t size() const { return offset_count() == 0 ? 0 : offset_count() - 1; }
    bool is_null(std::size_t i) const { return !valid.empty() && valid[i] == 0; }
    std::string_view at(std::size_t i) const {
        const int64_t begin = offset(i);
        return std::string_view(reinterpret_cast<const char*>(bytes.data) + (begin - offset(0)),
                                static_cast<std::size_t>(offset(i + 1) - begin));
    }
};

// A column of names: the strings themselves (entry i is strings[i]) or, when `dictionary` is set,
// dictionary-encoded (entry i is strings[codes[i]]; a negative code is null). A front end that already
// holds distinct names (build_group, the protocol codec: one table of topic names) passes codes and pays
// for hashing each distinct name once. Already interned input -- a dictionary of distinct non-null names,
// shared by the batch's name columns in the same order -- costs nothing per entry: the codes are used as
// they are (any other dictionary is mapped entry by entry through one small vector).
struct NameColumn {
    StringColumn strings;
    View<int32_t> codes;
    bool dictionary = false;

    std::size_t size() const { return dictionary ? codes.size : strings.size(); }
};

// Topic metadata: K rows (name, partition count, optional replica racks per partition), either shared by
// every group (`group` empty: hashed once here, then looked up per batch) or one table per group (`group`
// labels each row with its group index in the batch being built; built per batch). A row with a negative
// count is invalid (the caller reports why); it is treated as absent. Racks: row k owns metadata
// partitions part_start[k]..part_start[k+1] (count[k] of them when has_racks[k], none otherwise), and
// metadata partition q the rack codes rack_codes[rack_off[q]..rack_off[q+1]] (codes >= 0, in the same
// code space as NamedGroups::member_rack). All views are copied: the catalog owns its data.
struct TopicRows {
    StringColumn names;           // [K]
    View<int64_t> count;          // [K]
    View<int64_t> group;          // [K] or empty (shared)
    View<uint8_t> has_racks;      // [K] or empty (no replica racks)
    View<int64_t> part_start;     // [K+1] or empty
    View<int64_t> rack_off;       // [Pm+1] or empty
    View<int32_t> rack_codes;
};

class TopicCatalog {
public:
    explicit TopicCatalog(const TopicRows& rows);
    TopicCatalog(const TopicCatalog&) = delete;
    TopicCatalog& operator=(const TopicCatalog&) = delete;

    bool per_group() const { return per_group_; }
    std::size_t size() const { return count_.size(); }
    // Row of `name` for group g (shared catalogs ignore g), or -1.
    int64_t find(int64_t group, std::string_view name) const;
    // rows[i] = find(-1, names[i]) for every name, in one pass that overlaps the cache misses of
    // consecutive lookups (a shared catalog of a whole fleet's topics does not fit the cache).
    void find_all(const std::vector<std::string_view>& names, int64_t* rows) const;
    int64_t count(int64_t row) const { return count_[row]; }
    bool has_racks(int64_t row) const { return !has_racks_.empty() && has_racks_[row]; }
    bool any_racks() const { return any_racks_; }
    int64_t part_start(int64_t row) const { return part_start_[row]; }
    const std::vector<int64_t>& rack_off() const { return rack_off_; }
    const std::vector<int32_t>& rack_codes() const { return rack_codes_; }
    int32_t rack_code_bound() const { return rack_code_bound_; }   // 1 + largest rack code
    // Rows that repeat a (group, name) of an earlier row of a per-group catalog (a shared catalog
    // refuses repeats: its caller reports them before building).
    const std::vector<int64_t>& repeated_rows() const { return repeated_; }
    int64_t row_group(int64_t row) const { return group_.empty() ? -1 : group_[row]; }
    // A shared catalog whose valid rows ascend in Java order (checked once, when built: K - 1 compares): a
    // group's topics are then ordered by row number, no name compared per call (kafkagroup.model builds
    // its cached catalogs in that order; any other catalog keeps the per-group sort by name).
    bool rows_in_java_order() const { return rows_in_java_order_; }
    // A shared catalog whose every row is valid (a name, a count >= 0) and names a topic no other row names:
    // the id of row k's name in name_table() is then k (names enter the table in row order, each fresh).
    bool rows_are_names() const { return rows_are_names_; }
    const StringTable& name_table() const { return names_; }
    // Whether strings 0..size()-1 of `s` are this catalog's names, row for row, byte for byte (s may hold
    // more strings after them): with rows_are_names(), the k-th string is then row k's name without hashing
    // it. O(rows + the names' bytes): offsets compared, then one memcmp.
    bool lists_names(const StringColumn& s) const;

private:
    bool per_group_ = false;
    std::string bytes_;
    std::vector<int64_t> offsets_;
    std::vector<int64_t> count_, group_, part_start_, rack_off_, repeated_;
    std::vector<uint8_t> has_racks_;
    std::vector<int32_t> rack_codes_;
    int32_t rack_code_bound_ = 0;
    bool any_racks_ = false;
    bool rows_in_java_order_ = false;
    bool rows_are_names_ = false;
    StringTable names_;                            // distinct names -> name id
    std::vector<int64_t> row_of_name_;             // shared: name id -> first row
    std::unordered_map<uint64_t, int64_t> by_group_;   // per group: (group << 32 | name id) -> first row
};

// G groups of named members. Group g owns members member_offsets[g]..member_offsets[g+1] (input rows);
// member m subscribes to sub_names entries sub_offsets[m]..sub_offsets[m+1] and claims owned entries
// owned_offsets[m]..owned_offsets[m+1] (topic owned_names[c], partition owned_partition[c]).
struct NamedGroups {
    View<int64_t> member_offsets;    // [G+1]
    StringColumn member_ids;         // [M] null or "" is an error
    StringColumn instance_ids;       // [M] or empty; null or "" = a dynamic member
    View<int64_t> sub_offsets;       // [M+1]
    View<uint8_t> sub_valid;         // [M] or empty: 0 = the member's topic list is null (an error)
    NameColumn sub_names;            // a null entry is an error
    View<uint8_t> sub_same;          // [M] or empty: 1 = member m lists the codes of member m-1 (same group).
                                     // A front end that knows it (the codec compares the members' bytes)
                                     // spares the builder comparing them; 0 = not known (compared when needed)
    View<int64_t> owned_offsets;     // [M+1] or empty (nobody claims anything)
    NameColumn owned_names;          // a null entry is a malformed claim (an error)
    View<int64_t> owned_partition;   // [C]
    View<uint8_t> owned_partition_valid;  // [C] or empty
    View<int64_t> generation;        // [M] or empty; -1 unknown; outside int32 is an error
    View<int32_t> member_rack;       // [M] or empty; rack code (catalog code space), -1 none
};

// Why a group was refused. a / b are input indices as noted (member rows, entries, metadata rows).
enum class BuildErrorCode : int32_t {
    kMemberIdMissing = 1,     // a: member (null or empty id)
    kTopicsNull = 2,          // a: member
    kTopicNameNull = 3,       // a: member, b: sub entry
    kClaimMalformed = 4,      // a: member, b: owned entry (null topic or partition)
    kSharedInstanceId = 5,    // a, b: the two members
    kDuplicateMemberId = 6,   // a: one of the two members (the first in MemberInfo order)
    kDuplicateMetaTopic = 7,  // a: metadata row repeating a topic of the group's table
    kTopicListedTwice = 8,    // a: member
    kTooManyPartitions = 9,   // a: metadata row of the topic that crosses kMaxPartitions, b: the total then
    kClaimUnknownTopic = 10,  // a: member, b: owned entry (strict only)
    kClaimOutOfRange = 11,    // a: member, b: owned entry, (strict only; count from the catalog row c)
    kGenerationRange = 12,    // a: member
};

struct BuildError {
    int64_t group = 0;
    BuildErrorCode code = BuildErrorCode::kMemberIdMissing;
    int64_t a = -1, b = -1, c = -1;
};

// The built batch: GroupBatch arrays (owned here; view() lends them to assign_batch) plus what a front end
// needs to name results. Group g's topics are topic_offsets[g]..topic_offsets[g+1] (Java order), its batch
// partitions part_offsets[topic_offsets[g]]..part_offsets[topic_offsets[g+1]] (a refused group with more
// than kMaxPartitions partitions has none, as assign_batch lays it out).
struct BuiltGroups {
    std::vector<int64_t> topic_offsets, member_offsets;   // [G+1]
    std::vector<int32_t> partition_count;                 // [TU]
    std::vector<int64_t> topic_row;                       // [TU] catalog row of each group topic
    std::vector<int64_t> topic_entries;                   // [TU] a sub_names entry naming each group topic
    std::vector<int64_t> part_offsets;                    // [TU+1] batch partition offsets
    std::vector<int64_t> member_perm;                     // [M] MemberInfo position -> input member row
    std::vector<int64_t> sub_offsets;                     // [M+1] MemberInfo order
    std::vector<int32_t> sub_topics;                      // group-local topic ids
    std::vector<int64_t> owned_offsets;                   // [M+1]
    std::vector<int32_t> owned_partitions;                // group-local partition ids
    std::vector<int32_t> generation;                      // [M]
    std::vector<int32_t> member_rack;                     // [M] group-local rack ids (0 none)
    std::vector<int64_t> replica_offsets;                 // [P+1] when any group has replica racks, else empty
    std::vector<int32_t> replica_racks;                   // group-local rack ids
    std::vector<uint8_t> group_inputs;                    // [G] GroupInput bits (kSkipGroup for refused groups)
    std::vector<int64_t> unknown_offsets;                 // [G+1]
    std::vector<int64_t> unknown_entries;                 // sub_names entries naming each unknown topic, Java order
    std::vector<int64_t> dropped_claims;                  // [G]
    std::vector<int32_t> rack_codes;                      // [R] catalog rack code of group-local rack id, per group:
    std::vector<int64_t> rack_offsets;                    // [G+1] group g's rack ids 1.. are rack_codes[rack_offsets[g]..]
    std::vector<BuildError> errors;                       // at most one per group, ascending by group

    GroupBatch view() const;   // views into the vectors above, for assign_batch()
};

// Java's String.compareTo over UTF-8 bytes: negative, zero or positive.
int java_compare(std::string_view a, std::string_view b);

// A string column of `rows` strings whose offsets fit its bytes (from >= 0, never decreasing, within the bytes
// given) and whose validity, if any, has one byte per row; throws std::invalid_argument naming `what`.
void check_strings(const StringColumn& s, std::size_t rows, const char* what);

// Checks the layout of `groups` (offsets that fit their arrays, one entry per member where one is due, codes
// within their dictionaries): what build_groups checks first, and what a caller checks before it cuts `groups`
// into slices. Throws std::invalid_argument naming the array; returns whether every sub_names entry read is a
// dictionary code >= 0 (no null to look for).
bool check_layout(const TopicCatalog& catalog, const NamedGroups& groups);

// Builds every group of `groups` against `catalog` (see the rules above). Throws std::invalid_argument
// only for a malformed layout (offsets that do not fit their arrays), never for a group's own data.
BuiltGroups build_groups(const TopicCatalog& catalog, const NamedGroups& groups, bool strict);

}  // namespace kafkagroup
