"""Output paths of the commands (files, folders, plots, reports), checked before any work starts.

A command that would run for minutes and then fail on its output path checks it first: a file's folder
must exist and accept a new file, a folder is created (with its parents) and must accept a new file.
The check writes and removes a probe file, so it judges what the process can really do (root on a
read-only file system, a full quota, ACLs), which ``os.access`` does not. A failure is one line:
``spark-plan --out /ro/plan: cannot write: Permission denied``.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from kafkagroup.errors import KafkaGroupError

__all__ = ["OutputPathError", "check_output_file", "check_output_dir"]


class OutputPathError(KafkaGroupError):
    """An output path that cannot be written; the message names the option and the path."""


def _probe(folder: Path, what: str) -> None:
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as e:
        raise OutputPathError(f"{what}: cannot write: {e.strerror or e}") from None


def check_output_file(path: str | os.PathLike[str], what: str) -> None:
    """``path`` can be created or replaced as a file; ``what`` names it in the message (``--plot x.png``)."""
    target = Path(path)
    if target.is_dir():
        raise OutputPathError(f"{what}: cannot write: is a directory")
    folder = target.parent
    if not folder.is_dir():
        reason = "not a directory" if folder.exists() else "no such directory"
        raise OutputPathError(f"{what}: cannot write: {reason}: {folder}")
    if target.exists():
        try:
            with open(target, "ab"):
                pass
        except OSError as e:
            raise OutputPathError(f"{what}: cannot write: {e.strerror or e}") from None
    else:
        _probe(folder, what)


def check_output_dir(path: str | os.PathLike[str], what: str) -> None:
    """``path`` is (made) a folder that accepts new files."""
    target = Path(path)
    if target.exists() and not target.is_dir():
        raise OutputPathError(f"{what}: is a file; give a directory")
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputPathError(f"{what}: cannot create: {e.strerror or e}") from None
    _probe(target, what)
