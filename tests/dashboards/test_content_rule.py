"""`RagpulseOtlpContentMissing` names, for every convention ragpulse reads, the setting that
turns content capture on, and those settings are the installed libraries' own: a new
convention without its advice, or a library upgrade that renames a variable, fails here.
(promtool tests in `operations_test.yml` check that the rule fires and stays quiet.)"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from collector.ingest.decode.completeness import NONE, PLACEHOLDERS
from collector.ingest.decode.conventions import registry

RULES = Path(__file__).resolve().parents[2] / "dashboards" / "prometheus" / "rules"


def _rule() -> dict[str, object]:
    doc = yaml.safe_load((RULES / "operations.yml").read_text())
    return next(
        rule
        for group in doc["groups"]
        for rule in group["rules"]
        if rule.get("alert") == "RagpulseOtlpContentMissing"
    )


def _branches(description: str) -> dict[str, str]:
    """Convention -> the advice of its `{{ if eq $labels.convention "..." }}` branch."""
    parts = re.split(r'\{\{ (?:if|else if) eq \$labels\.convention "([a-z_]+)" \}\}', description)
    return {
        name: text.split("{{", 1)[0] for name, text in zip(parts[1::2], parts[2::2], strict=True)
    }


def test_every_convention_has_its_capture_advice() -> None:
    rule = _rule()
    branches = _branches(str(rule["annotations"]["description"]))  # type: ignore[index]
    assert set(registry.CONVENTIONS) <= set(branches), "add the convention's setting"
    assert f'convention!="{NONE}"' in str(rule["expr"])


def test_the_named_variables_are_the_installed_libraries_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import openinference.instrumentation.config as oi
    from opentelemetry.instrumentation.langchain import utils as traceloop
    from opentelemetry.util.genai import environment_variables as genai
    from opentelemetry.util.genai.types import ContentCapturingMode
    from opentelemetry.util.genai.utils import get_content_capturing_mode

    branches = _branches(str(_rule()["annotations"]["description"]))  # type: ignore[index]
    named = re.findall(r"\bOPENINFERENCE_[A-Z_]+\b", branches["openinference"])
    assert len(named) == 4
    for name in named:
        assert getattr(oi, name) == name
    assert oi.REDACTED_VALUE in PLACEHOLDERS  # what completeness counts as missing
    assert "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_ONLY" in branches["genai"]
    assert genai.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT in branches["genai"]
    assert {"SPAN_ONLY", "SPAN_AND_EVENT", "NO_CONTENT"} <= set(ContentCapturingMode.__members__)
    monkeypatch.delenv(genai.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT, raising=False)
    assert get_content_capturing_mode() is ContentCapturingMode.NO_CONTENT  # the default
    assert f"{traceloop.TRACELOOP_TRACE_CONTENT}=false" in branches["openllmetry"]
