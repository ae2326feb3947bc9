"""The paraphrase threshold a session's re-asks are found with, and how results state it.

A re-ask is a paraphrase, as a semantic-cache hit is, so it compares against the same
per-model threshold (`cache_similarity_threshold`): the `ux` option when set, else the
embedding model's calibrated value at the options' `threshold_mode`
(`evaluators.thresholds`). The signature names the model and the threshold with its
source ("cache=0.71(cal)"), so an outcome can be traced to how it was found.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from evaluators.signature import Signature
from evaluators.thresholds import similarity_threshold, threshold_signature

FAMILY = "conversation_outcome"
THRESHOLD = "cache_similarity_threshold"


def re_ask_threshold(options: Mapping[str, Any], model_name: str | None) -> float:
    """The cosine above which two questions embedded by `model_name` are paraphrases."""
    return similarity_threshold(options, THRESHOLD, model_name)


def outcome_signature(options: Mapping[str, Any], model_name: str | None) -> Signature:
    """The signature of outcomes found with this model and these options."""
    return Signature(
        embedding_model=model_name, thresholds=threshold_signature(FAMILY, options, model_name)
    )
