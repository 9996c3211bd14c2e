"""The benches' result tables, printed as Markdown so a run pastes into docs/benchmarks.md as is."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def table(header: Sequence[str], rows: Iterable[Sequence[str]], text_columns: int = 1) -> str:
    """``header`` over ``rows`` of formatted cells; the first ``text_columns`` columns are
    names (left-aligned), the others figures (right-aligned)."""
    align = ["---"] * text_columns + ["---:"] * (len(header) - text_columns)
    return "\n".join(_line(cells) for cells in [header, align, *rows])


def _line(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"
