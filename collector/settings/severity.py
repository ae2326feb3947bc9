"""The two alert severities every ragpulse rule carries, and what each means.

One pair for every shipped and generated alert (quality, drift, threshold, canary,
operations, SLO burn), for the Alertmanager config that routes them
(`deploy/alertmanager/alertmanager.yml`), the report's verdict and the Grafana status row:
the `severity` label values of the Prometheus ecosystem (kube-prometheus, the
prometheus-operator runbooks, Alertmanager's examples).

- `critical`: a **page**, someone is woken now (the `pager` receiver);
- `warning`: a **ticket**, looked at in working hours (the `tickets` receiver).

An SLO file keeps its own words for the same two (OpenSLO's `severity: page | ticket`, the
SRE Workbook's); `rule_severity` maps them to the pair where a rule is written, and
refuses any other word with the accepted ones named. Here, below every layer that writes
or reads a severity (settings, jobs, exporters, dashboards, the app).
"""

from __future__ import annotations

from typing import Final, Literal

Severity = Literal["critical", "warning"]

CRITICAL: Final = "critical"
"""A page: wakes a person now."""
WARNING: Final = "warning"
"""A ticket: worth a look in working hours, no one is woken."""
SEVERITIES: Final[tuple[Severity, Severity]] = (CRITICAL, WARNING)
"""Most urgent first."""
MEANING: Final[dict[str, str]] = {
    CRITICAL: "a page: a person is woken now",
    WARNING: "a ticket: looked at in working hours, no one is woken",
}
SPEC_WORDS: Final[dict[str, Severity]] = {
    "page": CRITICAL,
    "ticket": WARNING,
    CRITICAL: CRITICAL,
    WARNING: WARNING,
}
"""The words an SLO declaration may use for a severity (OpenSLO and the SRE Workbook say
page and ticket; the rule labels' own words are accepted as well)."""


class UnknownSeverityError(ValueError):
    """A severity that is neither of the pair nor one of their spec words."""


def rule_severity(word: str) -> Severity:
    """The rule label of a declared severity: `page` -> critical, `ticket` -> warning (the
    label values pass through); anything else raises `UnknownSeverityError`."""
    found = SPEC_WORDS.get(word.strip().lower())
    if found is None:
        raise UnknownSeverityError(
            f"severity {word!r} is not one ragpulse routes: use page (= critical, "
            f"{MEANING[CRITICAL]}) or ticket (= warning, {MEANING[WARNING]})"
        )
    return found


def is_page(severity: str) -> bool:
    """Whether an alert of this severity label pages a person."""
    return severity == CRITICAL
