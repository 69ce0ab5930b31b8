"""A subscribed topic name may be a str subclass (check_topics accepts it): coding it
(kafkagroup._members.code_topic_lists) runs its own __hash__ / __eq__, which may change the very lists being
coded. The coder must then code what it read, never freed memory or a list's items past what it counted.

Without the fix these read freed str objects or past the codes written (a crash, or codes that are not the
names'; under tools/sanitize.sh a heap-use-after-free)."""
from __future__ import annotations

import kafkagroup
from kafkagroup import _members


def _fresh(text: str) -> str:
    return "".join(list(text))


_junk: list = []


def _refill() -> None:
    _junk.extend(_fresh("q%05d" % k) for k in range(3000))


class Meddler(str):
    """A topic name whose hash, the first time it is taken, runs `action`."""
    action = None

    def __hash__(self):
        act, Meddler.action = Meddler.action, None
        if act is not None:
            act()
        return str.__hash__(self)

    __eq__ = str.__eq__


def _decode(offsets, codes, code):
    names = {c: n for n, c in code.items()}
    if offsets is None:
        return [names[c] for c in codes.tolist()]
    return [[names[c] for c in codes[offsets[m]:offsets[m + 1]].tolist()] for m in range(len(offsets) - 1)]


def test_a_list_emptied_by_its_own_names_hash_is_coded_as_read():
    for _ in range(20):
        lst = [Meddler("a")] + [_fresh("n%03d" % k) for k in range(200)]
        expected = [str(x) for x in lst]

        def empty():
            lst.clear()
            _refill()
        Meddler.action = empty
        code: dict = {}
        offsets, codes, bad = _members.code_topic_lists([lst, [_fresh("b")]], code)
        assert bad == -1
        got = _decode(offsets, codes, code)
        assert got[0] == expected and got[1] == ["b"]


def test_a_list_shared_by_two_members_and_grown_meanwhile_is_coded_as_read():
    """Two members send the very same list object; coding it for the first grows it: the second must not be
    taken to hold the first one's codes for more names than were coded (codes copied from past the buffer)."""
    lst = [Meddler("a"), _fresh("b")]
    Meddler.action = lambda: lst.extend(_fresh("g%04d" % k) for k in range(5000))
    code: dict = {}
    offsets, codes, bad = _members.code_topic_lists([[_fresh("x")], lst, lst], code)
    assert bad == -1
    got = _decode(offsets, codes, code)
    assert got[0] == ["x"] and got[1] == ["a", "b"]
    assert got[2] in (["a", "b"], [str(x) for x in lst])   # as it was when coded, or as it is now


def _builds_the_names_given_while_emptied(first_topic, meddler: type, metadata) -> None:
    """build_group over member a's list [first_topic(), t1, u000..u099] (made afresh each time, so that emptying
    it frees its items) that `meddler`'s action empties (and refills the heap) mid-read, 20 times: the group still
    holds what the list held when it was given."""
    for _ in range(20):
        lst = [first_topic(), _fresh("t1")] + [_fresh("u%03d" % k) for k in range(100)]

        def empty():
            lst.clear()
            _refill()
        meddler.action = empty
        g = kafkagroup.build_group(metadata, {"a": {"topics": lst}, "b": {"topics": ["t1"]}})
        assert g.members == ["a", "b"]
        assert sorted(g.topics) == ["t0", "t1"]
        assert sorted(g.unknown_topics) == ["u%03d" % k for k in range(100)]


def test_build_group_with_a_meddling_topic_name_codes_the_names_it_was_given():
    _builds_the_names_given_while_emptied(lambda: Meddler("t0"), Meddler, {"t0": 2, "t1": 2})


class MeddlingMetadataName(str):
    """A metadata topic name (a str subclass, which topic_specs accepts) whose __eq__ -- run when an equal
    subscribed name that is another object is looked up -- runs `action` once."""
    action = None

    __hash__ = str.__hash__

    def __eq__(self, other):
        act, MeddlingMetadataName.action = MeddlingMetadataName.action, None
        if act is not None:
            act()
        return str.__eq__(self, other)


def test_a_metadata_names_eq_run_by_a_lookup_never_makes_the_coder_read_freed_items():
    _builds_the_names_given_while_emptied(lambda: _fresh("t0"), MeddlingMetadataName, {MeddlingMetadataName("t0"): 2, "t1": 2})
