"""The SLO alerting benchmark at a tiny size, so it cannot rot: a day of counters of a
page-only 95% SLO, evaluated by a real Prometheus (promtool back-fill, `query_range`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from benchmarks.slo_alerting import METHODS, Timeline, after_burn, evaluate, report, summary
from benchmarks.slo_traffic import DAY, H
from collector.settings import BurnAlert, SloSpec
from collector.settings.slo_spec import validate

SPEC = validate(
    SloSpec(
        "faithfulness", "faithfulness", 0.95, "28d",
        alerts=(BurnAlert("page", 14.4, "1h", "5m"), BurnAlert("page", 6.0, "6h", "30m")),
    )
)  # fmt: skip


@pytest.mark.slow
@pytest.mark.skipif(
    shutil.which("promtool") is None or shutil.which("prometheus") is None,
    reason="Prometheus is not installed (Debian package prometheus)",
)
def test_a_day_of_burns_is_paged_by_the_shipped_rules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    when = Timeline(length=DAY, warmup=6 * H, burn_from=8 * H, hours=4)
    found = evaluate([SPEC], 1200, 1, 4.0, 1, tmp_path, when)
    shipped = summary(
        found[("min-count, keep 90m, ticket 2h (shipped)", "faithfulness")], 6.0, after_burn(SPEC)
    )
    # 14.4x of a 95% SLO is an error ratio of 0.72: 60 judged events an hour make it plain
    burn = shipped["factors"][14.4][0]
    assert burn.detect is not None and burn.detect < 3.0
    # one page for the whole burn, resolved within keep_firing_for (90m) and a bit after it
    assert burn.episodes == 1 and burn.held == 1.0
    assert burn.reset is not None and 1.5 <= burn.reset < 2.0
    # the rules before issue 39 (no keep_firing_for) paged this burn three times
    before = summary(found[("min-count (before issue 39)", "faithfulness")], 6.0, after_burn(SPEC))
    assert before["factors"][14.4][0].episodes > 1
    assert 36.0 not in shipped["factors"]  # an error ratio of 1.8: no such burn
    assert shipped["false"]["page"] == 0.0
    assert set(found) == {(m, "faithfulness") for m in METHODS}
    report({1200: found}, [SPEC])
    assert (
        "| faithfulness 0.95 | 1200/h | min-count, keep 90m, ticket 2h (shipped) | 0.00 |"
        in capsys.readouterr().out
    )
