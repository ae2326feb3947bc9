"""The benchmark's rule-manager emulation (for: and keep_firing_for:) agrees with promtool."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from benchmarks.alerting_rules import Episode, episodes_of, family_episodes

PROMTOOL = shutil.which("promtool")
# minute -> condition true (1) or not (_): a blip, a long run, a gap shorter than keep
PATTERN = "_ 1 _ _ 1 1 1 1 1 1 _ _ 1 1 _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _".split()  # noqa: SIM905


def _firing(hold: float, keep: float) -> list[bool]:
    true_at = [60.0 * i for i, v in enumerate(PATTERN) if v == "1"]
    episodes = episodes_of("A", "critical", (), true_at, 0.0, 60.0 * (len(PATTERN) - 1), hold, keep)
    return [any(e.start <= 60.0 * i < e.end for e in episodes) for i in range(len(PATTERN))]


@pytest.mark.skipif(
    PROMTOOL is None, reason="promtool is not installed (Debian package prometheus)"
)
@pytest.mark.parametrize(("hold", "keep"), [(0, 0), (180, 0), (0, 300), (120, 300)])
def test_episodes_match_prometheus(tmp_path: Path, hold: int, keep: int) -> None:
    rule: dict[str, object] = {"alert": "A", "expr": "cond > 0", "labels": {"severity": "critical"}}
    if hold:
        rule["for"] = f"{hold}s"
    if keep:
        rule["keep_firing_for"] = f"{keep}s"
    (tmp_path / "rules.yml").write_text(
        yaml.safe_dump({"groups": [{"name": "g", "rules": [rule]}]})
    )
    values = " ".join("1" if v == "1" else "0" for v in PATTERN)
    firing = _firing(hold, keep)
    cases = [
        {
            "eval_time": f"{i}m",
            "alertname": "A",
            "exp_alerts": [{"exp_labels": {"severity": "critical"}}] if on else [],
        }
        for i, on in enumerate(firing)
    ]
    test = {
        "rule_files": ["rules.yml"],
        "evaluation_interval": "1m",
        "tests": [{"interval": "1m", "input_series": [{"series": "cond", "values": values}],
                   "alert_rule_test": cases}],
    }  # fmt: skip
    (tmp_path / "test.yml").write_text(yaml.safe_dump(test))
    assert PROMTOOL is not None
    done = subprocess.run(
        [PROMTOOL, "test", "rules", "test.yml"], cwd=tmp_path, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert any(firing)


def test_family_episodes_merge_overlaps() -> None:
    e = [Episode("A", "critical", (), 0, 10), Episode("B", "critical", (), 5, 20),
         Episode("C", "warning", (), 30, 40)]  # fmt: skip
    assert family_episodes(e) == [(0, 20), (30, 40)]
