"""Optional dependencies, named by the extra that installs them.

The core (``pip install kafkagroup``) needs numpy only. The extras: ``[plot]`` matplotlib (``--plot``,
``bench``'s report.png), ``[serve]`` kio and cramjam (``kafkagroup serve``, ``kafkagroup.testing``) and
google-re2 (consumer groups' SubscribedTopicRegex; without it serve runs and refuses only a regex), ``[spark]``
pyspark + pandas + pyarrow (``spark-plan``; ``spark-plan --local`` needs pyarrow only), ``[rich]`` rich
(drawn tables and progress bars; plain text without it), ``[all]`` all of them.

A command that needs a missing extra says so in one line before doing any work::

    kafkagroup: spark-plan needs pyspark, pandas: pip install 'kafkagroup[spark]'
"""
from __future__ import annotations

import importlib.util
from collections.abc import Iterable

from kafkagroup.errors import KafkaGroupError

__all__ = ["MissingExtraError", "missing", "require"]


class MissingExtraError(KafkaGroupError, ImportError):
    """A feature needs an optional dependency that is not installed; the message names the extra."""


def missing(modules: Iterable[str]) -> list[str]:
    """The top-level modules of ``modules`` that cannot be imported here."""
    out = []
    for name in modules:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):   # e.g. sys.modules[name] is None: imports of it are blocked
            found = False
        if not found:
            out.append(name)
    return out


def require(what: str, modules: Iterable[str], extra: str) -> None:
    """Raise :class:`MissingExtraError` ``"<what> needs <modules>: pip install 'kafkagroup[<extra>]'"``
    when any of ``modules`` is missing."""
    absent = missing(modules)
    if absent:
        raise MissingExtraError(f"{what} needs {', '.join(absent)}: pip install 'kafkagroup[{extra}]'")
