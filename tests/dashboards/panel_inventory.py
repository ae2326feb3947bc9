"""The panels of the shipped dashboards as comparable facts, and their differences between
two versions of the JSON (e.g. before and after a change of the generator).

    python tests/dashboards/panel_inventory.py --before main [--after WORKTREE]

`--before`/`--after` name a git revision whose `dashboards/grafana/dashboards/*.json` are
read with `git show`, or `WORKTREE` for the files on disk. It prints

- coverage: panels (dashboard, type, title) present on one side only, and for the panels
  on both sides every difference in the facts a reader sees: targets (refId, PromQL,
  legend, format, instant, exemplar), unit, decimals, thresholds, position and size;
- shape: every other JSON path that differs (fields a generator adds or leaves out),
  counted over the panels with `[]` for list indices, so a default added to every panel
  is one line.

Exit status 1 when the coverage differs, 0 otherwise (shape differences are reported).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FOLDER = "dashboards/grafana/dashboards"
TARGET_KEYS = ("refId", "expr", "legendFormat", "format", "instant", "exemplar")


def boards(revision: str) -> dict[str, dict[str, Any]]:
    """Dashboard file name -> parsed JSON, at a git revision or on disk (`WORKTREE`)."""
    if revision == "WORKTREE":
        return {p.name: json.loads(p.read_text()) for p in sorted((ROOT / FOLDER).glob("*.json"))}
    names = subprocess.run(
        ["git", "ls-tree", "--name-only", f"{revision}:{FOLDER}"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    out = {}
    for name in names:
        if name.endswith(".json"):
            text = subprocess.run(
                ["git", "show", f"{revision}:{FOLDER}/{name}"],
                cwd=ROOT,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
            out[name] = json.loads(text)
    return out


def panels(board: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for panel in board.get("panels", []):
        yield panel
        yield from panel.get("panels") or []  # a collapsed row's own panels


def facts(panel: dict[str, Any]) -> dict[str, Any]:
    """What a reader of the panel sees, independent of how the JSON spells defaults."""
    defaults = (panel.get("fieldConfig") or {}).get("defaults") or {}
    return {
        "targets": [
            {k: t[k] for k in TARGET_KEYS if t.get(k) not in (None, False)}
            for t in panel.get("targets") or []
        ],
        "unit": defaults.get("unit"),
        "decimals": defaults.get("decimals"),
        "thresholds": defaults.get("thresholds"),
        "gridPos": panel.get("gridPos"),
        "description": panel.get("description"),
    }


def inventory(revision: str) -> dict[tuple[str, str, str], dict[str, Any]]:
    return {
        (name, str(p.get("type")), str(p.get("title"))): p
        for name, board in boards(revision).items()
        for p in panels(board)
    }


def paths(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every leaf of a JSON value as (path, value), list items by index (`a.b[2].c`)."""
    if isinstance(value, dict):
        if not value:
            yield prefix, {}
        for k, v in value.items():
            yield from paths(v, f"{prefix}.{k}" if prefix else k)
    elif isinstance(value, list):
        if not value:
            yield prefix, []
        for i, v in enumerate(value):
            yield from paths(v, f"{prefix}[{i}]")
    else:
        yield prefix, value


def shape(before: Any, after: Any) -> Counter[str]:
    """Differing leaf paths (list indices folded to `[]`), each as `+path`, `-path` or
    `~path` (added, removed, changed)."""
    a, b = dict(paths(before)), dict(paths(after))
    out: Counter[str] = Counter()
    for key in a.keys() | b.keys():
        folded = re.sub(r"\[\d+\]", "[]", key)
        if key not in a:
            out[f"+{folded} = {json.dumps(b[key])[:60]}"] += 1
        elif key not in b:
            out[f"-{folded} = {json.dumps(a[key])[:60]}"] += 1
        elif a[key] != b[key]:
            out[f"~{folded}"] += 1
    return out


def compare(before: str, after: str) -> int:
    old, new = inventory(before), inventory(after)
    only_old, only_new = sorted(old.keys() - new.keys()), sorted(new.keys() - old.keys())
    changed = []
    for key in sorted(old.keys() & new.keys()):
        f_old, f_new = facts(old[key]), facts(new[key])
        for field in f_old:
            if f_old[field] != f_new[field]:
                changed.append((key, field, f_old[field], f_new[field]))
    print(f"panels: {len(old)} in {before}, {len(new)} in {after}")
    for key in only_old:
        print(f"  only in {before}: {key}")
    for key in only_new:
        print(f"  only in {after}: {key}")
    for key, field, a, b in changed:
        print(f"  {key} {field}:\n    {before}: {a}\n    {after}:  {b}")
    if not (only_old or only_new or changed):
        print("coverage: identical (titles, types, targets, units, thresholds, positions)")
    total: Counter[str] = Counter()
    for key in sorted(old.keys() & new.keys()):
        total += shape(old[key], new[key])
    board_diff: Counter[str] = Counter()
    old_boards, new_boards = boards(before), boards(after)
    for name in sorted(old_boards.keys() & new_boards.keys()):
        top_old = {k: v for k, v in old_boards[name].items() if k != "panels"}
        top_new = {k: v for k, v in new_boards[name].items() if k != "panels"}
        board_diff += shape(top_old, top_new)
    print("shape differences in panels (path: panels):")
    for line, n in sorted(total.items()):
        print(f"  {line}: {n}")
    print("shape differences outside the panels (path: dashboards):")
    for line, n in sorted(board_diff.items()):
        print(f"  {line}: {n}")
    return 1 if only_old or only_new or changed else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", required=True, help="git revision, or WORKTREE")
    parser.add_argument("--after", default="WORKTREE", help="git revision, or WORKTREE")
    args = parser.parse_args()
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
