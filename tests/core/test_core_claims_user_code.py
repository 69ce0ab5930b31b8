"""User code that runs while kafkagroup._claims reads a group's claims -- a str subclass topic's __eq__, a claim
sequence's __getitem__, a Mapping's items() -- may drop the last reference to objects the reader borrowed: the
reader must then read what it gathered (or what the claims became), never freed memory, and never take a new
str made at a freed topic's address for the old one.

Without the fixes these read freed objects: wrong partitions or slots here, a crash or a heap-use-after-free
under tools/sanitize.sh. Freed blocks are refilled with other ints / strs of the same size (`_refill`) so that
a read of freed memory shows as a wrong value in a plain build too.
"""
from __future__ import annotations

from collections.abc import Mapping

from kafkagroup import _claims


def _fresh(text: str) -> str:
    return "".join(list(text))   # a str object of its own (not interned, not a constant)


def _big(value: int) -> int:
    return int(str(value))       # an int object of its own, freed with its last container


_junk: list = []


def _refill() -> None:
    """Reuses freed int and str blocks for other values (kept alive to the end of the test module)."""
    _junk.extend(int(str(990_000_000 + k)) for k in range(2000))
    _junk.extend(_fresh("zz%d" % k) for k in range(2000))


class Dropper(str):
    """A topic name (as a key of the slot dict, e.g. a metadata or subscribed name that is a str subclass) whose
    __eq__ -- run by a dict lookup of an equal exact str -- empties the containers registered with it."""
    victims: list = []

    __hash__ = str.__hash__

    def __eq__(self, other):
        for v in Dropper.victims:
            v.clear()
        Dropper.victims = []
        _refill()
        return str.__eq__(self, other)


def test_a_topic_freed_by_user_code_is_not_taken_for_a_new_str_at_its_address():
    """Member 0's topic str is cached by address; member 1's Mapping.items() drops it and makes another topic
    name: the new str often lands at the old one's address."""
    wrong = []
    for _ in range(200):
        holder = {_fresh("alpha"): [0]}

        class Swap(Mapping):
            def __getitem__(self, key):
                raise KeyError(key)

            def __iter__(self):
                return iter(())

            def __len__(self):
                return 1

            def items(self):
                holder.clear()                         # the last reference to member 0's topic
                return {_fresh("bravo"): [1]}.items()

        offsets, slots, parts, bad = _claims.intern_claims([holder, Swap()], {"alpha": 0, "bravo": 1})
        if bad != -1 or slots.tolist() != [0, 1] or parts.tolist() != [0, 1]:
            wrong.append((slots.tolist(), parts.tolist(), bad))
    assert wrong == []


def test_pairs_dropped_by_a_claims_getitem_are_read_as_gathered():
    """Member 0's claim is a sequence whose __getitem__ empties member 1's list of pairs (its tuples' only
    owner) after pass 2 gathered them."""
    victim = [(_fresh("t"), _big(100_000 + k)) for k in range(500)]

    class Claim:
        def __len__(self):
            return 2

        def __getitem__(self, i):
            victim.clear()
            _refill()
            return ("t", 7)[i]

    offsets, slots, parts, bad = _claims.intern_claims([[Claim()], victim], {"t": 0})
    assert bad == -1
    assert offsets.tolist() == [0, 1, 501]
    assert parts.tolist() == [7] + [100_000 + k for k in range(500)]
    assert slots.tolist() == [0] * 501


def test_pairs_dropped_by_a_slot_keys_eq_are_read_as_gathered():
    """The slot dict has a str subclass key: looking a claim's topic up runs its __eq__, which empties the list
    of pairs being read."""
    pairs = [(_fresh("t"), _big(200_000 + k)) for k in range(500)]
    Dropper.victims = [pairs]
    offsets, slots, parts, bad = _claims.intern_claims([pairs], {Dropper("t"): 3})
    assert bad == -1
    assert parts.tolist() == [200_000 + k for k in range(500)]
    assert slots.tolist() == [3] * 500


def test_compact_claims_dropped_by_a_slot_keys_eq_are_never_read_freed():
    """A compact member's set is gathered (borrowed items), then its topic's lookup runs a str subclass key's
    __eq__, which empties the set: its items are freed before they are read as ints."""
    for _ in range(20):
        parts_set = {_big(300_000 + k) for k in range(300)}
        member = {_fresh("t"): parts_set}
        Dropper.victims = [parts_set]
        offsets, slots, parts, bad = _claims.intern_claims([member], {Dropper("t"): 2})
        assert bad == -1
        got = sorted(parts.tolist())
        # read before the change or after it (then empty), never freed ints
        assert got in ([300_000 + k for k in range(300)], []), got[:5]
        assert set(slots.tolist()) <= {2}
        assert offsets.tolist() == [0, len(got)]
