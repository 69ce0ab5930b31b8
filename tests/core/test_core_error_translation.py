"""What each C++ exception type of the engine becomes in Python (issue 10, defect 6; DESIGN.md convention 4).

std::invalid_argument (bad input) -> InvalidGroupError; any other std::logic_error (general_builder.cpp's
invariant breaches, an out-of-range index) -> InvariantError, not a bare RuntimeError.  No valid or invalid
engine input reaches an invariant breach on purpose (prepare() refuses bad input first), so the translator
is exercised through ``_core._raise_cpp_exception``, a test hook that only throws the named type.
"""
from __future__ import annotations

import pytest

from kafkagroup import _core
from kafkagroup.errors import InvalidGroupError, InvariantError, KafkaGroupError


@pytest.mark.parametrize("kind, expected", [
    ("invalid_argument", InvalidGroupError),
    ("logic_error", InvariantError),
    ("out_of_range", InvariantError),
])
def test_engine_exceptions_reach_python_as_kafkagroup_errors(kind: str, expected: type) -> None:
    message = "sticky: a target settled from the heap (potential invariant)"
    with pytest.raises(expected) as info:
        _core._raise_cpp_exception(kind, message)
    assert type(info.value) is expected and str(info.value) == message
    assert isinstance(info.value, KafkaGroupError)


def test_bad_input_is_not_an_invariant_breach() -> None:
    with pytest.raises(InvalidGroupError) as info:
        _core._raise_cpp_exception("invalid_argument", "x")
    assert not isinstance(info.value, InvariantError) and isinstance(info.value, ValueError)


def test_other_exceptions_keep_pybind11s_mapping() -> None:
    with pytest.raises(RuntimeError) as info:
        _core._raise_cpp_exception("runtime_error", "disk on fire")
    assert not isinstance(info.value, KafkaGroupError)


def test_a_real_engine_error_still_names_the_input() -> None:
    with pytest.raises(InvalidGroupError, match="member 0: subscribed topic id 3 is not in 0..0"):
        _core.assign("sticky", partition_count=[2], sub_offsets=[0, 1], sub_topics=[3])
