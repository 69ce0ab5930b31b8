"""The worked examples in the coordinator's docstrings run."""
from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["kafkagroup.coordinator.coordinator", "kafkagroup.messages.clock", "kafkagroup.coordinator.group",
           "kafkagroup.coordinator.partitioning"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
