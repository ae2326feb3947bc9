"""Topics: what the users ask about, found in their questions' stored embeddings (issue 41).

Every run
1. re-clusters when the topics are older than `topics.recluster_every` (or there are none):
   it takes a deterministic sample of at most `topics.sample_size` traces of the look-back
   (`topics.lookback`): those with the smallest hash of their trace id, so the same traffic
   gives the same sample and a re-clustering sees mostly the same questions. Their vectors
   are read from the `embeddings` table (written by the jobs that embed the questions, with
   `embeddings.persist`); traces whose question has no stored vector are left out. The
   sample is clustered by `evaluators.topics` anchored on the previous topics
   (`evolve.recluster`), so a topic still there keeps its id; a topic no longer found is
   retired (its row stays, `active` false), a new one gets an id never used. Each topic is
   stored with its keywords per language (c-TF-IDF), example questions (the sampled ones
   nearest its centroid), centroid and size. Topics of another embedding model (the model
   changed) are retired and the topics found afresh;
1b. between re-clusterings, every `topics.novelty_every` (an hour), looks for a new kind of
   question in the recent window (`topics.emerging_window`, a day): a sample of it against a
   sample of the older look-back, by `evaluators.topics.novelty` (questions the topics serve
   badly that cluster together and were absent before). Each one found is stored at once as
   a topic with a new id (method `NOVELTY_METHOD` until a re-clustering finds it again), and
   the recent window's traces are assigned again: a daily re-clustering of a week's sample
   would not see a new intent at a few percent of one day's traffic;
2. assigns topics: after a re-clustering every trace of the look-back (a row is rewritten
   only when the topic changed), otherwise those without a topic yet (the traces embedded
   since the last run), each to its nearest active topic's centroid (a matrix product,
   `evaluators.topics.nearest_topic`), none when its cosine is below
   `topics.min_similarity` (`topic_assignment`). Traces are read, looked up and written
   a page at a time, so memory stays bounded whatever the traffic. A trace that leaves the look-back
   keeps the topic it last got; assignments older than the look-back and the results'
   retention (`scheduler.results_retention`) are deleted;
3. with a judge configured, names the unnamed topics (new ones: a kept topic keeps its
   name), at most `topics.names_per_run` a run (`topic_names.py`).

The job writes no metric results itself: the topics feed the `ragpulse topics` commands,
and every other job groups and slices its outcomes by them (`topic` group label and slice
dimension; `collector.jobs.recording.regroup` moves outcomes stored before their trace had
its topic).

Measured on PostgreSQL with 50,000 traces of 20 planted topics (512-dim vectors, two shared
cores): reading the sample and its vectors ~1 s, the clustering of 5,000 questions 65-90 s,
giving all 50,000 traces a topic 8 s (~6,000 traces a second, reads and writes included); a
run with nothing new 0.1 s.
"""

from __future__ import annotations

import hashlib
import heapq
import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime, timedelta
from functools import partial

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from collector.jobs.catalog.topic_assignment import Vectors, assign_topics, describe_topics
from collector.jobs.catalog.topic_names import Naming, name_topics
from collector.jobs.run.definition import JobDefinition, JobEnvironment, JobReport
from collector.jobs.run.engine import IncrementalJob
from collector.jobs.run.job_state import load_state, record_run
from collector.settings import Settings, TopicSettings, parse_duration
from collector.store.embeddings import SqlEmbeddingStore
from collector.store.models import Trace
from collector.store.topics import (
    StoredTopic,
    last_clustered,
    load_topics,
    next_topic_id,
    prune_assignments,
    save_topics,
)
from evaluators.topics import SpaceOptions, nearest_topic
from evaluators.topics.evolve import Topics, recluster
from evaluators.topics.novelty import novel_topics

logger = logging.getLogger(__name__)

NAME = "topics"
METRICS: tuple[str, ...] = ()
METHOD = "hdbscan-count+ward+anchored"
"""The clustering's name in a topic's signature (`evaluators.topics.evolve.recluster`)."""
NOVELTY_METHOD = "residue-novelty"
"""The method of a topic born between re-clusterings (`evaluators.topics.novelty`), until
a re-clustering finds it again."""
PAGE = 2000
"""Traces read at a time (the sample; the assignment's, `topic_assignment.PAGE`)."""
RETRY_S = 3600.0
"""After a re-clustering found too few questions, the next try waits at least this long
(or `topics.recluster_every` when shorter): each try reads the look-back's traces."""


def definition(settings: Settings) -> JobDefinition:
    return JobDefinition(
        name=NAME,
        metrics=METRICS,
        description="topics of the questions: clusters their embeddings, gives traces a topic",
        factory=partial(TopicsJob, topics=settings.topics, model=settings.embeddings.model),
    )


def sample_key(trace_id: str) -> int:
    """The trace's place in the deterministic sample (smallest first): a 64-bit hash."""
    return int.from_bytes(hashlib.blake2b(trace_id.encode(), digest_size=8).digest(), "big")


@dataclass(frozen=True)
class Reclustered:
    """What a re-clustering did: topics kept, born and retired, and the rows it clustered
    (`too_few`: not done, the sample had only `clustered` questions with a stored vector)."""

    kept: int
    new: int
    retired: int
    clustered: int
    too_few: bool = False


class TopicsJob(IncrementalJob):
    """Not a per-trace job: it clusters a sample and assigns topics (module docstring)."""

    def __init__(
        self,
        definition: JobDefinition,
        env: JobEnvironment,
        *,
        topics: TopicSettings | None = None,
        model: str | None = None,
        vectors: Vectors | None = None,
    ) -> None:
        self.definition = definition
        self.env = env
        self.name = definition.name
        self.settings = topics or TopicSettings()
        embedder = env.embedder
        self.model = str(getattr(embedder, "model_name", None) or model or "")
        """The embedding model whose stored vectors are clustered (the jobs' embedder's)."""
        self.vectors: Vectors = vectors or SqlEmbeddingStore(env.session_factory).load
        self.recluster_every = timedelta(seconds=parse_duration(self.settings.recluster_every))
        self.lookback = timedelta(seconds=parse_duration(self.settings.lookback))
        self._tried_at: datetime | None = None
        self._novelty_at: datetime | None = None

    @property
    def signature(self) -> dict[str, object]:
        """The clustering's parameters, stored with every topic it finds."""
        cfg = self.settings
        return {
            "min_size": cfg.min_topic_size,
            "max_topics": cfg.max_topics,
            "sample_size": cfg.sample_size,
            "space": asdict(SpaceOptions()),
        }

    def run(self, now: datetime | None = None) -> JobReport:
        started = time.perf_counter()
        now = now or datetime.now(UTC)
        with self.env.session_factory() as session:
            last = last_clustered(session, self.model, besides=NOVELTY_METHOD)
            done: Reclustered | None = None
            if self._due(last, now):
                self._tried_at = now
                done = self.recluster(session, now)
                session.commit()
            every = done is not None and not done.too_few
            born: list[int] = []
            if not every and last is not None and self._novelty_due(now):
                self._novelty_at = now
                born = self.discover_new(session, now)
                session.commit()
            assigned = self.assign(session, now, every=every, started=started)
            if born:
                window = timedelta(seconds=parse_duration(self.settings.emerging_window))
                assigned += self.assign(
                    session, now, every=True, started=started, since=now - window
                )
            prune_assignments(session, now - max(self.lookback, self.env.retention))
            session.commit()
            status, message = "ok", f"{assigned} traces given a topic"
            naming = self.name_new_topics()
            if naming.named or naming.failed:
                message += f"; {naming.named} topics named" + (
                    f", {naming.failed} failed" if naming.failed else ""
                )
            if done is not None and done.too_few and last is None:
                status, message = "skipped", self._too_few(done.clustered)
            elif done is not None and not done.too_few:
                message += (
                    f"; re-clustered {done.clustered} questions: {done.kept} topics kept, "
                    f"{done.new} new, {done.retired} retired"
                )
            if born:
                message += f"; new kind of question: topic {', '.join(map(str, born))}"
            record_run(
                session,
                load_state(session, self.name),
                now,
                message,
                started=started,
                status=status,
            )
        return JobReport(self.name, status, assigned, 0, time.perf_counter() - started, message)

    def name_new_topics(self) -> Naming:
        """Name the unnamed topics with the judge, when there is one (`topic_names.py`)."""
        judge = self.env.judge
        if judge is None or self.settings.names_per_run <= 0:
            return Naming()
        return name_topics(
            self.env.session_factory, judge, model=self.model, limit=self.settings.names_per_run
        )

    def _too_few(self, found: int) -> str:
        return (
            f"no topics yet: {found} sampled questions of the last {self.settings.lookback} have "
            f"a stored {self.model} vector, fewer than 2 x topics.min_topic_size "
            f"({self.settings.min_topic_size}); vectors are stored with embeddings.persist"
        )

    def _due(self, last: datetime | None, now: datetime) -> bool:
        """True when the topics are to be found again: none of this embedding model yet
        (at most every `RETRY_S` while there are too few questions) or older than
        `recluster_every`."""
        if last is not None:
            return now - last >= self.recluster_every
        retry = min(self.recluster_every, timedelta(seconds=RETRY_S))
        return self._tried_at is None or not timedelta(0) <= now - self._tried_at < retry

    # -- re-clustering --------------------------------------------------------------------

    def sample(
        self, session: Session, now: datetime, since: datetime | None = None
    ) -> list[tuple[str, str]]:
        """(trace_id, question) of the look-back's traces (from `since` when given) with
        the smallest `sample_key`s, at most `sample_size` (a bounded heap over the
        streamed rows)."""
        size = self.settings.sample_size
        heap: list[tuple[int, str, str]] = []  # (-key, trace_id, question): a max-heap
        start = now - self.lookback if since is None else since
        query = (
            select(Trace.trace_id, Trace.question)
            .where(Trace.timestamp >= start, Trace.timestamp <= now)
            .where(Trace.not_request.is_(None))
            .execution_options(yield_per=PAGE)
        )
        for trace_id, question in session.execute(query):
            if not question:
                continue
            entry = (-sample_key(trace_id), trace_id, question)
            if len(heap) < size:
                heapq.heappush(heap, entry)
            elif entry > heap[0]:
                heapq.heapreplace(heap, entry)
        return sorted((trace_id, question) for _, trace_id, question in heap)

    def recluster(self, session: Session, now: datetime) -> Reclustered:
        """Find the topics again (module docstring, step 1); not done (`too_few`, the
        previous topics stay) when the sample is too small to cluster."""
        cfg = self.settings
        rows = self.sample(session, now)
        stored = self.vectors(self.model, [q for _, q in rows])
        rows = [(t, q) for t, q in rows if q in stored]
        if len(rows) < 2 * cfg.min_topic_size:
            logger.info(
                "job %s: %d sampled questions with a stored embedding, fewer than twice "
                "topics.min_topic_size (%d): not re-clustered",
                self.name,
                len(rows),
                cfg.min_topic_size,
            )
            return Reclustered(0, 0, 0, len(rows), too_few=True)
        texts = [q for _, q in rows]
        embeddings = np.vstack([stored[q] for q in texts]).astype(np.float32)
        before = load_topics(session)
        comparable = [
            t for t in before if t.model == self.model and len(t.centroid) == embeddings.shape[1]
        ]
        previous = Topics(
            ids=tuple(t.id for t in comparable),
            centroids=(
                np.vstack([t.centroid for t in comparable])
                if comparable
                else np.zeros((0, embeddings.shape[1]), dtype=np.float32)
            ),
            labels=np.zeros(0, dtype=np.int64),
            new=(),
            retired=(),
            next_id=next_topic_id(session),
        )
        # the clustering takes a minute for 5,000 questions: hold no snapshot open meanwhile
        session.commit()
        found = recluster(
            previous,
            embeddings,
            texts,
            min_size=cfg.min_topic_size,
            max_topics=cfg.max_topics,
            sample_size=cfg.sample_size,
        )
        topics = self._described(found, embeddings, texts, {t.id: t for t in before}, now)
        retired = [t.id for t in before if t.id not in set(found.ids)]
        save_topics(session, topics, retired)
        return Reclustered(
            kept=len(found.ids) - len(found.new),
            new=len(found.new),
            retired=len(retired),
            clustered=len(texts),
        )

    def _described(
        self,
        found: Topics,
        embeddings: np.ndarray,
        texts: Sequence[str],
        before: dict[int, StoredTopic],
        now: datetime,
    ) -> list[StoredTopic]:
        """The found topics with their keywords, examples and sizes (`describe_topics`)."""
        return describe_topics(
            found,
            embeddings,
            texts,
            before,
            now,
            examples=self.settings.examples,
            model=self.model,
            method=METHOD,
            params=self.signature,
        )

    # -- new kinds of question between re-clusterings -------------------------------------

    def _novelty_due(self, now: datetime) -> bool:
        every = timedelta(seconds=parse_duration(self.settings.novelty_every))
        return self._novelty_at is None or not timedelta(0) <= now - self._novelty_at < every

    def discover_new(self, session: Session, now: datetime) -> list[int]:
        """Topics for a new kind of question of the recent window (`emerging_window`), not
        served by the active topics and absent before it (`evaluators.topics.novelty`):
        stored with new ids; returns them."""
        cfg = self.settings
        window = timedelta(seconds=parse_duration(cfg.emerging_window))
        active = [t for t in load_topics(session) if t.model == self.model]
        if not active:
            return []
        recent = self.sample(session, now, since=now - window)
        older = self.sample(session, now - window, since=now - self.lookback)
        stored = self.vectors(self.model, [q for _, q in recent] + [q for _, q in older])
        recent_texts = [q for _, q in recent if q in stored]
        older_texts = [q for _, q in older if q in stored]
        if len(recent_texts) < 2 * cfg.min_topic_size or not older_texts:
            return []
        dim = len(active[0].centroid)
        rows = np.vstack([stored[q] for q in recent_texts]).astype(np.float32)
        if rows.shape[1] != dim:
            return []
        before = np.vstack([stored[q] for q in older_texts]).astype(np.float32)
        session.commit()  # the clustering of the residue takes seconds: no snapshot held
        centroids = np.vstack([t.centroid for t in active])
        found = novel_topics(rows, recent_texts, before, centroids, min_size=cfg.min_topic_size)
        if not found.new:
            return []
        first = next_topic_id(session)
        ids = tuple([t.id for t in active] + [first + i for i in range(len(found.new))])
        every = np.vstack([centroids, found.new_centroids()])
        labels = np.asarray(ids, dtype=np.int64)[nearest_topic(rows, every).topics]
        described = self._described(
            Topics(ids, every, labels, ids[len(active) :], (), first + len(found.new)),
            rows,
            recent_texts,
            {t.id: t for t in active},
            now,
        )
        born = [replace(t, method=NOVELTY_METHOD) for t in described if t.id >= first]
        save_topics(session, born, [])
        logger.info(
            "job %s: %d new kind(s) of question in the last %s: topic %s",
            self.name,
            len(born),
            cfg.emerging_window,
            ", ".join(str(t.id) for t in born),
        )
        return [t.id for t in born]

    # -- assignment -----------------------------------------------------------------------

    def assign(
        self,
        session: Session,
        now: datetime,
        *,
        every: bool,
        started: float | None = None,
        since: datetime | None = None,
    ) -> int:
        """Give the look-back's traces (from `since` when given) their nearest topic
        (module docstring, step 2; `topic_assignment.assign_topics`): `every` trace, or only
        those without a topic yet; returns how many got a new or changed row."""
        return assign_topics(
            session,
            model=self.model,
            vectors=self.vectors,
            min_similarity=self.settings.min_similarity,
            since=now - self.lookback if since is None else since,
            now=now,
            every=every,
            started=time.perf_counter() if started is None else started,
        )
