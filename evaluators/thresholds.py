"""Similarity thresholds per embedding model, and how a result states the ones it used.

A threshold set in the options (the `ux` settings) wins; an unset one (None or absent) is
the embedding model's calibrated default at the operating point of option `threshold_mode`
("balanced", the default: precision >= 0.9; "strict": precision 1.0; see
`evaluators.embedding_models`). The thresholds a metric compared against go into its
result signature as `thr:cache=0.71(cal)`: "cal" is a calibrated balanced default,
"strict" a calibrated strict one, "set" a user's value, "generic" the default of an
uncalibrated model (the same in both modes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evaluators.embedding_models import (
    GENERIC_THRESHOLDS,
    THRESHOLD_NAMES,
    check_mode,
    default_thresholds,
    is_calibrated,
)

METRIC_THRESHOLDS: Mapping[str, tuple[str, ...]] = {
    "cache_hit_rate": ("cache_similarity_threshold",),
    "multi_turn_consistency": ("duplicate_question_threshold", "answer_agreement_threshold"),
    "conversation_outcome": ("cache_similarity_threshold",),
}
_SHORT = {
    "cache_similarity_threshold": "cache",
    "duplicate_question_threshold": "dup",
    "answer_agreement_threshold": "agree",
}


def threshold_mode(options: Mapping[str, Any]) -> str:
    """The operating point of the calibrated defaults: option `threshold_mode`, unset
    "balanced"; an unknown mode is a ValueError (never a silent fallback)."""
    mode = options.get("threshold_mode")
    return "balanced" if mode is None else check_mode(str(mode))


def similarity_threshold(options: Mapping[str, Any], name: str, model_name: str | None) -> float:
    """The threshold `name` for embeddings of `model_name`: the option when set, else the
    model's default in the options' threshold mode (the generic one without a model)."""
    if name not in THRESHOLD_NAMES:
        raise ValueError(
            f"unknown similarity threshold {name!r}; known: {', '.join(THRESHOLD_NAMES)}"
        )
    mode = threshold_mode(options)
    value = options.get(name)
    if value is not None:
        return float(value)
    defaults = default_thresholds(model_name, mode) if model_name else GENERIC_THRESHOLDS
    return float(defaults[name])


def threshold_signature(
    family: str, options: Mapping[str, Any], model_name: str | None
) -> str | None:
    """The thresholds metric `family` uses, for its signature (None: it uses none)."""
    names = METRIC_THRESHOLDS.get(family)
    if not names:
        return None
    parts = []
    for name in names:
        if options.get(name) is not None:
            source = "set"
        elif model_name and is_calibrated(model_name):
            source = "strict" if threshold_mode(options) == "strict" else "cal"
        else:
            source = "generic"
        value = similarity_threshold(options, name, model_name)
        parts.append(f"{_SHORT[name]}={value:g}({source})")
    return ",".join(parts)
