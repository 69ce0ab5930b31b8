"""Tables, text and progress for the command line: rich when it is installed, plain text otherwise.

rich is optional (``pip install 'kafkagroup[rich]'``, part of ``[all]``): with it, tables are drawn with
box characters and long commands show a progress bar on a terminal; without it the same tables are plain
aligned columns and progress is not shown. Either way:

* results go to stdout and diagnostics to stderr (``console(stderr=True)``);
* a table is never cut to the terminal's or a pipe's width: written to a pipe or a file it takes the
  width it needs, and on a terminal too narrow for it a cell folds onto the next line rather than losing
  digits;
* strings are printed literally (never read as rich markup);
* progress is drawn only when stderr is a terminal, so a piped or captured run stays quiet.
"""
from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TextIO

__all__ = ["have_rich", "console", "Table", "progress", "Progress"]

# A pipe or a file has no width: wide enough that no table of ours is ever squeezed.
_PIPE_WIDTH = 100_000


def have_rich() -> bool:
    try:
        import rich  # noqa: F401
    except ImportError:
        return False
    return True


class PlainConsole:
    """The part of rich's Console the commands use, writing plain text."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    @property
    def is_terminal(self) -> bool:
        return self._stream.isatty()

    def print(self, *objects: Any, **_: Any) -> None:
        print(*(str(o) for o in objects), file=self._stream)


def console(stderr: bool = False) -> Any:
    """A console on stdout (results) or stderr (diagnostics): rich's when installed, else plain."""
    stream = sys.stderr if stderr else sys.stdout
    if not have_rich():
        return PlainConsole(stream)
    from rich.console import Console

    probe = Console(file=stream, markup=False, highlight=False)
    if probe.is_terminal:
        return probe
    return Console(file=stream, width=_PIPE_WIDTH, markup=False, highlight=False, soft_wrap=True)


class Table:
    """A titled table with left/right aligned columns; printed with :func:`console`'s ``print``.

    ``Table("quality", [("strategy", "left"), ("moved", "right")])``, then ``add_row("range", "12")``.
    Cells are strings, printed as they are."""

    def __init__(self, title: str, columns: Iterable[tuple[str, str]], caption: str | None = None) -> None:
        self.title = title
        self.caption = caption
        self.columns = list(columns)
        self.rows: list[tuple[str, ...]] = []

    def add_row(self, *cells: str) -> None:
        if len(cells) != len(self.columns):
            raise ValueError(f"table {self.title!r}: {len(cells)} cells for {len(self.columns)} columns")
        self.rows.append(tuple(str(c) for c in cells))

    def __rich__(self) -> Any:
        from rich.table import Table as RichTable
        from rich.text import Text

        table = RichTable(title=Text(self.title), caption=Text(self.caption) if self.caption else None)
        for name, justify in self.columns:
            table.add_column(Text(name), justify=justify, overflow="fold")  # type: ignore[arg-type]
        for row in self.rows:
            table.add_row(*(Text(c) for c in row))
        return table

    def __str__(self) -> str:
        widths = [max([len(name)] + [len(r[i]) for r in self.rows]) for i, (name, _) in enumerate(self.columns)]

        def line(cells: Iterable[str]) -> str:
            parts = [c.rjust(w) if justify == "right" else c.ljust(w)
                     for c, w, (_, justify) in zip(cells, widths, self.columns)]
            return "  ".join(parts).rstrip()

        out = [self.title, line(name for name, _ in self.columns), "  ".join("-" * w for w in widths)]
        out += [line(r) for r in self.rows]
        if self.caption:
            out.append(self.caption)
        return "\n".join(out) + "\n"


class Progress:
    """A progress bar on stderr while a long command runs (rich, terminal only; a no-op otherwise).

    ``with progress("simulating", total=4) as bar: ... bar.advance()``; ``bar.update(completed, total)``
    for a count that is polled."""

    def __init__(self, description: str, total: float | None) -> None:
        self._bar: Any = None
        self._task: Any = None
        self._description = description
        self._total = total

    def _start(self) -> None:
        if not have_rich():
            return
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as RichProgress

        err = Console(stderr=True)
        if not err.is_terminal:
            return
        self._bar = RichProgress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=err, transient=True)
        self._task = self._bar.add_task(self._description, total=self._total)
        self._bar.start()

    @property
    def shown(self) -> bool:
        return self._bar is not None

    def advance(self, amount: float = 1) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, amount)

    def update(self, completed: float | None = None, total: float | None = None,
               description: str | None = None) -> None:
        if self._bar is not None:
            self._bar.update(self._task, completed=completed, total=total, description=description)

    def _stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


@contextmanager
def progress(description: str, total: float | None = None) -> Iterator[Progress]:
    bar = Progress(description, total)
    bar._start()
    try:
        yield bar
    finally:
        bar._stop()
