// RangeAssignor: per topic, partitions in order, subscribers in MemberInfo order; each subscriber gets
// a contiguous range of floor(P/n) partitions and the first P mod n subscribers one more.
// Without rack awareness this is a closed formula per topic: O(P + subscriptions). With member and
// replica racks, range_racks.cpp replays Kafka's KIP-881 procedure exactly.
#include <algorithm>

#include "kafkagroup/assignors.hpp"
#include "kafkagroup/huge_pages.hpp"
#include "kafkagroup/range_racks.hpp"

namespace kafkagroup {

namespace {

// Ranges of fewer partitions than this are written in blocks of this many (contiguous_ranges), and a topic of
// such ranges may be copied from an equal one.
constexpr int64_t kShortRange = 8;

// The last few topics whose short ranges were written from their subscriber lists: a later topic with the same
// partition count, subscriber count and list (its first min(n, count) entries, all the split reads) gets exactly
// their ranges, which are copied as one block instead of written range by range. Groups often hold many such
// topics: a homogeneous group's topics share one list, and equal partition counts are common (a 1,000-member
// group over 10 topics of 5,000: one topic's 1,000 ranges written, nine copied). Heterogeneous groups repeat a few
// lists; kRecent of them are remembered, tried newest first (a count or a first entry that differs rejects a
// candidate at once; equal lists cost a comparison of min(n, count) ids, a fraction of writing that many ranges).
// Measured (a C++ loop over the split alone, 2,000 calls, medians): 1,000 members x 10 topics of 5,000 7.7 -> 5.5 us,
// 500 x 10 of 2,500 3.9 -> 2.1 us, 5,000 x 10 of 25,000 40 -> 31 us. (Callgrind counts the copy's `rep movsb` a
// byte at a time: instruction counts overstate it.)
class RecentTopics {
public:
    // A topic written before whose ranges topic t's equal, or -1.
    int32_t same_as(const Prepared& pr, const TopicSubscribers& subs, int32_t t) const {
        const int32_t count = pr.topic_base[t + 1] - pr.topic_base[t];
        const int64_t n = subs.count(t), read = std::min<int64_t>(n, count);
        for (int32_t k = 0; k < size_; ++k) {
            const int32_t u = topics_[(next_ - 1 - k + kRecent) % kRecent];
            if (subs.count(u) != n || pr.topic_base[u + 1] - pr.topic_base[u] != count) continue;
            if (subs.begin(u) == subs.begin(t) ||
                std::equal(subs.begin(u), subs.begin(u) + read, subs.begin(t)))
                return u;
        }
        return -1;
    }
    void written(int32_t t) {
        topics_[next_] = t;
        next_ = (next_ + 1) % kRecent;
        size_ = std::min(size_ + 1, kRecent);
    }

private:
    static constexpr int32_t kRecent = 4;
    int32_t topics_[kRecent] = {};
    int32_t next_ = 0, size_ = 0;
};

}  // namespace

std::vector<int32_t> contiguous_ranges(const Prepared& pr, const TopicSubscribers& subs) {
    std::vector<int32_t> owner = advised_vector(static_cast<std::size_t>(pr.num_partitions), kUnassigned);
    RecentTopics recent;
    for (int32_t t = 0; t < pr.num_topics; ++t) {
        const int64_t n = subs.count(t);
        const int32_t count = pr.topic_base[t + 1] - pr.topic_base[t];
        if (n == 0 || count == 0) continue;
        const int64_t per = count / n, extra = count % n;
        int32_t* out = owner.data() + pr.topic_base[t];
        const int32_t* consumers = subs.begin(t);
        // Ranges shorter than a block: an equal topic's are copied (RecentTopics). Longer ones are written as fast
        // as they would be copied.
        if (per < kShortRange) {
            const int32_t same = recent.same_as(pr, subs, t);
            if (same >= 0) {
                std::copy_n(owner.data() + pr.topic_base[same], count, out);
                continue;
            }
            recent.written(t);
        }
        // Ranges of 0 or 1 (partitions per topic about the subscriber count, e.g. 2,000 x 2,000): the run
        // loop below would pay its set-up once per partition; the subscriber list is copied instead.
        if (per == 0) {
            std::copy_n(consumers, extra, out);
            continue;
        }
        if (per == 1) {
            for (int64_t i = 0; i < extra; ++i) out[2 * i] = out[2 * i + 1] = consumers[i];
            std::copy_n(consumers + extra, n - extra, out + 2 * extra);
            continue;
        }
        // Short ranges (a few partitions each, e.g. 5,000 partitions over 1,000 subscribers): each is written as
        // a block of kBlock, two vector stores, whose tail the next range overwrites, while a whole block fits
        // in the topic; a loop of length-dependent trip count cost ~7 instructions a partition there.
        // The longer ranges (the first `extra`) and the shorter ones each get a loop of their own, the block test
        // one compare of the offset: ~11 instructions a range instead of ~20.
        constexpr int64_t kBlock = kShortRange;
        int64_t i = 0, at = 0;
        if (per < kBlock) {
            const int64_t last_block = count - kBlock;   // a block fits while at <= last_block
            // (the consumer read once: a store to out[] could alias the list)
            for (; i < extra && at <= last_block; ++i, at += per + 1) {
                const int32_t c = consumers[i];
                for (int64_t k = 0; k < kBlock; ++k) out[at + k] = c;
            }
            for (; i >= extra && i < n && at <= last_block; ++i, at += per) {
                const int32_t c = consumers[i];
                for (int64_t k = 0; k < kBlock; ++k) out[at + k] = c;
            }
        }
        for (; i < n; ++i) {
            const int64_t length = per + (i < extra ? 1 : 0);
            std::fill_n(out + at, length, consumers[i]);
            at += length;
        }
    }
    return owner;
}

std::vector<int32_t> assign_range(const Problem& p, const Prepared& pr) {
    const TopicSubscribers subs = topic_subscribers(p, pr);
    if (pr.has_racks) return assign_range_with_racks(p, pr, subs);
    return contiguous_ranges(pr, subs);
}

}  // namespace kafkagroup
