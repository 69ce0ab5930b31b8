"""Shared test fixtures: the vectors produced by Apache Kafka's own classes, loaded from ../shared/vectors/."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

VECTORS = Path(__file__).resolve().parents[1] / ".." / "shared" / "vectors"


@pytest.fixture(scope="session")
def assignor_vectors() -> list[dict]:
    return json.loads((VECTORS / "assignor_vectors.json").read_text())["vectors"]


@pytest.fixture(scope="session")
def protocol_vectors() -> dict:
    return json.loads((VECTORS / "consumer_protocol_vectors.json").read_text())
