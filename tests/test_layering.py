"""Layers import downward only (README's architecture table, DESIGN.md's layer picture): a table of which layer
may import which, checked on every ``import`` statement of every module of the package, function-level and
relative imports included.

    top                      may import anything: cli.py, groupfile.py, plots.py, bench/, and the command-line
                             module of each package (sim/cli.py, spark/cli.py, server/cli.py)
    sim                      client, coordinator, messages, base
    server                   coordinator, messages, base
    testing                  server, coordinator, messages, base (the test node, its control and pytest plugin)
    client / coordinator     messages, base   (neither imports the other)
    spark / compat / examples  base
    messages                 base             (the shared message layer: requests, ErrorCode, clock)
    base                     the engine and everything below it: model, engine, api, batch, assignors,
                             protocol, errors, structs, java_order, scenarios, the native modules
    native (csrc/)           no Python at all: no Python.h, no pybind11 (pyext/ is the glue)

Inside the coordinator, the two kinds of group never see each other (DESIGN.md, "Two protocols in one
coordinator"): the consumer-group package ``coordinator/consumer/`` imports none of the classic group's
modules (CLASSIC_MODULES), and those import nothing of ``coordinator/consumer/``; only the facade
(``coordinator.py``, ``groups.py``, the package ``__init__``) holds both.

Limits: an import spelled as a string (``importlib.import_module(name)``) is not seen. Those that exist:
cli.py's COMMAND_MODULES (top: may import anything), and the lazy exports of ``kafkagroup/__init__.py``
(base modules), ``kafkagroup.spark`` and ``kafkagroup.testing`` (their own modules).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path

import kafkagroup

PACKAGE = Path(kafkagroup.__file__).parent
CSRC = Path(__file__).resolve().parents[1] / "csrc"
BASE, TOP = "base", "top"
ALLOWED: dict[str, set[str] | None] = {
    BASE: {BASE},
    "messages": {BASE, "messages"},
    "coordinator": {BASE, "messages", "coordinator"},
    "client": {BASE, "messages", "client"},
    "server": {BASE, "messages", "coordinator", "server"},
    "testing": {BASE, "messages", "coordinator", "server", "testing"},
    "sim": {BASE, "messages", "coordinator", "client", "sim"},
    "spark": {BASE, "spark"},
    "compat": {BASE, "compat"},
    "examples": {BASE, "examples"},
    TOP: None,  # the command line sits on top of everything
}
TOP_MODULES = {"cli", "__main__", "groupfile", "plots", "bench"}   # kafkagroup.<name> (a module or a package)


def layer_of(module: str) -> str:
    parts = module.split(".")
    if parts[0] != "kafkagroup":
        raise ValueError(module)
    name = parts[1] if len(parts) > 1 else ""
    if name in TOP_MODULES or (len(parts) == 3 and parts[2] == "cli"):
        return TOP
    return name if name in ALLOWED else BASE


def module_name(path: Path, package: Path) -> str:
    rel = path.relative_to(package.parent).with_suffix("")
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
            # ``from kafkagroup import client``: each name may be a subpackage, in a layer of its own
            names = [f"{target}.{alias.name}" for alias in node.names] if target == "kafkagroup" else [target]
            found += [(node.lineno, name) for name in names]
    return [(line, name) for line, name in found if name == "kafkagroup" or name.startswith("kafkagroup.")]


def layering_violations(package: Path) -> list[str]:
    violations = []
    for path in sorted(package.rglob("*.py")):
        module = module_name(path, package)
        allowed = ALLOWED[layer_of(module)]
        if allowed is None:
            continue
        for line, target in imported_modules(path, module):
            if layer_of(target) not in allowed:
                violations.append(f"{path.relative_to(package.parent)}:{line}: {module} ({layer_of(module)}) "
                                  f"imports {target} ({layer_of(target)})")
    return violations


CLASSIC_MODULES = {f"kafkagroup.coordinator.{name}" for name in
                   ("group", "membership", "rebalance", "subscriptions", "offsets", "offsets_txn")}
CONSUMER_PACKAGE = "kafkagroup.coordinator.consumer"


def _is_consumer(module: str) -> bool:
    return module == CONSUMER_PACKAGE or module.startswith(CONSUMER_PACKAGE + ".")


def group_kind_violations(package: Path) -> list[str]:
    """Imports between the classic group's modules and the consumer-group package, either way."""
    violations = []
    for path in sorted(package.rglob("*.py")):
        module = module_name(path, package)
        if not (_is_consumer(module) or module in CLASSIC_MODULES):
            continue
        for line, target in imported_modules(path, module):
            if (_is_consumer(module) and target in CLASSIC_MODULES) or (module in CLASSIC_MODULES
                                                                        and _is_consumer(target)):
                violations.append(f"{path.relative_to(package.parent)}:{line}: {module} imports {target}")
    return violations


_PYTHON_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](Python\.h|pybind11/[^>"]*|numpy/[^>"]*)[>"]', re.M)


def native_violations(csrc: Path) -> list[str]:
    return [f"{path.relative_to(csrc.parent)}: includes {m.group(1)}"
            for path in sorted(csrc.rglob("*")) if path.suffix in {".h", ".hpp", ".cpp", ".cc"}
            for m in _PYTHON_INCLUDE.finditer(path.read_text(encoding="utf-8"))]


def test_every_import_points_down_or_sideways_within_its_layer() -> None:
    assert len(list(PACKAGE.rglob("*.py"))) > 50, "the package's sources were not found"
    violations = layering_violations(PACKAGE)
    assert not violations, "imports that point up or across:\n" + "\n".join(violations)


def test_classic_and_consumer_groups_never_import_each_other() -> None:
    assert (PACKAGE / "coordinator" / "consumer" / "reconcile.py").exists()
    violations = group_kind_violations(PACKAGE)
    assert not violations, "the two kinds of group must stay apart:\n" + "\n".join(violations)


def test_the_group_kind_checker_sees_violations(tmp_path: Path) -> None:
    pkg = tmp_path / "kafkagroup"
    files = {
        "__init__.py": "",
        "coordinator/__init__.py": "",
        "coordinator/coordinator.py": "from .group import G\nfrom .consumer.group import C\n",   # facade: fine
        "coordinator/group.py": "def f():\n    from .consumer import heartbeat\n",             # classic -> consumer
        "coordinator/config.py": "",
        "coordinator/consumer/__init__.py": "",
        "coordinator/consumer/group.py": "from kafkagroup.coordinator.config import X\n",        # shared: fine
        "coordinator/consumer/heartbeat.py": "from ..membership import m\n",                    # consumer -> classic
    }
    for name, text in files.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text)
    found = sorted(v.split(": ", 1)[1] for v in group_kind_violations(pkg))
    assert found == ["kafkagroup.coordinator.consumer.heartbeat imports kafkagroup.coordinator.membership",
                     "kafkagroup.coordinator.group imports kafkagroup.coordinator.consumer"], found


def test_the_native_core_has_no_python() -> None:
    assert len(list(CSRC.rglob("*.cpp"))) > 5, "csrc/ was not found next to tests/"
    violations = native_violations(CSRC)
    assert not violations, "csrc/ must stay Python-free:\n" + "\n".join(violations)


def test_the_checker_sees_violations(tmp_path: Path) -> None:
    """A package in which every layer reaches up or across once: each import is reported, and nothing else."""
    pkg = tmp_path / "kafkagroup"
    files = {
        "__init__.py": "",
        "model.py": "from kafkagroup.plots import draw\n",                               # base -> top
        "coordinator/__init__.py": "",
        "coordinator/group.py": "def f():\n    from ..client import member\n",           # across, relative
        "client/__init__.py": "from kafkagroup import coordinator\n",                   # across, package
        "client/member.py": "import kafkagroup.sim.harness as h\n",                     # client -> sim
        "messages/api.py": "from kafkagroup.coordinator.errors import E\n",             # messages -> coordinator
        "server/app.py": "from kafkagroup.client.member import GroupMember\n",          # server -> client
        "spark/executor.py": "from kafkagroup.messages import clock\n",                 # spark -> messages
        "sim/harness.py": "from kafkagroup.client import member\nfrom kafkagroup import cli\n",  # ok, then -> top
        "spark/cli.py": "from kafkagroup.plots import plot\nfrom kafkagroup.sim import x\n",    # top: anything
        "examples/a.py": "from kafkagroup.compat import kafka_python\n",                # examples -> compat
    }
    for name, text in files.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text)
    found = sorted(v.split(": ", 1)[1] for v in layering_violations(pkg))
    assert found == sorted([
        "kafkagroup.model (base) imports kafkagroup.plots (top)",
        "kafkagroup.coordinator.group (coordinator) imports kafkagroup.client (client)",
        "kafkagroup.client (client) imports kafkagroup.coordinator (coordinator)",
        "kafkagroup.client.member (client) imports kafkagroup.sim.harness (sim)",
        "kafkagroup.messages.api (messages) imports kafkagroup.coordinator.errors (coordinator)",
        "kafkagroup.server.app (server) imports kafkagroup.client.member (client)",
        "kafkagroup.spark.executor (spark) imports kafkagroup.messages (messages)",
        "kafkagroup.sim.harness (sim) imports kafkagroup.cli (top)",
        "kafkagroup.examples.a (examples) imports kafkagroup.compat (compat)",
    ]), found
    native = tmp_path / "csrc" / "kafkagroup"
    native.mkdir(parents=True)
    (native / "a.cpp").write_text('#include <vector>\n#include "problem.hpp"\n  # include <pybind11/numpy.h>\n')
    (native / "b.hpp").write_text("#include <Python.h>\n// #include <Python.h> in a comment is not an include\n")
    assert native_violations(tmp_path / "csrc") == ["csrc/kafkagroup/a.cpp: includes pybind11/numpy.h",
                                                   "csrc/kafkagroup/b.hpp: includes Python.h"]
