"""Java orders the wire bytes depend on, checked against a real JVM when one is installed."""
from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from hypothesis import given, settings
from hypothesis import strategies as st

from kafkagroup.java_order import java_hashmap_order, java_sort, java_string_hash, java_string_key

JAVA_SRC = Path(__file__).resolve().parent / "java" / "HashMapOrder.java"


def test_string_key_is_utf16_code_unit_order():
    # U+1F600 is a surrogate pair (0xD83D...), which Java sorts before U+E000; Python's str order differs.
    assert sorted(["\ue000", "\U0001F600"], key=java_string_key) == ["\U0001F600", "\ue000"]
    assert sorted(["\ue000", "\U0001F600"]) == ["\ue000", "\U0001F600"]


# Characters around the places where code-point and UTF-16 order part: below and above the surrogates,
# U+E000..U+FFFF, and astral characters (surrogate pairs).
_CHARS = st.sampled_from(["a", "z", "\u00e9", "\ud7ff", "\ue000", "\uffff", "\U00010000", "\U0001F600"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(_CHARS, max_size=4), max_size=12))
def test_java_sort_is_utf16_order_with_or_without_astral_characters(names):
    # the str-order shortcut (no character beyond U+FFFF) and the UTF-16 key must give one order,
    # stable for repeated names (items carry their input position)
    items = list(enumerate(names))
    java_sort(items, lambda item: item[1])
    assert items == sorted(enumerate(names), key=lambda item: java_string_key(item[1]))


def test_string_hash_matches_known_java_values():
    assert java_string_hash("") == 0
    assert java_string_hash("foo") == 101574
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("polygenelubricants") == -2147483648


def test_order_examples_from_the_vectors():
    assert java_hashmap_order(["foo", "bar", "foo", "bar"]) == ["bar", "foo"]
    assert java_hashmap_order(["c", "a", "b", "a", "c"]) == ["a", "b", "c"]


def _cases(seed: int, count: int) -> list[list[str]]:
    rng = random.Random(seed)
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.é中\U0001F600"
    cases = []
    for _ in range(count):
        if rng.random() < 0.4:
            names = [f"t{j:03d}" for j in range(rng.randint(1, 300))]
        else:
            names = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 14))) for _ in range(rng.randint(1, 150))]
        cases.append([rng.choice(names) for _ in range(rng.randint(1, 3 * len(names)))])
    return cases


@pytest.mark.skipif(shutil.which("javac") is None or shutil.which("java") is None, reason="needs a JDK")
def test_hashmap_order_matches_a_real_jvm(tmp_path):
    subprocess.run(["javac", "-d", str(tmp_path), str(JAVA_SRC)], check=True)
    cases = _cases(7, 400)
    stdin = "".join("\t".join(case) + "\n" for case in cases).encode("utf-8")
    out = subprocess.run(["java", "-cp", str(tmp_path), "HashMapOrder"], input=stdin, capture_output=True,
                         check=True).stdout.decode("utf-8").split("\n")
    for case, line in zip(cases, out):
        assert java_hashmap_order(case) == line.split("\t")
