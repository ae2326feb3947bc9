"""The overview's alerting section: the drift detectors behind the page and ticket alerts,
and the smallest drop each series' paging detector catches in time at its volume."""

from __future__ import annotations

from dashboards.panels.common import QSEL, lines
from dashboards.panels.layout import Cell, Section


def detectors() -> Section:
    by_detector = [
        (
            f'max by (metric, tenant) (ragpulse_drift_score{{detector="{detector}",{QSEL}}})',
            f"{detector} {{{{metric}}}} {{{{tenant}}}}",
        )
        for detector in ("page", "ticket")
    ]
    line = [
        lines(
            "Drift detectors (1 = alarm)",
            "Each series' CUSUM statistic over the last 24h against the rest of the 7 days, "
            "divided by its alarm threshold: page reaches 1 -> RagpulseQualityDropPage "
            "(critical), ticket reaches 1 -> RagpulseQualityDriftTicket (warning). The "
            "threshold keeps false alarms within the weekly budget over all series together.",
            by_detector,
        ),
        lines(
            "Smallest drop paged within the target delay",
            "At each series' current volume, the relative drop the paging detector catches "
            "within alerting.page_within (LLM-judge metrics: judge_page_within) on average. "
            "Too large? More traffic sampled for it: `ragpulse plan --detect 10% --within 3h`.",
            [(f"ragpulse_detectable_drop{{{QSEL}}}", "{{metric}} {{tenant}}")],
            "percentunit",
        ),
    ]
    return Section("Alerting: drift detectors", [[Cell(p, w=12) for p in line]])
