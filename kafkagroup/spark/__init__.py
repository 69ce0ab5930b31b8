"""kafkagroup on Spark: assign every consumer group of a fleet in one job (extra ``kafkagroup[spark]``).

>>> from kafkagroup.spark import assign_groups                       # doctest: +SKIP
>>> plan = assign_groups(groups_df, topics_df, strategy="range")     # doctest: +SKIP
>>> plan.assignments.show(); plan.metrics.show()                     # doctest: +SKIP

- :func:`assign_groups` -- one row per member (or per group, members nested) in; one row per assigned
  partition and one metrics row per group out. Runs ``mapInArrow`` over nested group rows (the fastest
  path measured; see :mod:`kafkagroup.spark.executor`).
- :func:`assignment_udf` -- the same as a ``pandas_udf`` for select / SQL pipelines.
- :func:`compare_strategies` -- per group and strategy: moves and balance after a change
  (members removed / added, partitions added).
- :func:`output_memory` -- how much memory of dropped outputs this process keeps for reuse (reads and
  sets the limit; needs pyarrow only).

Never imported by ``kafkagroup/__init__.py``. Importing this package imports nothing; the first use of a
name above checks that pyspark, pandas and pyarrow are installed (an ImportError naming the extra
otherwise) and imports its module. ``kafkagroup.spark.fleet`` (the single-process loop) needs pyarrow only.
"""
from __future__ import annotations

import importlib
from typing import Any

from kafkagroup.extras import require

_EXPORTS = {
    "assign_groups": "kafkagroup.spark.api",
    "compare_strategies": "kafkagroup.spark.api",
    "assignment_udf": "kafkagroup.spark.api",
    "FleetAssignment": "kafkagroup.spark.api",
    "Change": "kafkagroup.spark.change",
    "TopicMeta": "kafkagroup.spark.arrow_builder",
    "output_memory": "kafkagroup.spark.fleet",
    "OutputMemory": "kafkagroup.spark.fleet",
}
# names that need pyarrow only (the single-process loop's module), not pyspark and pandas
_PYARROW_ONLY = {"output_memory", "OutputMemory"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'kafkagroup.spark' has no attribute {name!r}")
    require(f"kafkagroup.spark.{name}", ("pyarrow",) if name in _PYARROW_ONLY else ("pyspark", "pandas", "pyarrow"),
            "spark")
    return getattr(importlib.import_module(module), name)
