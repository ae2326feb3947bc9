"""What one judge response cost in USD (0 for a model litellm has no price for).

litellm prices every response while logging it and leaves the figure in the response's
hidden parameters; that is reused instead of paying the (CPU-heavy) lookup twice. A model
without a price (a self-hosted one) is looked up once, warned about once, and costs 0
from then on; the set of such models is the client's `JudgeStats.unpriced_models`.
"""

from __future__ import annotations

import logging
from typing import Protocol

# Logged under the client's name, as before these steps had modules of their own.
logger = logging.getLogger("evaluators.judge.client")


class PriceList(Protocol):
    def price(self, response: object, model: str) -> float:
        """The USD cost of `response`; raises when the model has no known price."""
        ...


def response_cost(response: object, model: str, prices: PriceList, unpriced: set[str]) -> float:
    """The USD cost of `response`; adds `model` to `unpriced` when it has no price."""
    hidden = getattr(response, "_hidden_params", None) or {}
    known = hidden.get("response_cost") if isinstance(hidden, dict) else None
    if isinstance(known, int | float) and known > 0:
        return float(known)
    if model in unpriced:
        return 0.0
    try:
        return prices.price(response, model)
    except Exception:
        unpriced.add(model)
        logger.warning("litellm has no price for judge model %s; its cost is recorded as 0", model)
        return 0.0
