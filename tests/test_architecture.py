"""The layers contracts (pyproject `[tool.importlinter]`, docs/concepts/architecture.md)
hold, and they are not vacuous: an upward import planted in a copy of the tree breaks them, also one
between two modules of `collector.jobs`, and a module added there without a layer."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("ragpulse", "collector", "evaluators", "exporters", "migrations", "dashboards")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _copy_tree(tmp_path: Path) -> None:
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")


def test_contracts_are_kept() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    assert f"Contracts: {len(contracts['contracts'])} kept, 0 broken." in result.stdout


@pytest.mark.parametrize(
    ("module", "source", "broken"),
    [
        # the store below the jobs, the jobs below the exporters, the exporters below the app
        ("collector/store/_planted.py", "import collector.jobs.run.engine\n", "collector.store"),
        ("collector/jobs/_planted.py", "import exporters.quality\n", "collector.jobs"),
        ("exporters/_planted.py", "from ragpulse import service\n", "exporters"),
        # siblings of one layer do not import each other
        (
            "collector/ingest/_planted.py",
            "import collector.jobs.windows.window\n",
            "collector.ingest",
        ),
        # the library imports nothing of the service, nor the service's infrastructure
        ("evaluators/_planted.py", "import collector.settings\n", "evaluators"),
        ("evaluators/_planted.py", "import sqlalchemy\n", "evaluators"),
    ],
)
def test_an_upward_import_breaks_the_contract(
    tmp_path: Path, module: str, source: str, broken: str
) -> None:
    _copy_tree(tmp_path)
    (tmp_path / module).write_text(source)
    result = _lint(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert f"{broken} is not allowed to import" in result.stdout, result.stdout
    assert f"{broken}._planted -> " in result.stdout.replace("-   ", "- "), result.stdout


@pytest.mark.parametrize(
    ("module", "source", "importer", "imported"),
    [
        # the circle the jobs package had: what a job is, below the engine that runs it
        (
            "collector.jobs.run.definition",
            "\nfrom typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n"
            "    import collector.jobs.run.engine\n",
            "collector.jobs.run.definition",
            "collector.jobs.run.engine",
        ),
        # a step below the one that uses it, even when imported inside a function
        (
            "collector.jobs.recording.cursor",
            "\ndef _f() -> None:\n    import collector.jobs.run.evaluation\n",
            "collector.jobs.recording.cursor",
            "collector.jobs.run.evaluation",
        ),
        # the jobs do not import each other
        (
            "collector.jobs.catalog.ux",
            "\nimport collector.jobs.catalog.canary\n",
            "collector.jobs.catalog.ux",
            "collector.jobs.catalog.canary",
        ),
    ],
)
def test_an_import_circle_in_the_jobs_breaks_the_contract(
    tmp_path: Path, module: str, source: str, importer: str, imported: str
) -> None:
    """Full dotted names, so the modules may sit in subpackages: the broken contract names
    the importer and the imported module, or the packages (layers) that hold them."""
    _copy_tree(tmp_path)
    path = tmp_path / Path(*module.split(".")).with_suffix(".py")
    path.write_text(path.read_text() + source)
    result = _lint(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    # lint-imports wraps its lines at 80 columns, between the words
    found = re.findall(r"(\S+)\s+is not allowed to import\s+(\S+?):", result.stdout)
    assert any(
        (importer + ".").startswith(a + ".") and (imported + ".").startswith(b + ".")
        for a, b in found
    ), result.stdout


def test_a_jobs_module_without_a_layer_breaks_the_contract(tmp_path: Path) -> None:
    """The jobs contract is exhaustive: a new module of `collector.jobs` is given its layer."""
    _copy_tree(tmp_path)
    (tmp_path / "collector" / "jobs" / "_planted.py").write_text("X = 1\n")
    result = _lint(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "not listed as layers" in result.stdout, result.stdout
    assert "- collector.jobs._planted" in result.stdout, result.stdout
