"""`ragpulse report` user errors (one line, exit 2) and the Grafana conventions it follows
(variables, legends, units, threshold colours)."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from exporters.report.dashboards import legend, load_dashboard, substitute
from exporters.report.units import format_value
from ragpulse.cli import main

SHIPPED = Path(__file__).resolve().parents[2] / "dashboards" / "grafana" / "dashboards"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(["report", *args])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "missing", "dashboard path not found: "),
        (lambda d: d, "no dashboard JSON files in "),
        (lambda d: (d / "bad.json").write_text("{oops") and d / "bad.json", "is not JSON: line 1"),
        (lambda d: (d / "x.json").write_text("[1]") and d / "x.json", "is not a Grafana dashboard"),
    ],
)
def test_a_bad_dashboard_path_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: object, message: str
) -> None:
    path = make(tmp_path)  # type: ignore[operator]
    out = tmp_path / "r.html"
    code, err = _run(
        capsys,
        "--prometheus",
        "http://127.0.0.1:1",
        "--output",
        str(out),
        "--dashboards",
        str(path),
    )
    assert code == 2
    assert err.startswith("ragpulse report: ") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert not out.exists()


def test_an_unreachable_prometheus_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    code, err = _run(capsys, "--prometheus", url, "--output", str(tmp_path / "r.html"))
    assert code == 2
    assert err.startswith(f"ragpulse report: cannot reach Prometheus at {url}: ")
    assert err.count("\n") == 1


def test_bad_since_and_var_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = str(tmp_path / "r.html")
    code, err = _run(capsys, "--prometheus", "http://x", "--output", out, "--since", "soon")
    assert code == 2 and "--since: not a duration: 'soon'" in err
    code, err = _run(capsys, "--prometheus", "http://x", "--output", out, "--var", "tenant")
    assert code == 2 and "--var wants NAME=VALUE" in err


def test_grafana_variables_legends_and_units() -> None:
    values = {"tenant": "", "__rate_interval": "20s", "w": "1h"}
    assert (
        substitute('rate(x{tenant=~"$tenant",w="${w}",v="[[w]]"}[$__rate_interval])', values)
        == 'rate(x{tenant=~"",w="1h",v="1h"}[20s])'
    )
    assert substitute('x{a="$unknown"}', values) == 'x{a="$unknown"}'
    assert legend("{{model}} {{status}}", {"model": "m", "status": "ok"}) == "m ok"
    assert legend("", {"__name__": "up", "job": "a"}) == 'up{job="a"}'
    assert format_value(0.253, "percentunit") == "25.3%"
    assert format_value(0.25, "s") == "250 ms" and format_value(90, "s") == "1.50 min"
    assert format_value(2500, "short") == "2.50 K" and format_value(3.5, "ops") == "3.50 ops/s"
    assert format_value(0.8123, None, 3) == "0.812"


def test_thresholds_and_tenant_default_come_from_the_shipped_json() -> None:
    board = load_dashboard(SHIPPED / "overview.json")
    # All tenants = the overall value; All versions = every version's series
    assert {v.name: v.default for v in board.variables} == {"tenant": "", "version": ".+"}
    # the versions row's interval bounds are styled by a regex matcher on their names
    per_version = next(p for p in board.panels if p.title == "mrr per version (1h, 95% CI)")
    assert per_version.series_props("v7 CI lower")["hideFrom"]["legend"] is True
    assert per_version.series_props("v7 CI upper")["lineStyle"]["fill"] == "dash"
    assert per_version.series_props("v7") == {}
    raw = json.loads((SHIPPED / "overview.json").read_text())
    checked = 0
    for item in raw["panels"]:
        steps = item.get("fieldConfig", {}).get("defaults", {}).get("thresholds", {})
        steps = steps.get("steps", [])
        if item["type"] != "stat" or len(steps) < 2:
            continue
        panel = next(p for p in board.panels if p.title == item["title"])
        low = steps[1]["value"]
        assert panel.threshold_color(low - 1e-9) != panel.threshold_color(low)
        assert panel.threshold_color(low) == panel.threshold_color(low + 1e-9)
        checked += 1
    assert checked >= 3


def test_a_prometheus_without_ragpulse_data_gives_a_page_and_a_hint(
    prometheus_server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prom = prometheus_server([f"127.0.0.1:{_closed_port()}"])  # scrapes nothing
    out = tmp_path / "r.html"
    code = main(["report", "--prometheus", prom.url, "--output", str(out)])
    stdout, err = capsys.readouterr()
    assert code == 0 and out.is_file()
    assert "with data" in stdout  # the status counts (`or vector(0)`) have data all the same
    assert f"no panel has data: does {prom.url} scrape ragpulse's /metrics" in err
    assert 'data-state="nodata"' in out.read_text()


def test_the_slo_dashboard_shows_the_declared_slos_not_the_example(tmp_path: Path) -> None:
    """The shipped `slo.json` is drawn for `examples/slo.yaml`; with SLOs of their own in
    the settings, the report draws those (and the example's when none are declared)."""
    from exporters.report.dashboards import load_dashboards
    from ragpulse.commands.report import own_slo_board

    config = tmp_path / "settings.yaml"
    config.write_text(
        "slo:\n  objectives:\n"
        "    - {name: answers-grounded, metric: faithfulness, op: '>=', threshold: 0.8,"
        " target: 0.9}\n",
        encoding="utf-8",
    )
    shipped = load_dashboards([SHIPPED])
    own = own_slo_board(shipped, str(config))
    assert [d.title for d in own] == [d.title for d in shipped]

    def exprs(boards: list[Any]) -> str:
        slo = next(d for d in boards if d.path.name == "slo.json")
        return "\n".join(t.expr for p in slo.panels for t in p.targets)

    assert 'slo="answers-grounded"' in exprs(own)
    assert 'slo="faithfulness"' not in exprs(own)
    assert 'slo="faithfulness"' in exprs(shipped)
    none = tmp_path / "none.yaml"
    none.write_text("{}\n", encoding="utf-8")
    assert own_slo_board(shipped, str(none)) == shipped
