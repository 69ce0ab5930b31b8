"""The worked examples in kafkagroup.protocol's docstrings are real: run them."""
from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["kafkagroup.protocol.consumer_protocol", "kafkagroup.protocol.user_data",
           "kafkagroup.protocol.leader", "kafkagroup.java_order"]


@pytest.mark.parametrize("name", MODULES)
def test_protocol_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
