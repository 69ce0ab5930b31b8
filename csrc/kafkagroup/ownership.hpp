// Previous ownership: which member validly owned each partition before this rebalance.
#pragma once

#include <cstdint>
#include <vector>

#include "kafkagroup/problem.hpp"

namespace kafkagroup {

// Who validly owned what before this rebalance: owner[P] (the member whose claim on the partition is
// valid, or kUnassigned) and owned[M] (how many partitions each member validly owned: owner[] counted,
// kept while owner[] is written, so that no reader needs a pass of its own to count them).
//
// owner[] is EMPTY when no member claims any partition (a fresh group, whether owned_offsets is given or
// not): every reader takes that as "nobody owned anything", and nobody allocates and fills P entries of -1
// to learn it (16 MB written and never read at 4M partitions, 40 KB of a 10k-partition call's ~5 us).
// owned[] then holds M zeros. Cost otherwise: O(P + M + claims).
struct PreviousOwners {
    std::vector<int32_t> owner;   // [P], or empty: nobody owned anything
    std::vector<int64_t> owned;   // [M]

    bool none() const { return owner.empty(); }
};

//
// Our rules, independent of the order of members and claims:
//   1. a claim counts only if the claiming member subscribes to the partition's topic (claims on other
//      topics are skipped before anything is compared);
//   2. among the counted claims on one partition the highest generation wins; an unknown generation
//      (kUnknownGeneration, -1) is the lowest;
//   3. two different members claiming it in that highest generation void each other: nobody keeps it;
//   4. a member listing one partition twice makes one claim.
// Racks play no part here; in rack-aware mode the sticky builders demote an owner whose racks do not
// match to a "weak owner" (sticky/sticky_input.hpp) instead of dropping its claim.
//
// What Kafka 3.9 does (AbstractStickyAssignor.allSubscriptionsEqual, then one of its two builders), and
// where it differs from the rules above:
//   - allSubscriptionsEqual walks the members in the order of the leader's subscription map and compares
//     each claim with the one earlier claimant it remembers for the partition. It skips only claims on
//     topics outside the assignment (no member subscribes to them, or they are missing from the
//     metadata), not claims on topics the claimant itself no longer subscribes to. The newcomer's
//     generation comes from its memberData (sticky: the user data; cooperative-sticky: the Subscription's
//     generationId, else the user data); the earlier claimant's from its Subscription's generationId field
//     (-1 when absent or negative). Higher: the claim moves to the newcomer; lower: the earlier claimant
//     keeps it; equal: the earlier claimant loses it, the newcomer does not gain it (it is remembered as
//     the claimant to beat), and the partition is recorded as having several previous owners.
//   - A member listing a partition twice meets itself as the earlier claimant; when its two generation
//     readings agree (always for cooperative-sticky over ConsumerProtocol v2+) that is a tie, so it loses
//     the partition and the partition is recorded as above. Rule 4 differs: we keep the one claim.
//   - Equal subscriptions (ConstrainedAssignmentBuilder): every partition so recorded is removed from
//     every member's owned list, including a member of a higher generation that won it after the tie was
//     seen -- so there the outcome depends on the member order. We apply rule 2 regardless of order: a
//     higher generation wins even over an earlier tie. Claims whose racks do not match are dropped.
//   - Different subscriptions (GeneralAssignmentBuilder): the recorded set is not used (a later higher
//     generation keeps the partition, as in rule 2), and only then are claims on topics the claimant no
//     longer subscribes to, and claims whose racks do not match, removed. A higher-generation claim by
//     a member that dropped the topic therefore still defeats a lower-generation claim by a subscriber,
//     and the partition goes back to the free pool; with rule 1 the subscriber's claim is the one that
//     counts and the subscriber keeps the partition.
PreviousOwners previous_owners(const Problem& problem, const Prepared& prepared);

}  // namespace kafkagroup
