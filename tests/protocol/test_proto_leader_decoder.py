"""The Cython GroupDecoder's own paths, each checked against the pure-Python twin: members whose topic
bytes equal the previous member's (copied wholesale), owned topics far from the subscription cursor,
the two-phase error order, and reuse of one decoder across calls and after errors."""
from __future__ import annotations

import random

import numpy as np
import pytest

from kafkagroup.errors import InvalidGroupError, ProtocolError
from kafkagroup.protocol import Subscription, encode_subscription, sticky_user_data
from kafkagroup.protocol.codec_harness import decode_both
from kafkagroup.protocol.leader import decode_group, native_available
from kafkagroup.structs import TopicPartition

# The Cython codec is part of every build: its absence is a failure, not a reason to skip.
assert native_available(), "kafkagroup._codec is not built (run make build)"


def _both(members, metadata, **kw):
    """(python outcome, native outcome): the group's fields, or the error type and message."""
    return decode_both(members, metadata, **kw)[:2]


def _agree(members, metadata, **kw):
    py, nat = _both(members, metadata, **kw)
    assert py == nat
    return py


def _realistic_group(seed: int, members: int = 60, topics: int = 40, partitions: int = 7):
    """Most members share one sorted subscription; some drop or add topics; ownership is sparse and
    skips long runs of the subscription (past the decoder's resync window); a few claims are stale."""
    rng = random.Random(seed)
    names = [f"orders.{t:03d}.{'x' * (t % 23)}" for t in range(topics)]
    metadata = {n: partitions for n in names[:-2]}          # the last two topics are not in the metadata
    common = sorted(names)
    out = []
    for m in range(members):
        subscribed = list(common)
        if m % 7 == 3:
            subscribed = [t for t in common if rng.random() < 0.8]
        if m % 11 == 5:
            subscribed = sorted(subscribed + ["late.topic"])
        owned = []
        for t in sorted(rng.sample(subscribed, k=min(len(subscribed), rng.choice([0, 1, 3, 25])))):
            owned += [TopicPartition(t, p) for p in sorted(rng.sample(range(partitions + 2), k=rng.randint(1, 3)))]
        if m % 13 == 0:
            owned.append(TopicPartition("not.subscribed", 0))
        user_data = sticky_user_data(owned[::2], 4) if m % 2 else None
        sub = Subscription(subscribed, user_data, owned, 3 + m % 4, f"rack-{m % 3}" if m % 5 else None)
        out.append((f"member-{(m * 37) % members:03d}", f"inst-{m}" if m % 9 == 0 else None,
                    encode_subscription(sub, 3)))
    return out, metadata


@pytest.mark.parametrize("assignor", ["range", "sticky", "cooperative-sticky"])
@pytest.mark.parametrize("seed", range(4))
def test_realistic_group_matches_the_python_twin(assignor, seed):
    members, metadata = _realistic_group(seed)
    outcome = _agree(members, metadata, assignor=assignor)
    assert outcome[0] == "ok"
    assert outcome[1]["dropped_claims"] > 0 and len(outcome[1]["unknown_topics"]) == 3


def test_strict_realistic_group_reports_the_same_first_invalid_claim():
    members, metadata = _realistic_group(1)
    kind, message = _agree(members, metadata, assignor="cooperative-sticky", strict=True)
    assert kind == "InvalidGroupError" and "claims partition" in message


def test_identical_topic_bytes_are_shared_but_other_fields_are_not():
    topics = ["a", "b", "c"]
    members = [(f"m{i}", None, encode_subscription(Subscription(
        topics, owned_partitions=[TopicPartition("b", i % 2)], generation_id=i, rack_id=f"r{i % 2}")))
        for i in range(4)]
    group = decode_group(members, {"a": 1, "b": 2, "c": 1}, assignor="cooperative-sticky", codec="native")
    assert group.sub_topics.tolist() == [0, 1, 2] * 4
    assert group.owned_partitions.tolist() == [1, 2, 1, 2] and group.generation.tolist() == [0, 1, 2, 3]
    _agree(members, {"a": 1, "b": 2, "c": 1}, assignor="cooperative-sticky")


def test_same_topic_count_but_different_bytes_is_not_shared():
    one = encode_subscription(Subscription(["a", "b"]))
    other = encode_subscription(Subscription(["a", "c"]))
    longer = encode_subscription(Subscription(["a", "bb"]))
    members = [("m0", None, one), ("m1", None, other), ("m2", None, one), ("m3", None, longer)]
    outcome = _agree(members, {"a": 1, "b": 1, "c": 1, "bb": 1})
    assert outcome[1]["sub_topics"] == [0, 1, 0, 3, 0, 1, 0, 2]   # a, b, bb, c in Java order


def test_a_duplicate_topic_in_shared_bytes_is_still_reported():
    dup = encode_subscription(Subscription(["a", "a"]))
    members = [("m0", None, dup), ("m1", None, dup)]
    assert _agree(members, {"a": 1}) == ("InvalidGroupError", "member 'm0' lists a topic twice: ['a', 'a']")


def test_malformed_tail_of_an_earlier_member_wins_over_a_malformed_head_of_a_later_one():
    good_head_bad_tail = encode_subscription(Subscription(["t0"], owned_partitions=[TopicPartition("t0", 0)]))[:-9]
    bad_head = b"\x00\x01\x00\x00\x00\x05"  # topics count 5 with nothing after it
    members = [("m0", None, good_head_bad_tail), ("m1", None, bad_head)]
    kind, message = _agree(members, {"t0": 1})
    assert kind == "ProtocolError" and message.startswith("member 'm0' subscription: owned_partitions")
    kind, message = _agree(list(reversed([("m0", None, bad_head), ("m1", None, good_head_bad_tail)])), {"t0": 1})
    assert message.startswith("member 'm0' subscription: topics at byte offset 2")


def test_protocol_error_beats_duplicate_topic_and_strict_claim_of_earlier_members():
    dup = encode_subscription(Subscription(["a", "a"], owned_partitions=[TopicPartition("a", 9)]))
    broken = encode_subscription(Subscription(["a"]))[:-3]
    kind, message = _agree([("m0", None, dup), ("m1", None, broken)], {"a": 1}, strict=True)
    assert kind == "ProtocolError" and "member 'm1'" in message
    kind, message = _agree([("m0", None, dup)], {"a": 1}, strict=True)
    assert kind == "InvalidGroupError" and "lists a topic twice" in message


def _fields(group):
    return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in vars(group).items()}


def test_one_decoder_is_reused_across_groups_and_after_errors(monkeypatch):
    # One pooled decoder for every call: a result fed back through it (the same group again, a big group
    # then a small one then the big one, after a ProtocolError and after a refused group) must not carry
    # anything over from the calls before it.
    from kafkagroup import _codec
    from kafkagroup.protocol import leader

    decoder = _codec.GroupDecoder()
    monkeypatch.setattr(leader, "_DECODERS", [decoder])
    big, big_meta = _realistic_group(2)
    racks = {t: [[f"r{p % 3}"] for p in range(n)] for t, n in big_meta.items()}
    small = [("x", None, encode_subscription(Subscription(["q"], owned_partitions=[TopicPartition("q", 0)])))]
    dup = [("d", None, encode_subscription(Subscription(["q", "q"])))]
    for kw in ({}, {"assignor": "sticky"}, {"assignor": "cooperative-sticky", "partition_racks": racks},
               {"strict": True}):
        expected = _fields(decode_group(big, big_meta, codec="python", **kw)) if "strict" not in kw else None
        first = _fields(decode_group(big, big_meta, codec="native", **kw)) if expected else None
        if expected:
            assert first == expected
            assert _fields(decode_group(big, big_meta, codec="native", **kw)) == expected
        else:
            with pytest.raises(InvalidGroupError, match="claims partition"):
                decode_group(big, big_meta, codec="native", **kw)
        assert _fields(decode_group(small, {"q": 1}, codec="native")) == _fields(decode_group(small, {"q": 1}, codec="python"))
        with pytest.raises(ProtocolError):
            decode_group([("y", None, b"\x00")], {"q": 1}, codec="native")
        with pytest.raises(InvalidGroupError, match="lists a topic twice"):
            decode_group(dup, {"q": 1}, codec="native")
        if expected:
            assert _fields(decode_group(big, big_meta, codec="native", **kw)) == expected
    assert leader._DECODERS == [decoder]


def test_decoder_calls_out_of_order_are_refused():
    from kafkagroup import _codec

    decoder = _codec.GroupDecoder()
    with pytest.raises(RuntimeError, match="parse_topics first"):
        decoder.parse_claims(None, None)
    blob = encode_subscription(Subscription(["q"]))
    head = decoder.parse_topics(["x"], [blob], 0, False)
    assert head["names"] == ["q"] and head["complete"]
    with pytest.raises(RuntimeError, match="already decoding"):
        decoder.parse_topics(["x"], [blob], 0, False)
    with pytest.raises(ValueError, match="not a distinct name"):
        decoder.parse_claims(np.array([1, 1], dtype=np.int32), np.array([0, 0], dtype=np.int32))
    decoder.release()
    assert decoder.parse_topics(["x"], [blob], 0, False)["sub_codes"].tolist() == [0]
    decoder.release()


def test_thousands_of_distinct_names_grow_the_interner():
    rng = random.Random(7)
    names = [f"t{i}-{rng.randrange(10**6)}" for i in range(3000)]
    metadata = {n: 1 + i % 3 for i, n in enumerate(names) if i % 10}
    members = []
    for m in range(3):
        subscribed = names[m * 1000: m * 1000 + 1500]
        owned = [TopicPartition(t, 0) for t in subscribed[::7]] + [TopicPartition(names[-1 - m], 0)]
        members.append((f"m{m}", None, encode_subscription(Subscription(subscribed, None, owned), 1)))
    outcome = _agree(members, metadata)
    assert outcome[0] == "ok" and len(outcome[1]["topics"]) + len(outcome[1]["unknown_topics"]) == 3000


@pytest.mark.parametrize("length", [1, 2, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 40, 63, 64, 65, 100])
def test_names_differing_in_any_one_byte_stay_distinct(length):
    # Consecutive members' names are compared word by word (the hint path): a difference at any byte
    # position of any length class must be seen.
    base = "n" * length
    variants = [base] + [base[:k] + "m" + base[k + 1:] for k in range(length)]
    members = [(f"m{i:03d}", None, encode_subscription(Subscription([name], owned_partitions=[TopicPartition(name, 0)])))
               for i, name in enumerate(variants)]
    metadata = {name: 1 for name in variants}
    outcome = _agree(members, metadata)
    assert outcome[0] == "ok" and len(outcome[1]["topics"]) == length + 1
    assert sorted(outcome[1]["owned_partitions"]) == list(range(length + 1))


def test_empty_group():
    assert _agree([], {"t0": 2})[1]["sub_offsets"] == [0]


@pytest.mark.parametrize("member_racks", [False, True])
def test_replica_racks_continue_the_member_rack_numbering(member_racks):
    blob = [encode_subscription(Subscription(["t0", "t1"], rack_id=(f"r{i}" if member_racks else None))) for i in range(3)]
    members = [(f"m{i}", None, b) for i, b in enumerate(blob)]
    racks = {"t0": [["r2", "r9"], ["r1"]], "t1": [None]}
    outcome = _agree(members, {"t0": 2, "t1": 1}, partition_racks=racks)
    assert outcome[0] == "ok"
    assert outcome[1]["racks"] == ([None, "r0", "r1", "r2", "r9"] if member_racks else [None, "r2", "r9", "r1"])


@pytest.mark.parametrize("seed", range(8))
def test_one_partition_claims_of_every_name_length_match_the_python_twin(seed):
    # The run of one-partition claims is read in C (kg_single_claims) for headers of 16..32 bytes (names of
    # 10..26 bytes) and in Cython for the others: names of 1..40 bytes, claims that leave the run at any
    # point (a partition at or past the topic's count, two partitions, a topic skipped, one not subscribed,
    # one unknown to the metadata, a name one byte off the expected one) agree with the python twin.
    rng = random.Random(seed)
    names = sorted({"".join(rng.choice("ab") for _ in range(rng.randint(1, 40))) for _ in range(30)})
    metadata = {n: rng.randint(1, 4) for n in names[:-1]}   # the last name is unknown to the metadata
    members = []
    for m in range(12):
        subscribed = [n for n in names if rng.random() < 0.9]
        owned = []
        for n in subscribed:
            r = rng.random()
            count = metadata.get(n, 2)
            if r < 0.7:
                owned.append(TopicPartition(n, rng.randrange(count)))
            elif r < 0.8:
                owned.append(TopicPartition(n, count + rng.randrange(2)))   # past the topic's partitions
            elif r < 0.9:
                owned += [TopicPartition(n, 0), TopicPartition(n, count)]
        if rng.random() < 0.5:
            near = rng.choice(names)
            owned.append(TopicPartition(near[:-1] + ("b" if near[-1] == "a" else "a"), 0))   # one byte off
        owned.sort(key=lambda tp: (names.index(tp.topic) if tp.topic in names else -1, tp.partition))
        members.append((f"m{m:02d}", None, encode_subscription(Subscription(subscribed, None, owned, 2), 3)))
    for assignor in ("range", "cooperative-sticky"):
        assert _agree(members, metadata, assignor=assignor)[0] == "ok"


@pytest.mark.parametrize("assignor", ["range", "sticky"])
def test_single_claim_runs_cut_short_at_every_byte_match_the_python_twin(assignor):
    # kg_single_claims skips the per-group bounds test when the bytes left hold every group it may take as
    # one-partition claims, and tests each group otherwise: a member whose one-partition claims (16..32-byte
    # headers, one 9-byte name in the middle that the Cython loop takes) end at every byte offset, and one
    # claiming fewer topics than it subscribes to, give the python twin's result or error, offsets included.
    names = [f"topic-{t:05d}" for t in range(3)] + ["short-one"] + [f"topic-{t:05d}" for t in range(3, 6)]
    names.sort()
    metadata = {n: 3 for n in names}
    owned = [TopicPartition(n, 1) for n in names]
    if assignor == "sticky":
        blob = encode_subscription(Subscription(names, sticky_user_data(owned, 2), [], -1), 3)
    else:
        blob = encode_subscription(Subscription(names, None, owned, 2), 3)
    fewer = encode_subscription(Subscription(names, None, owned[:2] + owned[4:], 2), 3)
    for cut in range(len(blob) + 1):
        members = [("m0", None, blob), ("m1", None, fewer), ("m2", None, blob[:cut]), ("m3", None, blob)]
        _agree(members, metadata, assignor=assignor)
