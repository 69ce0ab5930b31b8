"""The kept metadata's two shortcuts (issue 21: a 1,000-topic group's per-call metadata work) and what makes
them sound.

- kafkagroup._members.same_counts compares a topics dict with the names and counts read from the last one
  (instead of building both lists again and comparing them): a comparison of contents, so a dict changed in
  place between calls -- a topic added, removed, its count changed, a count replaced by an equal int, the
  topics reinserted in another order -- is read again exactly when plain_counts would read it differently.
- The native builder starts its name table from the catalog's when the subscriptions' dictionary lists the
  catalog's names first, byte for byte (TopicCatalog::lists_names), so nothing is hashed again; any other
  dictionary (another byte, another order, fewer names, a catalog with a repeated or invalid row) takes the
  hashing path. Either way the arrays are those of the plain-strings encoding.
"""
from __future__ import annotations

import numpy as np
import pytest

import kafkagroup
import kafkagroup.model as model
from kafkagroup import _core, _members
from kafkagroup.errors import InvalidGroupError
from kafkagroup.model import utf8_strings


class Named(str):
    """A str subclass: equal to its value, but not plain metadata."""


def kept(counts: dict) -> tuple[list, list]:
    pair = _members.plain_counts(counts)
    assert pair is not None
    return pair


def test_same_counts_is_plain_counts_equality():
    counts = {"t0": 3, "t1": 5, "t2": 0}
    names, values = kept(counts)
    assert _members.same_counts(counts, names, values)
    assert _members.same_counts(dict(counts), names, values)          # another dict, equal content
    assert _members.same_counts({"t0": int("3"), "t1": 5, "t2": 0}, names, values)   # an equal int, another object
    assert _members.same_counts({"".join(["t", "0"]): 3, "t1": 5, "t2": 0}, names, values)   # an equal name
    assert not _members.same_counts({"t0": 3, "t1": 5}, names, values)                # removed
    assert not _members.same_counts({**counts, "t3": 1}, names, values)               # added
    assert not _members.same_counts({"t0": 3, "t1": 6, "t2": 0}, names, values)       # a count changed
    assert not _members.same_counts({"t1": 5, "t0": 3, "t2": 0}, names, values)       # another order
    assert not _members.same_counts({"t0": 3, "t1": 5, "t3": 0}, names, values)       # a name changed
    assert not _members.same_counts({"t0": 3, "t1": 5, "t2": False}, names, values)   # False == 0, but a bool
    assert not _members.same_counts({"t0": 3, "t1": 5, "t2": np.int64(0)}, names, values)
    assert not _members.same_counts({"t0": 3, "t1": 5, "t2": 0.0}, names, values)
    assert not _members.same_counts({"t0": 3, "t1": 5, Named("t2"): 0}, names, values)
    assert not _members.same_counts(counts, names[:2], values)
    assert _members.same_counts({}, [], [])


def fresh(call):
    model._last_metadata = ((), None)
    return outcome(call)


def outcome(call):
    try:
        r = call()
    except InvalidGroupError as e:
        return "error", str(e)
    return r.members, r.owner.tolist(), r.assignment._group.topics, r.unknown_topics, r.metrics


MUTATIONS = [
    ("add", lambda d: d.update({"t-new": 3})),
    ("remove", lambda d: d.pop("t0005")),
    ("change a count", lambda d: d.update({"t0007": d["t0007"] + 2})),
    ("replace a count by an equal int", lambda d: d.update({"t0003": int(str(d["t0003"]))})),
    ("reinsert in another order", lambda d: [d.update({k: d.pop(k)}) for k in list(d)[:4]]),
    ("remove and add back", lambda d: d.update({"t0002": d.pop("t0002")})),
    ("a bool count", lambda d: d.update({"t0001": True})),
    ("clear and refill", lambda d: [d.clear(), d.update({f"t{i:04d}": 2 for i in range(12)})]),
]


@pytest.mark.parametrize("strategy", ["server-uniform", "server-range", "range"])
def test_the_same_dict_mutated_between_calls_answers_as_a_first_call(strategy):
    topics = {f"t{i:04d}": 1 + i % 5 for i in range(12)}
    members = {f"m{i}": {"topics": [t for k, t in enumerate(topics) if k % 3 != i % 3] + ["t-new"]} for i in range(5)}
    members["m4"]["owned"] = [("t0003", 0), ("t0007", 1)]
    model._last_metadata = ((), None)
    for name, mutate in MUTATIONS:
        before = outcome(lambda: kafkagroup.assign(strategy, topics, members))   # keeps this metadata
        assert before == fresh(lambda: kafkagroup.assign(strategy, topics, members)), name
        mutate(topics)
        got = outcome(lambda: kafkagroup.assign(strategy, topics, members))
        assert got == fresh(lambda: kafkagroup.assign(strategy, topics, members)), name


def test_an_equal_dict_reuses_the_kept_catalog_and_a_changed_one_does_not():
    topics = {f"t{i:04d}": 4 for i in range(50)}
    members = {"m0": {"topics": list(topics)}}
    model._last_metadata = ((), None)
    kafkagroup.assign("server-uniform", topics, members)
    first = model._last_metadata[1]
    kafkagroup.assign("server-uniform", dict(topics), members)
    assert model._last_metadata[1] is first
    topics["t0010"] = 5
    r = kafkagroup.assign("server-uniform", topics, members)
    assert model._last_metadata[1] is not first and r.owner.size == 201


# ---- the builder's catalog-first name table ----------------------------------------------------------------

def built(catalog, sub_names, owned_names, sub_offsets, owned_offsets, owned_partition):
    b = _core.build_groups(catalog, np.asarray([0, len(sub_offsets) - 1], dtype=np.int64),
                           utf8_strings([f"m{i}" for i in range(len(sub_offsets) - 1)]), None, sub_offsets, None,
                           sub_names, owned_offsets, owned_names, owned_partition, None, None, None, False)
    return {k: (v if isinstance(v, list) else np.asarray(v).tolist()) for k, v in b.items()}


def dictionary(names, entries):
    code = {n: i for i, n in enumerate(names) if n is not None}
    return (*utf8_strings(names), np.asarray([code[e] for e in entries], dtype=np.int32))


CATALOGS = {
    "valid": (["a", "b", "c\u00e9", "\U0001f600"], [3, 2, 4, 1]),
    "repeated row": (["a", "b", "a", "\U0001f600"], [3, 2, 4, 1]),
    "negative count": (["a", "b", "c\u00e9", "\U0001f600"], [3, -1, 4, 1]),
    "empty": ([], []),
}
DICTIONARIES = {
    "the catalog's names": lambda names: list(names),
    "the catalog's names, then others": lambda names: list(names) + ["zz", "b\u00e9"],
    "another order": lambda names: list(reversed(names)) + ["zz"],
    "one byte different": lambda names: [n[:-1] + chr(ord(n[-1]) + 1) if i == 1 else n for i, n in enumerate(names)],
    "fewer names": lambda names: list(names)[:2],
    "with a name the catalog lacks first": lambda names: ["zz"] + list(names),
}


@pytest.mark.parametrize("catalog_kind", list(CATALOGS))
@pytest.mark.parametrize("dict_kind", list(DICTIONARIES))
def test_catalog_first_names_give_the_plain_strings_arrays(catalog_kind, dict_kind):
    names, counts = CATALOGS[catalog_kind]
    catalog = _core.TopicCatalog(utf8_strings(names), np.asarray(counts, dtype=np.int64))
    words = list(dict.fromkeys(DICTIONARIES[dict_kind](names)))   # distinct, as build_group's dictionary
    if not words:
        words = ["zz"]
    subs = [[w for k, w in enumerate(words) if (k + i) % 3] or [words[0]] for i in range(4)]
    claims = [[(w, k % 3) for k, w in enumerate(words) if (k + i) % 2] for i in range(4)]
    sub_offsets = np.cumsum([0] + [len(s) for s in subs]).astype(np.int64)
    owned_offsets = np.cumsum([0] + [len(c) for c in claims]).astype(np.int64)
    sub_entries = [w for s in subs for w in s]
    owned_entries = [t for c in claims for t, _ in c]
    partition = np.asarray([p for c in claims for _, p in c], dtype=np.int64)
    plain = built(catalog, (*utf8_strings(sub_entries), None), (*utf8_strings(owned_entries), None),
                  sub_offsets, owned_offsets, partition)
    coded = built(catalog, dictionary(words, sub_entries), dictionary(words, owned_entries),
                  sub_offsets, owned_offsets, partition)
    assert coded == plain
    # the owned names coded against another dictionary than the subscriptions' (the hashing path for them)
    other = list(reversed(words))
    assert built(catalog, dictionary(words, sub_entries), dictionary(other, owned_entries),
                 sub_offsets, owned_offsets, partition) == plain
