"""Helpers shared by the protocol tests (a uniquely named module, imported by the test files)."""
from __future__ import annotations

import json
from pathlib import Path

VECTORS_PATH = Path(__file__).resolve().parents[2] / ".." / "shared" / "vectors" / "consumer_protocol_vectors.json"


def load_vectors() -> dict:
    with open(VECTORS_PATH, encoding="utf-8") as f:
        return json.load(f)
