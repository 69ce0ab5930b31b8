"""The sdist carries what a build needs (issue 25: it lacked csrc/**/*.hpp, pyext/*.pyx and the codec's
.pxi parts, so `pip install kafkagroup-0.1.0.tar.gz` failed), the licence the metadata names, and a core
that needs numpy only. The full round trip (wheel from this sdist, auditwheel, a fresh venv outside the
checkout) is `make test-dist` (tests/package/dist_wheel_check.py), minutes long."""
from __future__ import annotations

import subprocess
import sys
import tarfile
from email.parser import Parser
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> tarfile.TarFile:
    out = tmp_path_factory.mktemp("sdist")
    subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(out), str(REPO)],
                   check=True, capture_output=True, text=True, timeout=300)
    (path,) = out.glob("kafkagroup-*.tar.gz")
    with tarfile.open(path) as tar:
        yield tar


def tracked(*patterns: str) -> set[str]:
    listed = subprocess.run(["git", "ls-files", "--", *patterns], cwd=REPO, check=True, capture_output=True,
                            text=True).stdout.split()
    return set(listed)


def members(tar: tarfile.TarFile) -> set[str]:
    return {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}


def test_every_source_the_build_compiles_is_in_the_sdist(sdist) -> None:
    inside = members(sdist)
    needed = tracked("csrc/kafkagroup/*.hpp", "csrc/kafkagroup/*.cpp", "pyext/*.cpp", "pyext/*.pyx", "pyext/*.pxd",
                     "pyext/*.pxi", "setup.py", "pyproject.toml", "README.md", "LICENSE", "MANIFEST.in")
    assert needed and not needed - inside, sorted(needed - inside)
    package = tracked("kafkagroup/*.py", "kafkagroup/*.pyi", "kafkagroup/*.json", "kafkagroup/*.java",
                      "kafkagroup/py.typed")
    assert not package - inside, sorted(package - inside)
    assert not [n for n in inside if n.endswith((".so", ".c", ".pyc"))]     # generated files are made again


def test_the_licence_and_the_core_requirements(sdist) -> None:
    inside = members(sdist)
    assert "LICENSE" in inside
    licence = sdist.extractfile(next(n for n in sdist.getnames() if n.endswith("/LICENSE"))).read().decode()
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence
    info = Parser().parsestr(sdist.extractfile(next(n for n in sdist.getnames()
                                                    if n.count("/") == 1 and n.endswith("/PKG-INFO"))).read().decode())
    assert info["License-Expression"] == "Apache-2.0" and info.get_all("License-File") == ["LICENSE"]
    core = [r for r in info.get_all("Requires-Dist") if "extra ==" not in r]
    assert core == ["numpy>=1.26"]
    extras = set(info.get_all("Provides-Extra"))
    assert {"plot", "serve", "spark", "rich", "all"} <= extras
