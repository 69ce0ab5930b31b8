"""Kafka wire compatibility: the consumer protocol's subscription/assignment messages, assignor user
data, and the group leader's bulk codec between member bytes and the engine's compact arrays.

- :mod:`.consumer_protocol` -- Subscription / Assignment v0-v3 (``encode_*`` / ``decode_*``);
- :mod:`.user_data` -- StickyAssignor and CooperativeStickyAssignor user data;
- :mod:`.leader` -- decode N members' metadata into CSR arrays, encode N assignments from ``owner[]``
  (Cython ``kafkagroup._codec`` when built, a pure-Python twin otherwise);
- :mod:`kafkagroup.java_order` -- the Java orders (String.compareTo, HashMap iteration) the bytes depend on.
"""
from kafkagroup.protocol.consumer_protocol import (
    MAX_VERSION,
    NO_GENERATION,
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from kafkagroup.protocol.user_data import (
    MemberDataRule,
    StickyUserData,
    cooperative_sticky_user_data,
    decode_cooperative_sticky_user_data,
    decode_sticky_user_data,
    encode_sticky_user_data,
    member_owned_and_generation,
    sticky_user_data,
)

__all__ = [
    "MAX_VERSION",
    "NO_GENERATION",
    "Assignment",
    "MemberDataRule",
    "Subscription",
    "StickyUserData",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
    "cooperative_sticky_user_data",
    "decode_cooperative_sticky_user_data",
    "decode_sticky_user_data",
    "encode_sticky_user_data",
    "member_owned_and_generation",
    "sticky_user_data",
]
