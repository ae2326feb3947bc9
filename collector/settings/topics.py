"""Topic discovery (`topics`): what users ask about, found by clustering the questions'
stored embeddings (`collector/jobs/catalog/topics.py`, issue 41)."""

from __future__ import annotations

from pydantic import Field, field_validator

from collector.settings.durations import parse_duration
from collector.settings.fields import Group


class TopicSettings(Group):
    max_topics: int = Field(50, ge=1, le=1000)
    """At most this many topics: the clustering chooses their number itself, up to this."""
    min_topic_size: int = Field(10, ge=2)
    """The smallest topic worth reporting, in sampled questions; smaller groups are merged
    into their nearest topic."""
    recluster_every: str = "24h"
    """How often the topics are found again from the recent questions (between two
    re-clusterings, new traces only get their nearest topic). Topics keep their ids across
    re-clusterings when they are still there."""
    lookback: str = "7d"
    """The recent questions a re-clustering samples, and the traces the job gives a topic."""
    sample_size: int = Field(5000, ge=10, le=100_000)
    """At most this many questions are clustered per re-clustering, a deterministic sample
    by the hash of the trace id (clustering time and memory grow with it, not with traffic)."""
    min_similarity: float = Field(0.3, ge=-1.0, le=1.0)
    """A trace gets its nearest topic only when the cosine of its question's embedding to
    that topic's centroid is at least this; below, it gets no topic (an outlier)."""
    series: int = Field(10, ge=0, le=1000)
    """The K largest topics get series of their own; the rest fold into `other` (the
    `topic` group label's bound, unless `labels.per_label.topic` sets one)."""
    examples: int = Field(5, ge=1, le=50)
    """Example questions kept per topic (the sampled questions nearest its centroid)."""
    novelty_every: str = "1h"
    """How often, between re-clusterings, the recent window (`emerging_window`) is searched
    for a new kind of question: questions the topics serve badly that cluster together and
    were absent before (`evaluators.topics.novelty`); each becomes a topic at once, so a new
    intent at a few percent of a day's traffic need not wait for the next re-clustering."""
    emerging_window: str = "24h"
    """A topic is emerging when its share of this recent window's traffic rose beyond
    chance against its share in the baseline before it (`emerging_baseline`)."""
    emerging_baseline: str = "7d"
    """The window before `emerging_window` that a topic's recent share is compared with."""
    emerging_alpha: float = Field(0.01, gt=0.0, lt=1.0)
    """False discovery rate of the rise test (Fisher's exact, Benjamini-Hochberg over the
    topics)."""
    emerging_min_ratio: float = Field(1.5, ge=1.0)
    """A rise worth a ticket: the recent share at least this many times the baseline's."""
    emerging_min_change: float = Field(0.01, ge=0.0, lt=1.0)
    """A rise worth a ticket: the recent share at least this much above the baseline's
    (absolute: 0.01 is one percentage point of the traffic)."""
    emerging_min_traces: int = Field(10, ge=1)
    """An emerging topic has at least this many traces in the recent window (the smallest
    topic worth reporting, as `min_topic_size`)."""
    names_per_run: int = Field(20, ge=0, le=1000)
    """With a judge configured (`judge.models`), at most this many topics without a name
    are named per run: one judge call each (its first model) writes a short name per
    language of the topic's examples from its keywords and examples; a topic kept across
    re-clusterings keeps its name. 0: no names (the keywords label the topics)."""

    @field_validator(
        "recluster_every", "lookback", "novelty_every", "emerging_window", "emerging_baseline"
    )
    @classmethod
    def _duration(cls, value: str) -> str:
        parse_duration(value)
        return value
