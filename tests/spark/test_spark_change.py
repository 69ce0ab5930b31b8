"""Change.apply (the what-if of compare_strategies) equals kafkagroup.assign on the changed group, by names."""
from __future__ import annotations

import random

import numpy as np
import pytest

import kafkagroup
from kafkagroup.model import build_group
from kafkagroup.spark.change import Change
from spark_cases import random_group


def _changed_group_by_names(group, strategy, change, rng_seed):
    """The changed group written out with names, as a user would hand it to kafkagroup.assign."""
    compact = build_group(group["topics"], group["members"], strict=False)
    before = kafkagroup.assign_arrays(strategy, **{**compact.arrays(), "owned_offsets": None,
                                                   "owned_partitions": None, "generation": None})
    kept, templates = change.choose_members(len(compact.members), np.random.default_rng(rng_seed))
    names = compact.members
    topics = {}
    for t, name in enumerate(compact.topics):
        spec = group["topics"][name]
        count = spec if isinstance(spec, int) else len(spec)
        grow = int(np.ceil(change.add_partitions * count - 1e-9)) if isinstance(change.add_partitions, float) \
            else change.add_partitions
        topics[name] = count + grow if isinstance(spec, int) else list(spec) + [[] for _ in range(grow)]
    members = {}
    owner_names = [names[m] if m >= 0 else None for m in before.owner.tolist()]
    tnames, tparts = compact.partition_names(np.arange(len(before.owner)))
    for m in kept.tolist():
        spec = group["members"][names[m]]
        owned = [(t, p) for t, p, o in zip(tnames, tparts, owner_names) if o == names[m]]
        members[names[m]] = {"topics": [t for t in spec["topics"] if t in topics], "owned": owned, "generation": 1,
                             "rack": spec.get("rack"), "instance": spec.get("instance")}
    for i, m in enumerate(templates.tolist()):
        spec = group["members"][names[m]]
        # dynamic, and U+FFFF sorts after every other UTF-16 code unit: added members come last in
        # MemberInfo order (static members first, then dynamic by id), as Change documents
        members[f"\uffffadded-{i:04d}"] = {"topics": [t for t in spec["topics"] if t in topics], "rack": spec.get("rack")}
    return compact, before, topics, members


@pytest.mark.parametrize("change", [Change(remove_members=0.3), Change(add_members=2), Change(add_partitions=0.5),
                                    Change(remove_members=1, add_members=0.2, add_partitions=3, seed=5)])
def test_change_equals_assign_on_changed_group(change):
    rng = random.Random(11)
    strategies = kafkagroup.strategies()
    checked = 0
    for i in range(30):
        group = random_group(rng, f"g{i}", owned=False)
        for strategy in strategies:
            compact, before, topics, members = _changed_group_by_names(group, strategy, change, rng_seed=i)
            after_arrays = change.apply(compact.arrays(), before.owner, np.random.default_rng(i))
            got = kafkagroup.assign_arrays(strategy, **after_arrays)
            expected = kafkagroup.assign(strategy, topics, members)
            assert got.metrics == expected.metrics, (group["group_id"], strategy)
            checked += 1
    assert checked > 40


def test_change_amounts():
    assert Change(remove_members=0.1).choose_members(10, np.random.default_rng(0))[0].size == 9
    assert Change(remove_members=50).choose_members(10, np.random.default_rng(0))[0].size == 1   # never empties a group
    assert Change(add_members=3).choose_members(4, np.random.default_rng(0))[1].size == 3
    assert Change(remove_members=0.25, add_partitions=0.1).describe() == "25% members removed, 10% partitions added per topic"
    with pytest.raises(ValueError, match="non-negative"):
        Change(remove_members=-1)
    with pytest.raises(ValueError, match="at most 1.0"):
        Change(remove_members=1.5)
    assert Change(remove_members=1.0).describe() == "all members but one removed"
    assert Change(remove_members=1.0).choose_members(10, np.random.default_rng(0))[0].size == 1
    assert Change(add_members=2.0).choose_members(4, np.random.default_rng(0))[1].size == 8   # growth may exceed 100%
