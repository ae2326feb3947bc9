"""The folder tree of `collector/` in docs/ARCHITECTURE.md is the code's: every package and
module it names exists, and every one that exists is in it."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "ARCHITECTURE.md"
HEADING = "## The folders of `collector/`"
BRANCHES = ("├── ", "└── ")
INDENT = 4  # "│   " or "    " per level


class TreeError(ValueError):
    """The tree block is missing or a line of it cannot be read."""


def tree_block(markdown: str) -> list[str]:
    """The lines of the first fenced block after the tree's heading."""
    start = markdown.find(HEADING)
    if start < 0:
        raise TreeError(f"no heading {HEADING!r}")
    lines = markdown[start:].splitlines()
    fences = [i for i, line in enumerate(lines) if line.startswith("```")]
    if len(fences) < 2:
        raise TreeError("no fenced block after the heading")
    return lines[fences[0] + 1 : fences[1]]


def tree_paths(lines: list[str]) -> set[str]:
    """The paths the tree names, relative to the repository: `collector/jobs/`, `a/b.py`."""
    if not lines or lines[0].strip() != "collector/":
        raise TreeError("the tree does not start at collector/")
    stack = ["collector"]
    paths = set()
    for number, line in enumerate(lines[1:], start=2):
        branch = next((b for b in BRANCHES if b in line), None)
        if branch is None:
            raise TreeError(f"line {number} has no branch: {line!r}")
        column = line.index(branch)
        if column % INDENT:
            raise TreeError(f"line {number} is not indented by {INDENT}: {line!r}")
        depth = column // INDENT + 1
        if depth > len(stack):
            raise TreeError(f"line {number} is deeper than its parent: {line!r}")
        name = line[column + len(branch) :].split()[0]
        del stack[depth:]
        if name.endswith("/"):
            stack.append(name.rstrip("/"))
            paths.add("/".join(stack) + "/")
        else:
            paths.add("/".join([*stack, name]))
    return paths


def code_paths(root: Path) -> set[str]:
    """The packages (`x/`) and modules (`x/y.py`, not `__init__.py`) under collector/."""
    paths = set()
    for init in (root / "collector").rglob("__init__.py"):
        package = init.parent
        if package != root / "collector":
            paths.add(package.relative_to(root).as_posix() + "/")
        for module in package.glob("*.py"):
            if module.name != "__init__.py":
                paths.add(module.relative_to(root).as_posix())
    return paths


def test_the_tree_is_the_code() -> None:
    named = tree_paths(tree_block(DOC.read_text(encoding="utf-8")))
    real = code_paths(ROOT)
    fix = "add or remove its line under its folder"
    assert not real - named, f"missing from the tree in {DOC.name} ({fix}): {sorted(real - named)}"
    assert not named - real, (
        f"in the tree of {DOC.name}, not in the code ({fix}): {sorted(named - real)}"
    )


def test_the_parser_reads_depth_and_rejects_a_bad_line() -> None:
    lines = [
        "collector/",
        "├── errors.py",
        "├── jobs/                 the jobs",
        "│   ├── catalog/          the jobs a deployment runs",
        "│   │   └── ux.py",
        "│   └── scheduler.py",
        "└── store/",
        "    └── models.py",
    ]
    assert tree_paths(lines) == {
        "collector/errors.py",
        "collector/jobs/",
        "collector/jobs/catalog/",
        "collector/jobs/catalog/ux.py",
        "collector/jobs/scheduler.py",
        "collector/store/",
        "collector/store/models.py",
    }
    with pytest.raises(TreeError):
        tree_paths(["collector/", "errors.py"])
    with pytest.raises(TreeError):
        tree_paths(["collector/", "│   │   └── deep.py"])
