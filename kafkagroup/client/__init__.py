"""Member side of Kafka's classic group protocol (spec §6): eager and cooperative (KIP-429) rebalancing,
static membership (KIP-345), rebalance callbacks, and the group leader's assignment through the engine.

- :mod:`.member` -- :class:`GroupMember`, the event-driven member state machine, assembled from
  :mod:`.join_round` (JoinGroup/SyncGroup), :mod:`.heartbeat`, :mod:`.offset_commit`, :mod:`.poll_loop` and
  :mod:`.timers`;
- :mod:`.generation` -- :class:`MemberState`, :class:`Generation`;
- :mod:`.subscription` -- the checks on ``subscribe(topics)``;
- :mod:`.errors` -- every exception this layer raises;
- :mod:`.config` -- :class:`MemberConfig` (Kafka consumer keys);
- :mod:`.rebalance_protocol` -- EAGER / COOPERATIVE selection from the assignors (§6.1);
- :mod:`.ownership` -- assignment deltas and the cooperative validity check;
- :mod:`.listener` -- rebalance callbacks and their error rule;
- :mod:`.leader` -- the leader's assignment (decode subscriptions, run the assignor, encode assignments);
- :mod:`.wire` -- JoinGroup metadata / SyncGroup assignment bytes (ConsumerProtocol, via kafkagroup.protocol);
- :mod:`.cluster` -- topic metadata the members see;
- :mod:`.transport` -- in-process transport to a coordinator through the shared clock;
- :mod:`.ledger` -- ownership ledger built from the callbacks (no partition owned twice).

The rebalance simulator that drives these members lives above this layer, in :mod:`kafkagroup.sim`.
"""
from kafkagroup.client.cluster import ClusterMetadata, MetadataSnapshot
from kafkagroup.client.config import DEFAULT_ASSIGNORS, MemberConfig
from kafkagroup.client.errors import (
    CommitFailedError,
    CooperativeAssignmentViolation,
    FatalMemberError,
    OffsetCommitError,
    RebalanceCallbackError,
    RebalanceInProgressError,
    UnexpectedCoordinatorError,
)
from kafkagroup.client.generation import NO_GENERATION, Generation, MemberState
from kafkagroup.client.listener import CallbackSet
from kafkagroup.client.member import GroupMember
from kafkagroup.client.ownership import assignment_delta, validate_cooperative_assignment
from kafkagroup.client.rebalance_protocol import RebalanceProtocol, select_rebalance_protocol
from kafkagroup.client.transport import GroupTransport, InProcessTransport

__all__ = [
    "CallbackSet", "ClusterMetadata", "CommitFailedError", "CooperativeAssignmentViolation", "DEFAULT_ASSIGNORS",
    "FatalMemberError", "Generation", "GroupMember", "GroupTransport", "InProcessTransport", "MemberConfig",
    "MemberState", "MetadataSnapshot", "NO_GENERATION", "OffsetCommitError", "RebalanceCallbackError", "RebalanceInProgressError",
    "RebalanceProtocol", "UnexpectedCoordinatorError", "assignment_delta", "select_rebalance_protocol", "validate_cooperative_assignment",
]
