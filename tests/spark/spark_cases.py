"""Random groups for the Spark tests, in both forms: kafkagroup.assign arguments and nested Arrow rows.

The groups exercise every interning rule: static and dynamic members, member ids and topic names
with characters above U+FFFF (Java orders them by UTF-16 code units), unknown subscribed topics,
owned claims (including ones on unsubscribed topics), generations, member racks and replica racks.
"""
from __future__ import annotations

import random
from typing import Any

import pyarrow as pa

from kafkagroup.spark.fleet import GROUPS_SCHEMA

TOPIC_TABLE_TYPE = pa.list_(pa.struct([("topic", pa.string()), ("partitions", pa.int32()),
                                       ("replica_racks", pa.list_(pa.list_(pa.string())))]))
# names that sort differently in Java (UTF-16) and Python (code points): U+FF5E vs U+1F600
ODD_NAMES = ["\uff5eq", "\U0001f600x", "Z", "a", "\u00e9t", "t10", "t9"]


def random_group(rng: random.Random, group_id: str, *, racks: bool = True, owned: bool = True,
                 max_members: int = 8, max_topics: int = 5, max_partitions: int = 12) -> dict[str, Any]:
    """{group_id, topics: {name: count | replica racks}, members: {member_id: spec}}."""
    names = rng.sample(ODD_NAMES + [f"{group_id}-t{i}" for i in range(6)], rng.randint(1, max_topics))
    topics: dict[str, Any] = {}
    for name in names:
        count = rng.randint(0, max_partitions)
        if racks and rng.random() < 0.3:
            topics[name] = [[rng.choice(["r0", "r1", "r2", None]) for _ in range(rng.randint(0, 3))]
                            for _ in range(count)]
        else:
            topics[name] = count
    members: dict[str, dict[str, Any]] = {}
    instances = rng.sample(["i-\U0001f600", "i-\uff5e", "i-b", "i-a", "i-c"], rng.randint(0, 3))
    for i in range(rng.randint(0, max_members)):
        member_id = rng.choice(["m", "\U0001f600m", "\uff5em", "M"]) + f"-{i}"
        subscribed = rng.sample(names + ["unknown-topic"], rng.randint(0, len(names)))
        spec: dict[str, Any] = {"topics": subscribed}
        if owned and rng.random() < 0.6:
            claims = []
            for _ in range(rng.randint(0, 4)):
                topic = rng.choice(names)
                count = topics[topic] if isinstance(topics[topic], int) else len(topics[topic])
                if count:
                    claims.append((topic, rng.randrange(count)))
            spec["owned"] = claims
            spec["generation"] = rng.choice([1, 2, 3])
        if racks and rng.random() < 0.5:
            spec["rack"] = rng.choice(["r0", "r1", "r3"])
        if instances and rng.random() < 0.5:
            spec["instance"] = instances.pop()
        members[member_id] = spec
    return {"group_id": group_id, "topics": topics, "members": members}


def single_holder(groups: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The groups with every partition claimed by one member at most (later claims dropped): the input of the
    server-side assignors, whose previous target assignment never has two holders (server-uniform refuses it)."""
    out = []
    for group in groups:
        seen: set[Any] = set()
        members = {}
        for member_id, spec in group["members"].items():
            claims = [c for c in spec.get("owned", ()) if tuple(c) not in seen]
            seen.update(map(tuple, claims))
            members[member_id] = dict(spec, owned=claims) if "owned" in spec else spec
        out.append(dict(group, members=members))
    return out


def nested_row(group: dict[str, Any]) -> dict[str, Any]:
    """The group as one nested row (GROUPS_SCHEMA plus a per-group topic_table)."""
    members = []
    for member_id, spec in group["members"].items():
        members.append({
            "member_id": member_id, "topics": spec["topics"],
            "owned": [{"topic": t, "partition": p} for t, p in spec.get("owned", ())],
            "generation": spec.get("generation"), "rack": spec.get("rack"), "instance_id": spec.get("instance"),
        })
    table = []
    for name, spec in group["topics"].items():
        if isinstance(spec, int):
            table.append({"topic": name, "partitions": spec, "replica_racks": None})
        else:
            table.append({"topic": name, "partitions": len(spec), "replica_racks": spec})
    return {"group_id": group["group_id"], "members": members, "topic_table": table}


NESTED_WITH_TABLE_SCHEMA = pa.schema(list(GROUPS_SCHEMA) + [pa.field("topic_table", TOPIC_TABLE_TYPE)])


def nested_table(groups: list[dict[str, Any]]) -> pa.Table:
    return pa.Table.from_pylist([nested_row(g) for g in groups], schema=NESTED_WITH_TABLE_SCHEMA)


def member_dicts(group: dict[str, Any]) -> list[dict[str, Any]]:
    """Member rows (one per member) of a group, MEMBER_TYPE fields plus group_id."""
    return [{"group_id": group["group_id"], **m} for m in nested_row(group)["members"]]


__all__ = ["NESTED_WITH_TABLE_SCHEMA", "TOPIC_TABLE_TYPE", "member_dicts", "nested_row",
           "nested_table", "random_group"]
