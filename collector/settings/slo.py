"""The quality SLOs (`slo_spec.py`): from an OpenSLO file, from the settings, or both.

Declared in the settings (YAML `--config` or `RAGPULSE_SLO__OBJECTIVES` as JSON), an SLO
is `{name, metric, target, window, kind?, op?, threshold?, description?}` with the
workbook's default burn-rate alerts; an OpenSLO file (`openslo.py`) may also declare its
own alerts. Both are validated when the settings are built, so a wrong SLO stops the
service at start with a one-line error.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from collector.settings.fields import Group
from collector.settings.openslo import load_openslo
from collector.settings.slo_spec import Kind, SloSpec, validate_all


class SloObjective(Group):
    """One SLO declared in the settings."""

    name: str
    metric: str = ""
    """The metric (not for `latency` and `agreement`, which imply theirs)."""
    target: float
    window: str = "28d"
    kind: Kind = "threshold"
    op: str = ">="
    threshold: float = 0.0
    description: str = ""
    limit: float | str | None = None
    """`kind: latency`: the limit, a duration (`2s`, `1500ms`) or milliseconds."""

    def spec(self) -> SloSpec:
        return SloSpec(
            name=self.name,
            metric=self.metric,
            target=self.target,
            window=self.window,
            kind=self.kind,
            op=self.op,
            threshold=self.threshold,
            description=self.description,
            limit=self.limit,
        )


class SloSettings(Group):
    """Where the SLOs come from and how their per-tenant events are bounded."""

    openslo_file: Path | None = None
    """An OpenSLO v1 YAML file (e.g. `examples/slo.yaml`)."""
    objectives: list[SloObjective] = []
    max_tenants: int = Field(50, ge=1)
    """Tenants with counters of their own per SLO; later ones count under `other`."""
    event_retention: str = "35d"
    """How long a trace's recorded event is kept to refuse counting it twice."""

    def specs(self) -> tuple[SloSpec, ...]:
        """Every SLO, validated (`SloSpecError` on the first problem)."""
        found = load_openslo(self.openslo_file) if self.openslo_file is not None else ()
        return validate_all((*found, *(o.spec() for o in self.objectives)))

    @model_validator(mode="after")
    def _valid(self) -> SloSettings:
        self.specs()
        return self
