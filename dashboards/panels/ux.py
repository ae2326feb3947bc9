"""The overview's UX section: what the users get besides the answer.

The semantic cache (its hit rate, claimed and actual) and the dialogs (context kept
across turns, consistent answers across turns). One row with every metric of the `ux`
job, read from the registry.
"""

from __future__ import annotations

from collections.abc import Sequence

from dashboards.panels.layout import Section
from dashboards.panels.quality import job_rows

JOBS = ("ux",)


def rows(scheduled: Sequence[tuple[str, str, tuple[str, ...]]]) -> list[tuple[str, Section]]:
    return job_rows(scheduled, JOBS)
