// prepare(): validate a Problem before any array is used as an index, and derive topic_base.
// Every check names the offending member / topic / partition by index; the Python layer maps indexes
// back to names. Cost: O(T + M + total CSR entries), no allocation sized by an unchecked value.
#include "kafkagroup/problem.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "kafkagroup/subscriptions.hpp"

namespace kafkagroup {
namespace {

[[noreturn]] void fail(const std::string& message) { throw std::invalid_argument(message); }

// A CSR offset array of `rows`+1 entries must start at 0, never decrease and end at `total`.
void check_offsets(const View<int64_t>& offsets, std::size_t rows, std::size_t total, const char* what,
                   const char* row_name) {
    if (offsets.size != rows + 1)
        fail(std::string(what) + ": expected " + std::to_string(rows + 1) + " offsets, got " +
             std::to_string(offsets.size));
    if (offsets[0] != 0) fail(std::string(what) + ": first offset must be 0");
    for (std::size_t i = 0; i < rows; ++i) {
        if (offsets[i + 1] < offsets[i])
            fail(std::string(what) + ": offsets decrease at " + row_name + " " + std::to_string(i));
    }
    if (static_cast<std::size_t>(offsets[rows]) != total)
        fail(std::string(what) + ": last offset " + std::to_string(offsets[rows]) + " != " +
             std::to_string(total) + " entries");
}

}  // namespace

int32_t Prepared::topic_of(int32_t partition) const {
    // topic_base is non-decreasing; the owning topic is the last t with topic_base[t] <= partition.
    auto it = std::upper_bound(topic_base.begin(), topic_base.end(), partition);
    return static_cast<int32_t>(it - topic_base.begin()) - 1;
}

void check_claims(const Problem& p, const Prepared& pr) {
    // One vectorised pass over all the claims; the per-member pass below runs only to name a bad one.
    uint32_t out_of_range = 0;
    const uint32_t limit = static_cast<uint32_t>(pr.num_partitions);
    for (std::size_t i = 0; i < p.owned_partitions.size; ++i)
        out_of_range |= static_cast<uint32_t>(p.owned_partitions[i]) >= limit;
    for (std::size_t m = 0; m < static_cast<std::size_t>(pr.num_members) && out_of_range; ++m) {
        for (int64_t i = p.owned_offsets[m]; i < p.owned_offsets[m + 1]; ++i) {
            int32_t part = p.owned_partitions[i];
            if (part < 0 || part >= pr.num_partitions)
                fail("member " + std::to_string(m) + ": owned partition id " + std::to_string(part) +
                     " is not in 0.." + std::to_string(pr.num_partitions - 1));
        }
    }
}

Prepared prepare(const Problem& p, bool check_claims_now) {
    Prepared out;
    if (p.partition_count.size > static_cast<std::size_t>(std::numeric_limits<int32_t>::max()))
        fail("too many topics");
    out.num_topics = static_cast<int32_t>(p.partition_count.size);
    out.topic_base.resize(out.num_topics + 1);
    int64_t total = 0;
    for (int32_t t = 0; t < out.num_topics; ++t) {
        int32_t count = p.partition_count[t];
        if (count < 0) fail("topic " + std::to_string(t) + ": negative partition count " + std::to_string(count));
        out.topic_base[t] = static_cast<int32_t>(total);
        total += count;
        if (total > kMaxPartitions)
            fail("topic " + std::to_string(t) + ": " + std::to_string(count) + " partitions bring the total to " +
                 std::to_string(total) + ", over the engine's limit of " + std::to_string(kMaxPartitions) +
                 " (2^28) partitions");
    }
    out.topic_base[out.num_topics] = static_cast<int32_t>(total);
    out.num_partitions = static_cast<int32_t>(total);

    const bool shared = p.shared_members >= 0;
    if (shared) {
        if (p.shared_members > std::numeric_limits<int32_t>::max()) fail("too many members");
        out.num_members = static_cast<int32_t>(p.shared_members);
        if (p.sub_offsets.size != 2 || p.sub_offsets[0] != 0 ||
            static_cast<std::size_t>(p.sub_offsets[1]) != p.sub_topics.size)
            fail("sub_offsets: the homogeneous form (shared_members) takes {0, " + std::to_string(p.sub_topics.size) +
                 "}, one row every member shares");
    } else {
        if (p.sub_offsets.size == 0) fail("sub_offsets: expected M+1 offsets, got 0");
        if (p.sub_offsets.size - 1 > static_cast<std::size_t>(std::numeric_limits<int32_t>::max()))
            fail("too many members");
        out.num_members = static_cast<int32_t>(p.sub_offsets.size - 1);
    }
    const std::size_t M = static_cast<std::size_t>(out.num_members);

    if (!shared) check_offsets(p.sub_offsets, M, p.sub_topics.size, "sub_offsets", "member");
    // last_member_of[t]: the last member seen subscribing to t, to reject a topic listed twice.
    std::vector<int32_t> last_member_of(static_cast<std::size_t>(out.num_topics), -1);
    // topic_subscribed: the topics some member lists, marked while some topic is still unmarked.
    out.topic_subscribed.assign(static_cast<std::size_t>(out.num_topics), 0);
    char* const subscribed = out.topic_subscribed.data();
    int64_t unmarked = out.num_topics;
    // A list equal to member 0's, entry for entry, was checked with member 0's (the usual case: members
    // of one application list the same topics in the same order): one memcmp instead of a pass. The
    // homogeneous form is that case without the memcmps: one row, checked once. A list in ascending order
    // (clients list their subscription sorted) is valid when its first and last ids are in range: one
    // vectorised pass, no per-topic stamp (7.5M entries at 10,000 members x 750 different topics); any
    // other list is checked entry by entry, which also names what is wrong.
    const int32_t* const first = M > 0 ? p.sub_topics.data + p.sub_offsets[0] : nullptr;
    const int64_t first_size = M > 0 ? p.sub_offsets[1] - p.sub_offsets[0] : 0;
    std::size_t same_as_first = 0;
    const std::size_t rows = shared ? std::min<std::size_t>(M, 1) : M;
    for (std::size_t m = 0; m < rows; ++m) {
        const int32_t* const list = p.sub_topics.data + p.sub_offsets[m];
        const int64_t size = p.sub_offsets[m + 1] - p.sub_offsets[m];
        // (an empty list is equal without memcmp: with no topics at all, sub_topics.data may be null, and
        // memcmp's arguments must not be, even for 0 bytes -- UBSan stops there)
        if (m > 0 && size == first_size &&
            (first_size == 0 || std::memcmp(list, first, static_cast<std::size_t>(first_size) * sizeof(int32_t)) == 0)) {
            ++same_as_first;
            continue;
        }
        int32_t descending = 0;
        for (int64_t i = 1; i < size; ++i) descending |= list[i - 1] >= list[i];
        const bool ascending_in_range = descending == 0 && (size == 0 || (list[0] >= 0 && list[size - 1] < out.num_topics));
        if (!ascending_in_range) {
            for (int64_t i = 0; i < size; ++i) {
                int32_t t = list[i];
                if (t < 0 || t >= out.num_topics)
                    fail("member " + std::to_string(m) + ": subscribed topic id " + std::to_string(t) +
                         " is not in 0.." + std::to_string(out.num_topics - 1));
                if (last_member_of[t] == static_cast<int32_t>(m))
                    fail("member " + std::to_string(m) + ": subscribes to topic " + std::to_string(t) + " twice");
                last_member_of[t] = static_cast<int32_t>(m);
            }
        }
        if (unmarked > 0)
            for (int64_t i = 0; i < size; ++i) {
                unmarked -= subscribed[list[i]] == 0;
                subscribed[list[i]] = 1;
            }
    }
    if (shared) same_as_first = M > 0 ? M - 1 : 0;

    out.uniform = M > 0 && (same_as_first + 1 == M || subscriptions_uniform(p, out));

    out.has_owned = !p.owned_offsets.empty();
    if (out.has_owned) {
        check_offsets(p.owned_offsets, M, p.owned_partitions.size, "owned_offsets", "member");
        if (check_claims_now) check_claims(p, out);
        else out.claims_checked = false;
    } else if (!p.owned_partitions.empty()) {
        fail("owned_partitions given without owned_offsets");
    }
    // The checks after the claims' place: when one fails with the claims' check deferred, the claims are checked
    // first, so that the error is the one prepare(problem) gives (the first failing check, in this order).
    try {
        if (!p.generation.empty() && p.generation.size != M)
            fail("generation: expected " + std::to_string(M) + " entries, got " + std::to_string(p.generation.size));

        const bool has_member_racks = !p.member_rack.empty();
        if (has_member_racks) {
            if (p.member_rack.size != M)
                fail("member_rack: expected " + std::to_string(M) + " entries, got " + std::to_string(p.member_rack.size));
            for (std::size_t m = 0; m < M; ++m)
                if (p.member_rack[m] < 0) fail("member " + std::to_string(m) + ": negative rack id");
        }
        const bool has_replica_racks = !p.replica_offsets.empty();
        if (has_replica_racks) {
            check_offsets(p.replica_offsets, static_cast<std::size_t>(out.num_partitions), p.replica_racks.size,
                          "replica_offsets", "partition");
            for (std::size_t i = 0; i < p.replica_racks.size; ++i)
                if (p.replica_racks[i] <= 0) fail("replica_racks: rack ids must be >= 1 (entry " + std::to_string(i) + ")");
        } else if (!p.replica_racks.empty()) {
            fail("replica_racks given without replica_offsets");
        }
        out.has_racks = has_member_racks && has_replica_racks;
    } catch (const std::invalid_argument&) {
        if (!out.claims_checked) check_claims(p, out);
        throw;
    }
    return out;
}

}  // namespace kafkagroup
