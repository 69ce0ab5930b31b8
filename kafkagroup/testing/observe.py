"""What a test sees of a running node's groups: plain, JSON-ready views built from the coordinator's
public ListGroups / DescribeGroups answers (any group kind the coordinator lists and describes shows up).

A member's assignment is decoded from its ConsumerProtocol bytes (consumer groups, Stable only: Kafka's
DescribeGroups carries the assignment then); the generation comes from the coordinator's group object
where it keeps one (classic groups), else it is None.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["GroupView", "MemberView", "observe_groups", "matches"]


@dataclass(slots=True)
class MemberView:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: dict[str, list[int]] | None = None     # topic -> partitions; None when not known


@dataclass(slots=True)
class GroupView:
    group_id: str
    state: str                          # Empty, PreparingRebalance, CompletingRebalance, Stable, Dead
    protocol_type: str
    protocol: str                       # the selected assignor (Stable only)
    generation: int | None
    members: list[MemberView] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GroupView":
        members = [MemberView(**m) for m in data.get("members", ())]
        return cls(**{**data, "members": members})


def _assignment(protocol_type: str, data: bytes) -> dict[str, list[int]] | None:
    if protocol_type != "consumer" or not data:
        return None
    from kafkagroup.protocol.consumer_protocol import decode_assignment

    try:
        decoded = decode_assignment(data)
    except Exception:        # a client's own bytes that are not ConsumerProtocol: shown as unknown
        return None
    out: dict[str, list[int]] = {}
    for tp in decoded.partitions:
        out.setdefault(tp.topic, []).append(tp.partition)
    return {t: sorted(p) for t, p in sorted(out.items())}


def observe_groups(coordinator: Any, group_ids: list[str] | None = None) -> list[GroupView]:
    """Every group the coordinator lists (or ``group_ids``), described; call on the node's event loop."""
    from kafkagroup.messages.api import DescribeGroupsRequest

    if group_ids is None:
        group_ids = sorted(g.group_id for g in coordinator.list_groups().groups)
    views = []
    for described in coordinator.describe_groups(DescribeGroupsRequest(list(group_ids))).groups:
        group = coordinator.group(described.group_id)
        members = [MemberView(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                              _assignment(described.protocol_type, m.member_assignment))
                   for m in described.members]
        views.append(GroupView(described.group_id, described.group_state, described.protocol_type,
                               described.protocol_data, getattr(group, "generation_id", None), members))
    return views


def matches(view: GroupView | None, state: str | None, members: int | None) -> bool:
    """The condition ``wait`` waits for: the group exists, in ``state`` (if given), with ``members`` (if given)."""
    if view is None or view.state == "Dead":
        return state == "Dead" and members in (None, 0)
    return (state is None or view.state.lower() == state.lower()) and \
        (members is None or len(view.members) == members)
