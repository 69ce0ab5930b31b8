"""The APIs and versions ``kafkagroup serve`` advertises, and their kio request/response classes.

The topic admin APIs (CreateTopics, DeleteTopics, DeleteRecords, DescribeConfigs, CreatePartitions) take
Apache Kafka 4.4's ranges, which kio has in full.  The other ranges are issue 11's, chosen to overlap every client under test (Java kafka-clients 3.9, librdkafka
2.x, kafka-python 3.0, aiokafka 0.14); the real-client tests run all four against them.  Fetch stops at 12 (13+ names topics by id only) and needs
no fetch sessions (the server answers session id 0, which every client accepts).  A request for a
version outside its range closes the connection, as a broker does -- except ApiVersions, whose clients
probe with their newest version and are told the truth with a v0 body (KIP-511).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Mapping

from kio.index import load_request_schema, load_response_schema

__all__ = ["API_NAMES", "SUPPORTED", "ADVERTISED", "API_VERSIONS", "request_class", "response_class", "is_supported"]

API_VERSIONS = 18

# api key -> (name, min version, max version)
SUPPORTED: Mapping[int, tuple[str, int, int]] = {
    0: ("Produce", 3, 9),
    1: ("Fetch", 4, 12),
    2: ("ListOffsets", 1, 7),
    3: ("Metadata", 0, 12),
    8: ("OffsetCommit", 2, 9),
    9: ("OffsetFetch", 1, 9),
    10: ("FindCoordinator", 0, 6),
    11: ("JoinGroup", 0, 9),
    12: ("Heartbeat", 0, 4),
    13: ("LeaveGroup", 0, 5),
    14: ("SyncGroup", 0, 5),
    15: ("DescribeGroups", 0, 6),
    16: ("ListGroups", 0, 5),
    18: ("ApiVersions", 0, 4),
    19: ("CreateTopics", 2, 7),
    20: ("DeleteTopics", 1, 6),
    21: ("DeleteRecords", 0, 2),
    22: ("InitProducerId", 0, 4),
    32: ("DescribeConfigs", 1, 4),
    37: ("CreatePartitions", 0, 3),
    42: ("DeleteGroups", 0, 2),
    47: ("OffsetDelete", 0, 0),
    68: ("ConsumerGroupHeartbeat", 0, 1),
    69: ("ConsumerGroupDescribe", 0, 1),
}
# What ApiVersions lists: every supported API, whatever the node's config (a Kafka 4.4 broker lists
# ConsumerGroupHeartbeat / ConsumerGroupDescribe even with the consumer protocol switched off, and answers them
# UNSUPPORTED_VERSION in the body: handlers/consumer.py does the same under group.coordinator.rebalance.protocols).
ADVERTISED: Mapping[int, tuple[str, int, int]] = SUPPORTED
API_NAMES: Mapping[int, str] = {key: name for key, (name, _, _) in ADVERTISED.items()}


def is_supported(api_key: int, version: int) -> bool:
    """Is (api key, version) advertised, so parsed and answered? (Anything else closes the connection.)"""
    entry = ADVERTISED.get(api_key)
    return entry is not None and entry[1] <= version <= entry[2]


@lru_cache(maxsize=None)
def request_class(api_key: int, version: int) -> type:
    return load_request_schema(api_key, version)


@lru_cache(maxsize=None)
def response_class(api_key: int, version: int) -> type:
    return load_response_schema(api_key, version)
