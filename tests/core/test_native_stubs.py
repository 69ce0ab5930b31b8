"""The `.pyi` stubs of the native modules say what the modules really take.

Type checkers and editors read only the stubs, so a parameter added in pybind11 or Cython and not in the
stub is invisible to users (the build_groups stub once lacked `sub_same`, and `assignment_rows` had no
stub at all). Checked here: every public function and class method of each native module has a stub with
the same parameter names in the same order. The names come from the module itself: pybind11 writes each
overload's signature as the first line(s) of `__doc__`, Cython exposes `inspect.signature`.
"""
from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

import kafkagroup

NATIVE = ["_core", "_claims", "_members", "_codec"]
_PYBIND_INTERNAL = {"_pybind11_conduit_v1_"}
_SIGNATURE_LINE = re.compile(r"^(?:\d+\. )?(\w+)\((.*)\) ->")


def _stub(module: str) -> dict[str, list[str]]:
    """name or Class.method -> parameter names (self included for methods) as the stub declares them."""
    tree = ast.parse((Path(kafkagroup.__file__).parent / f"{module}.pyi").read_text())
    found: dict[str, list[str]] = {}

    def names(fn: ast.FunctionDef) -> list[str]:
        a = fn.args
        return [p.arg for p in a.posonlyargs + a.args + a.kwonlyargs]

    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            found[node.name] = names(node)
        elif isinstance(node, ast.ClassDef):
            found[node.name] = []
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    found[f"{node.name}.{item.name}"] = names(item)
    return found


def _split_top_level(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += ch in "[("
        depth -= ch in "])"
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    return parts + ([current] if current.strip() else [])


def _native_signatures(obj: object) -> list[list[str]] | None:
    """Every overload's parameter names, or None when the object states none (a pybind11 property)."""
    try:
        return [list(inspect.signature(obj).parameters)]      # Cython (and pybind11 when it has one)
    except (TypeError, ValueError):
        pass
    overloads = [[p.split(":")[0].split("=")[0].strip() for p in _split_top_level(m.group(2))]
                 for m in map(_SIGNATURE_LINE.match, (obj.__doc__ or "").splitlines()) if m]
    return overloads or None


def _public(module) -> list[tuple[str, object]]:
    """Functions and classes defined by the module itself (not names it imported)."""
    return [(name, obj) for name, obj in vars(module).items()
            if not name.startswith("_") and callable(obj)
            and getattr(obj, "__module__", module.__name__) == module.__name__]


@pytest.mark.parametrize("module_name", NATIVE)
def test_every_native_function_has_a_stub_with_its_parameters(module_name):
    module = importlib.import_module(f"kafkagroup.{module_name}")
    stub = _stub(module_name)
    problems = []
    for name, obj in _public(module):
        if isinstance(obj, type):
            if name not in stub:
                problems.append(f"class {name} has no stub")
                continue
            for attr, member in vars(obj).items():
                if attr in _PYBIND_INTERNAL or (attr.startswith("__") and f"{name}.{attr}" not in stub) \
                        or not callable(member):
                    continue      # dunders the stub leaves out are pybind11's or Python's own
                key = f"{name}.{attr}"
                overloads = _native_signatures(member)
                if key not in stub:
                    problems.append(f"method {key} has no stub")
                elif overloads is not None and stub[key] not in overloads:
                    problems.append(f"{key}: stub {stub[key]}, module {overloads}")
            continue
        overloads = _native_signatures(obj)
        if name not in stub:
            problems.append(f"function {name} has no stub")
        elif overloads is not None and stub[name] not in overloads:
            problems.append(f"{name}: stub {stub[name]}, module {overloads}")
    assert not problems, f"kafkagroup/{module_name}.pyi differs from the module:\n" + "\n".join(problems)


def test_the_check_sees_a_missing_parameter():
    """The comparison itself: a stub lacking a parameter the module takes is a difference."""
    from kafkagroup import _core
    overloads = _native_signatures(_core.java_compare)
    assert overloads == [["a", "b"]]
    assert ["a"] not in overloads
