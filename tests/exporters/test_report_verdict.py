"""The verdict per tier (`exporters.report.verdict`): which inputs make a tier paging,
watch, fine or empty, and since when a metric has been worse."""

from __future__ import annotations

from exporters.report.verdict import (
    FiringAlert,
    Reading,
    Tier,
    TopSlice,
    judge,
    judge_all,
    worse_since,
)

GEN = Tier("Generation", ("faithfulness", "answer_relevance"), "No LLM judge configured", "gen")
RET = Tier("Retrieval", ("hit_rate@1", "mrr"), "No ground truth yet", "ret")


def _alert(severity: str, metric: str | None = "faithfulness") -> FiringAlert:
    return FiringAlert("RagpulseQualityDropPage", severity, metric, None, "got worse", "look")


def _steady(metric: str, direction: str = "higher") -> Reading:
    return Reading(metric, direction, hour=0.8, hour_low=0.75, hour_high=0.85, week=0.8)


def test_a_tier_without_values_has_no_data_and_keeps_its_reason() -> None:
    verdict = judge(GEN, {}, [], [])
    assert verdict.level == "no data" and verdict.with_data == 0
    assert verdict.tier.empty_reason == "No LLM judge configured"


def test_steady_values_are_fine() -> None:
    readings = {"faithfulness": _steady("faithfulness")}
    verdict = judge(GEN, readings, [], [])
    assert (verdict.level, verdict.findings, verdict.with_data) == ("fine", (), 1)


def test_a_critical_alert_on_a_tier_metric_pages_and_a_warning_is_to_watch() -> None:
    readings = {"faithfulness": _steady("faithfulness")}
    assert judge(GEN, readings, [_alert("critical")], []).level == "paging"
    assert judge(GEN, readings, [_alert("warning")], []).level == "watch"
    # an alert on another tier's metric does not count here
    assert judge(RET, {"mrr": _steady("mrr")}, [_alert("critical")], []).level == "fine"


def test_drift_ci_and_band_each_make_a_tier_to_watch() -> None:
    drifting = Reading("faithfulness", "higher", hour=0.8, week=0.8, drift=1.2)
    ci_below = Reading("faithfulness", "higher", 0.6, 0.55, 0.65, 0.8)
    ci_overlaps = Reading("faithfulness", "higher", 0.6, 0.55, 0.85, 0.8)
    lower_above = Reading("faithfulness", "lower", 0.3, 0.25, 0.35, 0.1)
    in_bad_band = Reading("faithfulness", "higher", hour=0.4, week=0.4, bad_band=True)
    for reading, reason in (
        (drifting, "drift detector at 1.2× its threshold"),
        (ci_below, "1h 95% CI wholly worse than 7d"),
        (lower_above, "1h 95% CI wholly worse than 7d"),
        (in_bad_band, "1h value in a band that needs attention"),
    ):
        verdict = judge(GEN, {"faithfulness": reading}, [], [])
        assert verdict.level == "watch", reading
        assert verdict.findings[0].reasons == (reason,)
    assert judge(GEN, {"faithfulness": ci_overlaps}, [], []).level == "fine"
    # both windows over the same samples (a young series): equal up to rounding, not worse
    same = Reading("faithfulness", "higher", 1.0, 0.87, 0.9999999999999999, 1.0)
    assert judge(GEN, {"faithfulness": same}, [], []).level == "fine"
    # a size (direction none) is never worse
    size = Reading("faithfulness", "none", 5.0, 4.0, 4.5, 9.0)
    assert judge(GEN, {"faithfulness": size}, [], []).level == "fine"


def test_findings_put_the_alerted_metric_first_and_slices_are_the_tiers_own() -> None:
    readings = {
        "faithfulness": Reading("faithfulness", "higher", 0.6, 0.5, 0.7, 0.8, drift=1.1),
        "answer_relevance": Reading("answer_relevance", "higher", 0.6, 0.5, 0.7, 0.8, drift=3),
    }
    slices = [TopSlice("faithfulness", "tenant=acme", 0.8), TopSlice("mrr", "version=v2", 1)]
    verdict = judge(GEN, readings, [_alert("critical")], slices)
    assert [f.reading.metric for f in verdict.findings] == ["faithfulness", "answer_relevance"]
    assert verdict.slices == (slices[0],)


def test_the_overall_level_is_the_worst_tier_or_alert_on_no_tier() -> None:
    readings = {"mrr": _steady("mrr"), "faithfulness": _steady("faithfulness")}
    assert judge_all([GEN, RET], readings, [], []).level == "fine"
    assert judge_all([GEN, RET], {}, [], []).level == "no data"
    ingest = _alert("critical", metric=None)
    verdict = judge_all([GEN, RET], readings, [ingest], [])
    assert verdict.other_alerts == (ingest,) and verdict.level == "paging"
    assert [t.level for t in verdict.tiers] == ["fine", "fine"]


def test_worse_since_is_the_start_of_the_trailing_worse_run() -> None:
    week = {t: 0.8 for t in (10.0, 20.0, 30.0, 40.0, 50.0)}
    hour = {10.0: 0.7, 20.0: 0.85, 30.0: 0.75, 40.0: 0.7, 50.0: 0.6}
    assert worse_since(hour, week, "higher") == 30.0
    assert worse_since(hour, week, "lower") is None  # lower is better: 0.6 < 0.8 is fine
    assert worse_since({**hour, 50.0: 0.9}, week, "higher") is None
    assert worse_since(hour, week, "none") is None
    assert worse_since({}, week, "higher") is None


def test_an_slo_fast_burn_pages_its_tier_and_a_resolved_alert_counts_nowhere() -> None:
    readings = {"faithfulness": _steady("faithfulness")}
    burn = FiringAlert("RagpulseSloFastBurn", "critical", "faithfulness", "acme", "burns", "")
    assert judge(GEN, readings, [burn], []).level == "paging"
    ended = FiringAlert("RagpulseSloSlowBurn", "warning", "faithfulness", "acme", "", "", until=9.0)
    other = FiringAlert("RagpulseNoTraces", "critical", None, None, "", "", until=9.0)
    verdict = judge_all([GEN, RET], readings, [ended, other], [])
    assert verdict.level == "fine" and verdict.other_alerts == ()
    assert verdict.resolved == (ended, other)
    assert [t.alerts for t in verdict.tiers] == [(), ()]
    assert verdict.pages_and_tickets() == (0, 0)
    firing = judge_all([GEN, RET], readings, [burn, ended, _alert("warning", None)], [])
    assert firing.pages_and_tickets() == (1, 1) and firing.level == "paging"
