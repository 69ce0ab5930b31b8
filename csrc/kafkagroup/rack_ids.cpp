#include "kafkagroup/rack_ids.hpp"

#include <algorithm>

namespace kafkagroup {

int32_t max_member_rack(const Problem& p) {
    int32_t max_rack = kNoRack;
    for (int32_t r : p.member_rack) max_rack = std::max(max_rack, r);
    return max_rack;
}

int32_t max_rack_id(const Problem& p) {
    int32_t max_rack = max_member_rack(p);
    for (int32_t r : p.replica_racks) max_rack = std::max(max_rack, r);
    return max_rack;
}

void compact_rack_ids(Problem& p, CompactRackIds& storage) {
    const std::size_t entries = p.member_rack.size + p.replica_racks.size;
    if (static_cast<std::size_t>(max_rack_id(p)) <= entries) return;  // tables sized by the largest id stay O(input)

    std::vector<int32_t> ids;
    ids.reserve(entries);
    for (int32_t r : p.member_rack)
        if (r != kNoRack) ids.push_back(r);
    ids.insert(ids.end(), p.replica_racks.begin(), p.replica_racks.end());
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    auto rank = [&](int32_t r) -> int32_t {
        if (r == kNoRack) return kNoRack;
        return static_cast<int32_t>(std::lower_bound(ids.begin(), ids.end(), r) - ids.begin()) + 1;
    };
    storage.member_rack.resize(p.member_rack.size);
    std::transform(p.member_rack.begin(), p.member_rack.end(), storage.member_rack.begin(), rank);
    storage.replica_racks.resize(p.replica_racks.size);
    std::transform(p.replica_racks.begin(), p.replica_racks.end(), storage.replica_racks.begin(), rank);
    // An empty view stays empty (data may be null): emptiness means "not given" to prepare() and the assignors.
    if (!p.member_rack.empty()) p.member_rack = View<int32_t>{storage.member_rack.data(), storage.member_rack.size()};
    if (!p.replica_racks.empty())
        p.replica_racks = View<int32_t>{storage.replica_racks.data(), storage.replica_racks.size()};
}

}  // namespace kafkagroup
