"""Helpful errors for metric names the user typed: "did you mean", and metrics that only a
scheduled job computes (they need the service's stored history, not a dataset file)."""

from __future__ import annotations

import difflib


def job_only_metrics() -> dict[str, str]:
    """Metric name -> the scheduled job that computes it, for metrics the evaluator
    registry does not know (e.g. `judge_consistency`, over the `judgments` table)."""
    from collector.jobs.scheduler import JOB_MODULES
    from evaluators.errors import UnknownMetricError
    from evaluators.registry import resolve

    out: dict[str, str] = {}
    for module in JOB_MODULES:
        for name in getattr(module, "METRICS", ()) or ():
            try:
                resolve(name)
            except UnknownMetricError:
                out[name] = module.NAME
    return out


def suggest(name: str) -> str | None:
    """The known metric name closest to `name` (a cutoff such as `@10` is kept), or None."""
    from evaluators.registry import FAMILIES, known_names

    known_names()  # loads every metric module
    family, sep, cutoff = name.strip().partition("@")
    candidates = {f: spec.cutoff for f, spec in FAMILIES.items()}
    candidates.update(dict.fromkeys(job_only_metrics(), "none"))
    lowered = {f.lower(): f for f in candidates}
    key = family.lower()
    if key not in lowered:
        close = difflib.get_close_matches(key, list(lowered), n=1, cutoff=0.6)
        if not close:
            return None
        key = close[0]
    best = lowered[key]
    takes = candidates[best]
    if takes == "none":
        return best
    if sep and cutoff:
        return f"{best}@{cutoff}"
    return best if takes == "optional" else f"{best}@10"


def unknown_metric_message(name: str, error: str) -> str:
    """The message for a name `resolve` refused with `error`: job-only metrics are named as
    such; otherwise the registry's error with a "did you mean" in front of the list."""
    jobs = job_only_metrics()
    if name in jobs:
        job = jobs[name]
        return (
            f"{name} is computed only by the scheduled job {job!r}, over what the service "
            f"has stored (e.g. repeated judgments), not from a dataset file: run "
            f"`ragpulse jobs run {job}` against the service's database"
        )
    guess = suggest(name) if error.startswith("unknown metric") else None
    if guess is None or guess == name:
        return error
    head, _sep, rest = error.partition("; ")
    return f"{head}; did you mean {guess!r}? {rest}".rstrip()
