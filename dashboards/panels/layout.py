"""Sections of panels laid out on Grafana's 24-column grid, and the dashboard holding them.

A section is a row title and lines of panels; a line is placed left to right and the next
line starts below its tallest panel. Positions and ids are given here, not left to the
SDK's automatic placement, which would start a panel beside a line that does not fill the
24 columns (five stat panels of width 4) instead of below it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from grafana_foundation_sdk.builders import dashboard as builders
from grafana_foundation_sdk.cog.builder import Builder
from grafana_foundation_sdk.models import dashboard as model

from dashboards.conditions import annotate
from dashboards.panels.common import DS

WIDTH = 24


@dataclass(frozen=True)
class Cell:
    """A panel and its size on the grid."""

    panel: Builder[model.Panel]
    w: int = 8
    h: int = 8


Line = Sequence[Cell]


@dataclass(frozen=True)
class Section:
    """A row of the dashboard: its title and its lines of panels."""

    title: str
    lines: Sequence[Line]


def wrap(cells: Iterable[Cell], per_line: int = 3) -> list[list[Cell]]:
    """Cells in lines of `per_line` (the last one may be shorter)."""
    items = list(cells)
    return [items[i : i + per_line] for i in range(0, len(items), per_line)]


class _Placed(Builder[model.Panel]):
    """A panel already built and placed, handed to the dashboard builder as is."""

    def __init__(self, panel: model.Panel) -> None:
        self._panel = panel

    def build(self) -> model.Panel:
        return self._panel


def place(board: builders.Dashboard, sections: Iterable[Section]) -> builders.Dashboard:
    """Add every section to `board`: a row, then its panels line by line, with ids in
    order from 1, the datasource variable on every panel, and the text of an empty panel
    (`conditions`)."""
    y, next_id = 0, 1
    for section in sections:
        grid = model.GridPos(h=1, w=WIDTH, x=0, y=y)
        board.with_row(builders.Row(section.title).id(next_id).grid_pos(grid))
        next_id, y = next_id + 1, y + 1
        for line in section.lines:
            x = 0
            for cell in line:
                panel = cell.panel.build()
                panel.id_val = next_id
                panel.datasource = DS
                panel.grid_pos = model.GridPos(h=cell.h, w=cell.w, x=x, y=y)
                annotate(panel)
                board.with_panel(_Placed(panel))
                next_id, x = next_id + 1, x + cell.w
            if x > WIDTH:
                raise ValueError(f"{section.title}: a line of {x} columns, the grid has {WIDTH}")
            y += max((cell.h for cell in line), default=0)
    return board
