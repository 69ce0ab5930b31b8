"""The worked examples in the public docstrings are real: run them."""
from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["kafkagroup", "kafkagroup.api", "kafkagroup.engine", "kafkagroup.model", "kafkagroup.scenarios",
           "kafkagroup.assignors.base", "kafkagroup.batch"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
