// Rack ids as the rack-aware code needs them: small. Callers intern racks densely (1..R), but a caller
// may drop members and keep the others' ids (kafkagroup.spark.change does), and the array API accepts
// any id >= 1. The rack-aware sticky code sizes lookup tables by the largest id, so one id of 2^31-1
// would allocate gigabytes: ids larger than a dense interning can produce are renumbered first.
#pragma once

#include <cstdint>
#include <vector>

#include "kafkagroup/problem.hpp"

namespace kafkagroup {

// The largest rack id among the members (kNoRack when none has a rack or member_rack is empty): tables
// indexed by a member's rack have max_member_rack + 1 entries. O(M).
int32_t max_member_rack(const Problem& problem);

// The largest rack id among the members and the replicas (kNoRack when there is none). O(M + replica
// entries).
int32_t max_rack_id(const Problem& problem);

// Owns the renumbered copies a Problem's rack views may point to.
struct CompactRackIds {
    std::vector<int32_t> member_rack, replica_racks;
};

// When some rack id exceeds (member entries + replica entries), the most distinct racks the arrays can
// name, points problem.member_rack / replica_racks at copies in `storage` where every id is replaced
// by its rank among the distinct ids (0 stays "no rack"). Ranks keep the order of ids, so every
// comparison the assignors make (sorting, equality) answers as before: the assignment is the same.
// Dense ids (every caller in this package) are left as they are: O(M + replica entries) to check;
// O(K log K) to renumber K entries otherwise.
void compact_rack_ids(Problem& problem, CompactRackIds& storage);

}  // namespace kafkagroup
