"""LLM-judge metrics: a litellm client with cache, budgets and typed errors, our prompts,
and one module per metric (registered with kind "async_per_sample")."""

from evaluators.judge.client import JudgeClient
from evaluators.judge.config import JudgeConfig
from evaluators.judge.stats import JudgeStats
from evaluators.judge.store import InMemoryJudgmentStore, JudgmentRecord, JudgmentStore, Usage

__all__ = [
    "InMemoryJudgmentStore",
    "JudgeClient",
    "JudgeConfig",
    "JudgeStats",
    "JudgmentRecord",
    "JudgmentStore",
    "Usage",
]
