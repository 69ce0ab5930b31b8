#include "kafkagroup/range_racks.hpp"

#include <algorithm>
#include <unordered_map>

namespace kafkagroup {
namespace {

// One topic's progress through the rack-aware range procedure (Kafka's TopicAssignmentState).
struct TopicState {
    int32_t topic = 0;
    int32_t base = 0;        // global id of partition 0
    int32_t count = 0;       // partitions
    const int32_t* consumers = nullptr;  // subscribers in MemberInfo order
    int32_t n = 0;
    int32_t per = 0;         // floor(count / n)
    int32_t extra_left = 0;  // members that may still take one partition above `per`
    int32_t unassigned = 0;
    int32_t first_free = 0;  // every partition index below it is assigned
    std::vector<int32_t> taken;  // partitions assigned to consumer i so far
    bool consumer_racks = false;  // some subscriber has a rack: replica racks are considered
    bool needs_racks = false;
    std::vector<int32_t> rack_offsets;  // [count+1] CSR of each partition's distinct replica racks, sorted
    std::vector<int32_t> racks;

    int32_t max_assignable(int32_t i) const {
        return std::max(0, per + (extra_left > 0 ? 1 : 0) - taken[i]);
    }
    // Kafka decrements the extra budget once per assignment call that leaves the member above `per`.
    void on_assigned(int32_t i, int32_t k) {
        taken[i] += k;
        if (taken[i] > per) --extra_left;
        unassigned -= k;
    }
    bool partition_has_rack(int32_t index, int32_t rack) const {
        return std::binary_search(racks.begin() + rack_offsets[index], racks.begin() + rack_offsets[index + 1], rack);
    }
};

void build_state(TopicState& s, const Problem& p, const Prepared& pr, const TopicSubscribers& subs, int32_t t) {
    s.topic = t;
    s.base = pr.topic_base[t];
    s.count = pr.topic_base[t + 1] - pr.topic_base[t];
    s.consumers = subs.begin(t);
    s.n = static_cast<int32_t>(subs.count(t));
    s.per = s.count / s.n;
    s.extra_left = s.count % s.n;
    s.unassigned = s.count;
    s.taken.assign(static_cast<std::size_t>(s.n), 0);

    std::vector<int32_t> consumer_racks;
    for (int32_t i = 0; i < s.n; ++i)
        if (p.member_rack[s.consumers[i]] != kNoRack) consumer_racks.push_back(p.member_rack[s.consumers[i]]);
    s.consumer_racks = !consumer_racks.empty();
    if (!s.consumer_racks) return;
    std::sort(consumer_racks.begin(), consumer_racks.end());
    consumer_racks.erase(std::unique(consumer_racks.begin(), consumer_racks.end()), consumer_racks.end());

    s.rack_offsets.assign(static_cast<std::size_t>(s.count) + 1, 0);
    for (int32_t i = 0; i < s.count; ++i) {
        const int32_t part = s.base + i;
        const std::size_t start = s.racks.size();
        s.racks.insert(s.racks.end(), p.replica_racks.begin() + p.replica_offsets[part],
                       p.replica_racks.begin() + p.replica_offsets[part + 1]);
        std::sort(s.racks.begin() + start, s.racks.end());
        s.racks.erase(std::unique(s.racks.begin() + start, s.racks.end()), s.racks.end());
        s.rack_offsets[i + 1] = static_cast<int32_t>(s.racks.size());
    }
    std::vector<int32_t> all_partition_racks(s.racks);
    std::sort(all_partition_racks.begin(), all_partition_racks.end());
    all_partition_racks.erase(std::unique(all_partition_racks.begin(), all_partition_racks.end()),
                              all_partition_racks.end());
    bool racks_meet = false;
    for (int32_t r : consumer_racks)
        if (std::binary_search(all_partition_racks.begin(), all_partition_racks.end(), r)) racks_meet = true;
    bool every_partition_on_every_rack = true;
    for (int32_t i = 0; i < s.count; ++i)
        if (static_cast<std::size_t>(s.rack_offsets[i + 1] - s.rack_offsets[i]) != all_partition_racks.size())
            every_partition_on_every_rack = false;
    s.needs_racks = racks_meet && !every_partition_on_every_rack;
}

void assign_one(TopicState& s, std::vector<int32_t>& owner, int32_t consumer_index, int32_t partition_index) {
    owner[s.base + partition_index] = s.consumers[consumer_index];
}

// Kafka's assignRanges(state, racksMatch): each subscriber in order takes up to its quota of the
// unassigned partitions that have a replica on its rack. Per-rack partition lists with a forward
// cursor each: a skipped entry is already assigned and never becomes free again.
void assign_ranges_matching_racks(TopicState& s, const Problem& p, std::vector<int32_t>& owner) {
    std::vector<std::pair<int32_t, int32_t>> by_rack;  // (rack, partition index)
    for (int32_t i = 0; i < s.count; ++i)
        for (int32_t k = s.rack_offsets[i]; k < s.rack_offsets[i + 1]; ++k) by_rack.emplace_back(s.racks[k], i);
    std::sort(by_rack.begin(), by_rack.end());
    std::vector<int32_t> rack_ids, rack_start;
    for (std::size_t k = 0; k < by_rack.size(); ++k)
        if (k == 0 || by_rack[k].first != by_rack[k - 1].first) {
            rack_ids.push_back(by_rack[k].first);
            rack_start.push_back(static_cast<int32_t>(k));
        }
    rack_start.push_back(static_cast<int32_t>(by_rack.size()));
    std::vector<int32_t> rack_cursor(rack_start.begin(), rack_start.end() - 1);

    for (int32_t c = 0; c < s.n && s.unassigned > 0; ++c) {
        const int32_t limit = s.max_assignable(c);
        if (limit == 0) continue;
        const int32_t rack = p.member_rack[s.consumers[c]];
        int32_t got = 0;
        if (rack == kNoRack) {
            for (int32_t& i = s.first_free; i < s.count && got < limit; ++i)
                if (owner[s.base + i] == kUnassigned) { assign_one(s, owner, c, i); ++got; }
        } else {
            auto it = std::lower_bound(rack_ids.begin(), rack_ids.end(), rack);
            if (it == rack_ids.end() || *it != rack) continue;
            const std::size_t r = static_cast<std::size_t>(it - rack_ids.begin());
            for (int32_t& k = rack_cursor[r]; k < rack_start[r + 1] && got < limit; ++k) {
                const int32_t i = by_rack[k].second;
                if (owner[s.base + i] == kUnassigned) { assign_one(s, owner, c, i); ++got; }
            }
        }
        if (got > 0) s.on_assigned(c, got);
    }
}

// Kafka's assignCoPartitionedWithRackMatching: topics with the same subscribers and partition count
// move in lockstep (every assignment is applied to all of them), so one quota check serves the group.
// For partition index i the chosen member is the first, in MemberInfo order, with quota left whose
// rack holds a replica of partition i in every topic of the group (or that has no rack). Candidates are
// the heads of per-rack queues (members leave a queue for good once their quota is spent).
void assign_copartitioned(std::vector<TopicState*>& group, const Problem& p, std::vector<int32_t>& owner) {
    TopicState& lead = *group.front();
    std::vector<int32_t> rackless;
    std::unordered_map<int32_t, std::vector<int32_t>> by_rack;
    for (int32_t c = 0; c < lead.n; ++c) {
        const int32_t rack = p.member_rack[lead.consumers[c]];
        (rack == kNoRack ? rackless : by_rack[rack]).push_back(c);
    }
    std::size_t rackless_head = 0;
    std::unordered_map<int32_t, std::size_t> head;
    auto front = [&](const std::vector<int32_t>& queue, std::size_t& h) -> int32_t {
        while (h < queue.size() && lead.max_assignable(queue[h]) == 0) ++h;
        return h < queue.size() ? queue[h] : -1;
    };
    std::vector<int32_t> common;
    for (int32_t i = 0; i < lead.count; ++i) {
        common.assign(lead.racks.begin() + lead.rack_offsets[i], lead.racks.begin() + lead.rack_offsets[i + 1]);
        for (std::size_t g = 1; g < group.size() && !common.empty(); ++g) {
            const TopicState& other = *group[g];
            common.erase(std::remove_if(common.begin(), common.end(),
                                        [&](int32_t r) { return !other.partition_has_rack(i, r); }),
                         common.end());
        }
        int32_t best = front(rackless, rackless_head);
        for (int32_t r : common) {
            auto q = by_rack.find(r);
            if (q == by_rack.end()) continue;
            const int32_t c = front(q->second, head[r]);
            if (c >= 0 && (best < 0 || c < best)) best = c;
        }
        if (best < 0) continue;
        for (TopicState* s : group) {
            assign_one(*s, owner, best, i);
            s->on_assigned(best, 1);
        }
    }
}

// Kafka's assignRanges(state, always): each subscriber in order takes up to its quota of the
// remaining partitions, lowest index first.
void assign_remaining_ranges(TopicState& s, std::vector<int32_t>& owner) {
    for (int32_t c = 0; c < s.n && s.unassigned > 0; ++c) {
        const int32_t limit = s.max_assignable(c);
        int32_t got = 0;
        for (int32_t& i = s.first_free; i < s.count && got < limit; ++i)
            if (owner[s.base + i] == kUnassigned) { assign_one(s, owner, c, i); ++got; }
        if (got > 0) s.on_assigned(c, got);
    }
}

}  // namespace

std::vector<int32_t> assign_range_with_racks(const Problem& p, const Prepared& pr, const TopicSubscribers& subs) {
    std::vector<int32_t> owner(static_cast<std::size_t>(pr.num_partitions), kUnassigned);
    std::vector<TopicState> states;
    for (int32_t t = 0; t < pr.num_topics; ++t) {
        if (subs.count(t) == 0 || pr.topic_base[t + 1] == pr.topic_base[t]) continue;
        states.emplace_back();
        build_state(states.back(), p, pr, subs, t);
    }
    const bool use_racks = std::any_of(states.begin(), states.end(), [](const TopicState& s) { return s.needs_racks; });
    if (use_racks) {
        // Group by (subscriber set, size of Kafka's partitionRacks map: the partition count when the
        // subscribers have racks, else 0). Sorting brings equal keys together.
        std::vector<TopicState*> order;
        for (TopicState& s : states) order.push_back(&s);
        auto key_size = [](const TopicState* s) { return s->consumer_racks ? s->count : 0; };
        auto less = [&](const TopicState* a, const TopicState* b) {
            if (a->n != b->n) return a->n < b->n;
            if (key_size(a) != key_size(b)) return key_size(a) < key_size(b);
            return std::lexicographical_compare(a->consumers, a->consumers + a->n, b->consumers, b->consumers + b->n);
        };
        auto same = [&](const TopicState* a, const TopicState* b) { return !less(a, b) && !less(b, a); };
        std::stable_sort(order.begin(), order.end(), less);
        std::vector<TopicState*> group;
        for (std::size_t k = 0; k < order.size();) {
            std::size_t end = k + 1;
            while (end < order.size() && same(order[k], order[end])) ++end;
            group.assign(order.begin() + k, order.begin() + end);
            if (group.size() > 1) {
                if (key_size(group.front()) > 0) assign_copartitioned(group, p, owner);
            } else if (group.front()->needs_racks) {
                assign_ranges_matching_racks(*group.front(), p, owner);
            }
            k = end;
        }
        // The rack phases may leave holes below first_free only through skipped partitions; restart.
        for (TopicState& s : states) s.first_free = 0;
    }
    for (TopicState& s : states) assign_remaining_ranges(s, owner);
    return owner;
}

}  // namespace kafkagroup
