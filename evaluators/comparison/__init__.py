"""Statistics of `ragpulse compare`: is candidate B different from baseline A, metric by
metric, with intervals, effect sizes and p-values corrected across the metrics (#20)."""

from evaluators.comparison.compare import compare_paired, compare_unpaired
from evaluators.comparison.pairing import Paired, pair_rows, question_key
from evaluators.comparison.result import Comparison, Incomparable, MetricComparison

__all__ = [
    "Comparison",
    "Incomparable",
    "MetricComparison",
    "Paired",
    "compare_paired",
    "compare_unpaired",
    "pair_rows",
    "question_key",
]
