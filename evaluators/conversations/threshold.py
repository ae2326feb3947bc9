"""The paraphrase threshold a session's re-asks are found with, and how results state it.

A re-ask is a paraphrase, as a semantic-cache hit is, so its decision is read against the
same per-model threshold τ (`cache_similarity_threshold`): the `ux` option when set, else
the embedding model's calibrated value at the options' `threshold_mode`
(`evaluators.thresholds`); the fitted decision (`evaluators.conversations.decision`)
measures the cosine's margin from it. The signature names the model, the threshold with
its source and the decision's weights by a short hash ("cache=0.71(cal),reask=lr:…"), so
an outcome can be traced to how it was found and a refit shows as a new signature.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evaluators.conversations.decision import DECISION, WEIGHTS
from evaluators.signature import Signature, text_hash
from evaluators.thresholds import similarity_threshold, threshold_signature

FAMILY = "conversation_outcome"
THRESHOLD = "cache_similarity_threshold"


def re_ask_threshold(options: Mapping[str, Any], model_name: str | None) -> float:
    """The paraphrase threshold τ of questions embedded by `model_name`: the cosine the
    re-ask decision measures a pair's margin from."""
    return similarity_threshold(options, THRESHOLD, model_name)


def outcome_signature(options: Mapping[str, Any], model_name: str | None) -> Signature:
    """The signature of outcomes found with this model and these options."""
    thresholds = threshold_signature(FAMILY, options, model_name)
    decision = f"reask=lr:{text_hash(repr((WEIGHTS, DECISION)), 8)}"
    return Signature(
        embedding_model=model_name,
        thresholds=f"{thresholds},{decision}" if thresholds else decision,
    )
