"""Layers import downward only (DESIGN.md's picture): a table of which layer may import which, checked on
every ``import`` statement of every module of the package, function-level imports included.

    cli                      may import anything
    sim                      client, coordinator, messages, base
    server                   coordinator, messages, base
    client / coordinator     messages, base   (neither imports the other)
    spark / compat           base
    messages                 base             (the shared message layer: requests, ErrorCode, clock)
    base                     the engine and everything below it: model, engine, api, assignors,
                             protocol, errors, structs, java_order, scenarios, the native modules
"""
from __future__ import annotations

import ast
from pathlib import Path

import kafkagroup

PACKAGE = Path(kafkagroup.__file__).parent
BASE = "base"
ALLOWED = {
    BASE: {BASE},
    "messages": {BASE, "messages"},
    "coordinator": {BASE, "messages", "coordinator"},
    "client": {BASE, "messages", "client"},
    "server": {BASE, "messages", "coordinator", "server"},
    "sim": {BASE, "messages", "coordinator", "client", "sim"},
    "spark": {BASE, "spark"},
    "compat": {BASE, "compat"},
    "cli": None,  # the command line sits on top of everything
}


def layer_of(module: str) -> str:
    parts = module.split(".")
    if parts[0] != "kafkagroup":
        raise ValueError(module)
    name = parts[1] if len(parts) > 1 else ""
    return name if name in ALLOWED else BASE


def module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, module: str) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            found.append((node.lineno, target))
    return [(line, name) for line, name in found if name == "kafkagroup" or name.startswith("kafkagroup.")]


def test_every_import_points_down_or_sideways_within_its_layer() -> None:
    violations = []
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 50, "the package's sources were not found"
    for path in files:
        module = module_name(path)
        allowed = ALLOWED[layer_of(module)]
        if allowed is None:
            continue
        for line, target in imported_modules(path, module):
            if layer_of(target) not in allowed:
                violations.append(f"{path.relative_to(PACKAGE.parent)}:{line}: {module} ({layer_of(module)}) "
                                  f"imports {target} ({layer_of(target)})")
    assert not violations, "imports that point up or across:\n" + "\n".join(violations)


def test_the_checker_sees_a_violation() -> None:
    # The table itself: a coordinator module importing the client would be reported.
    assert layer_of("kafkagroup.client.member") not in ALLOWED[layer_of("kafkagroup.coordinator.group")]
    assert layer_of("kafkagroup.coordinator.group") not in ALLOWED[layer_of("kafkagroup.client.member")]
    assert layer_of("kafkagroup.sim") not in ALLOWED["server"]
    assert layer_of("kafkagroup.model") == BASE
