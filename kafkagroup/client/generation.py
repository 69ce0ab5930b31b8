"""The member's group state and generation (``AbstractCoordinator.MemberState`` and ``Generation``)."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Optional

__all__ = ["MemberState", "Generation", "NO_GENERATION"]


class MemberState(Enum):
    """``AbstractCoordinator.MemberState``."""

    UNJOINED = "UNJOINED"
    PREPARING_REBALANCE = "PREPARING_REBALANCE"      # JoinGroup sent
    COMPLETING_REBALANCE = "COMPLETING_REBALANCE"    # JoinGroup answered, SyncGroup sent
    STABLE = "STABLE"                                # SyncGroup answered


@dataclass(frozen=True)
class Generation:
    """(generationId, memberId, protocolName); NO_GENERATION = (-1, "", None)."""

    generation_id: int
    member_id: str
    protocol_name: Optional[str]

    @property
    def is_reset(self) -> bool:
        return self.generation_id == -1 or self.member_id == ""


NO_GENERATION = Generation(-1, "", None)
