"""Plain OpenTelemetry with ragpulse's own attributes (`ragpulse.*`, and OTel's `user.id` /
`enduser.id`): for an app that instruments itself, and on top of any other convention.

`ragpulse.tag.<name>` (string or number) is the trace's tag `<name>`;
`ragpulse.shown_url` (string or string array) the documents shown to the user.
"""

from __future__ import annotations

import math
from typing import Any, Final

from collector.ingest.decode import optional as opt
from collector.ingest.decode.conventions import base
from collector.ingest.decode.conventions.attributes import Attribute, Declared
from collector.ingest.decode.conventions.base import Fields, Span
from collector.ingest.decode.optional import FieldIssues

TAG_PREFIX: Final = "ragpulse.tag."
SHOWN_URL: Final = "ragpulse.shown_url"
"""Span attribute (string or string array) carrying the trace field `shown_url`."""
USER: Final = "enduser.id"

DECLARED: Final = Declared(
    name="ragpulse",
    title="Plain OpenTelemetry: ragpulse's own attributes",
    detected="any `ragpulse.*` attribute, or `enduser.id`; read on top of any other "
    "convention, and first (its fields win)",
    attributes=(
        Attribute(
            TAG_PREFIX + "<name>",
            "string, int or float (a bool is skipped; NaN or ±Inf is kept raw under "
            '`metadata._invalid["tags.<name>"]`)',
            "the tag `<name>` (a trace's tags merge over its spans; the root's wins a clash)",
        ),
        Attribute(
            SHOWN_URL,
            "string (a url), or an array of strings",
            "`shown_url`: the document(s) shown to the user, ground truth of last resort "
            "(the root span's wins)",
        ),
        Attribute(USER, "string", "`user_id`"),
    ),
    not_keys=frozenset({"tags."}),
)
"""What this convention reads (the connect-your-app page is generated from it)."""


class Plain:
    """ragpulse's own span attributes."""

    name = "ragpulse"

    def detect(self, span: Span) -> bool:
        return any(k.startswith("ragpulse.") or k == USER for k in span.attrs)

    def read(self, span: Span, issues: FieldIssues) -> Fields:
        attrs = span.attrs
        out: Fields = {}
        user = base.first_str(attrs, (USER,))
        if user is not None:
            out["user_id"] = user
        shown = attrs.get(SHOWN_URL)
        if shown is not None:
            urls = opt.urls(shown, "shown_url", scratch := FieldIssues())
            if urls:
                out["shown_url"] = list(urls)
            elif scratch:
                issues.keep("shown_url", base.as_text(shown))
        tags: dict[str, Any] = {}
        for key in [k for k in attrs if k.startswith(TAG_PREFIX)]:
            value = attrs.get(key)
            if isinstance(value, str | int | float) and not isinstance(value, bool):
                if isinstance(value, float) and not math.isfinite(value):
                    issues.keep(f"tags.{key[len(TAG_PREFIX) :]}", base.as_text(value))
                else:
                    tags[key[len(TAG_PREFIX) :]] = value
        if tags:
            out["tags"] = tags
        return out
