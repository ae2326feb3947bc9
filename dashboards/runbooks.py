"""The runbook behind every shipped alert: what it means, how to confirm it, its usual
causes and the labels a silence should match, one entry per alert name.

One source for three things: the `runbook_url` annotation of every rule (the generated
`quality.yml` and the hand-written `operations.yml`, both rewritten by
`python dashboards/build.py`), the runbook pages of the documentation site
(`python -m ragpulse.docs`), and the test that no alert lacks either
(`tests/dashboards/test_runbooks.py`). Prometheus annotations are static strings, so the
site's address is written into the rules: `RAGPULSE_DOCS_URL` (default `DOCS_URL`, the
address of `mkdocs serve`) when running `dashboards/build.py`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DOCS_URL = "http://127.0.0.1:8000/"
"""Where the documentation site is served by default (`mkdocs serve`); set
`RAGPULSE_DOCS_URL` to the site's real address when building the rules."""

RUNBOOK_DIR = "runbooks"
"""The site's folder of runbook pages (`docs/runbooks/<Alert>.md`)."""


@dataclass(frozen=True)
class Runbook:
    """One alert's runbook; `scope` names the labels that tell its firings apart (what a
    silence should match besides `alertname`, so it hides this problem and no other)."""

    alert: str
    means: str
    confirm: tuple[str, ...]
    causes: tuple[str, ...]
    scope: tuple[str, ...]


def runbook_url(alert: str, docs_url: str = DOCS_URL) -> str:
    """The address of `alert`'s runbook page under the site at `docs_url`."""
    if alert not in RUNBOOKS:
        raise ValueError(f"no runbook for alert {alert!r}; known: {', '.join(sorted(RUNBOOKS))}")
    return f"{docs_url.rstrip('/')}/{RUNBOOK_DIR}/{alert}/"


_URL_LINE = re.compile(r"^(?P<indent>\s*)runbook_url: .*/" + RUNBOOK_DIR + r"/(?P<alert>\w+)/$")


def relink(text: str, docs_url: str) -> str:
    """`text` (a rule or promtool test file) with every `runbook_url:` line pointing
    under `docs_url`: how the hand-written files follow a new site address."""
    lines = []
    for line in text.split("\n"):
        match = _URL_LINE.match(line)
        if match:
            url = runbook_url(match["alert"], docs_url)
            line = f"{match['indent']}runbook_url: {url}"
        lines.append(line)
    return "\n".join(lines)


_TRACES = "ragpulse traces --metric {metric} --since 1h"
_EXPLAIN = "ragpulse explain --metric {metric} --since 1h --baseline 7d"


def _threshold(alert: str, metric: str, means: str, causes: tuple[str, ...]) -> Runbook:
    return Runbook(
        alert=alert,
        means=means,
        confirm=(
            f"ragpulse traces --metric {metric} --since 24h --worst 20",
            f"ragpulse explain --metric {metric} --since 24h --baseline 7d",
        ),
        causes=causes,
        scope=("tenant",),
    )


_RUNBOOKS = (
    Runbook(
        "RagpulseNoTraces",
        "ragpulse consumed no message from Kafka for 15 minutes: nothing new is stored, so "
        "every quality series goes stale.",
        (
            "ragpulse inspect --last 20",
            "curl -s http://127.0.0.1:9464/readyz",
        ),
        (
            "The RAG application stopped publishing (deploy, crash, a producer setting).",
            "ragpulse cannot reach the brokers (network, TLS or SASL settings under "
            "RAGPULSE_KAFKA__*); the logs of logger collector.ingest.kafka say so.",
            "No consumer role runs (`ragpulse run --role consumer` or `all`).",
        ),
        (),
    ),
    Runbook(
        "RagpulseInvalidShareHigh",
        "More than 5% of consumed messages fail decoding or validation and go to the "
        "`dead_letters` table instead of being evaluated.",
        (
            "ragpulse inspect --last 20",
            "psql -c 'select reason, count(*) from dead_letters group by 1 order by 2 desc'",
        ),
        (
            "A producer changed its message format (a renamed field, a new type).",
            "A new application publishes to the trace topic with another schema.",
            "Messages larger than kafka.max_message_bytes, or not UTF-8.",
        ),
        (),
    ),
    Runbook(
        "RagpulseConsumerLagGrowing",
        "The consumer falls behind the producers on a topic (lag above 1000 and growing for "
        "15 minutes): the metrics describe older and older traffic.",
        ("ragpulse plan",),
        (
            "More traffic than one consumer stores: add partitions and consumer replicas "
            "(`ragpulse run --role consumer`).",
            "Slow database inserts (PostgreSQL load, missing partitions, disk).",
            "A consumer restarting in a loop (rebalances): see the logs.",
        ),
        ("topic",),
    ),
    Runbook(
        "RagpulseConsumerStuck",
        "The consumer has failed the same batch of one partition for more than 5 minutes; "
        "nothing after it on that partition is stored.",
        (
            "curl -s http://127.0.0.1:9464/readyz",
            "ragpulse inspect --last 20",
        ),
        (
            "The database is unreachable or refuses writes (the batch is retried until it "
            "is back).",
            "The database refuses even dead letters (full disk, permissions).",
        ),
        ("topic", "partition"),
    ),
    Runbook(
        "RagpulseOtlpContentMissing",
        "Most traces of one instrumentation convention arrive without answers or retrieved "
        "contexts, so the metrics that need them skip those traces.",
        ("ragpulse inspect --last 20",),
        (
            "Content capture is switched off in the instrumented app (OpenInference "
            "OPENINFERENCE_HIDE_*, OpenLLMetry TRACELOOP_TRACE_CONTENT=false, GenAI without "
            "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT).",
            "The app sets only ragpulse's own attributes and leaves out the answer or the "
            "documents.",
        ),
        ("convention", "missing"),
    ),
    Runbook(
        "RagpulseJobFailing",
        "A scheduled evaluation job failed in every 15-minute window for 15 minutes; its "
        "metrics are going stale.",
        ("ragpulse jobs list", "ragpulse jobs run {job}"),
        (
            "The database is unreachable or its schema is outdated (`ragpulse migrate`).",
            "The judge or embedding model cannot be loaded or reached.",
            "A bug: the traceback is in the logs (logger collector.jobs.scheduler).",
        ),
        ("job",),
    ),
    Runbook(
        "RagpulseLabelValuesFolded",
        "More distinct values of a group label arrive than labels.max_values allows; the "
        "rarest are counted together as `other`, so their series are no longer separate.",
        ("curl -s http://127.0.0.1:9464/metrics | grep -E '^ragpulse_label_values'",),
        (
            "A client writes an id (a user or request id) into the tag.",
            "A real growth in tenants or versions: raise labels.max_values, or list the "
            "values to keep (labels.per_label.<label>.values).",
        ),
        ("label",),
    ),
    Runbook(
        "RagpulseJobStale",
        "A job has not succeeded for more than 30 minutes: its quality series are not refreshed.",
        ("ragpulse jobs list", "ragpulse jobs run {job}"),
        (
            "No scheduler runs (`ragpulse run --role scheduler` or `all`).",
            "The job fails every run (then RagpulseJobFailing fires too).",
            "Another replica holds the job's lease and is stuck.",
        ),
        ("job",),
    ),
    Runbook(
        "RagpulseJudgeErrorRateHigh",
        "More than 10% of the LLM judge's requests to a model fail, so the judge metrics "
        "lose samples.",
        ("ragpulse traces --metric faithfulness --errors",),
        (
            "The judge endpoint is down or slow (timeouts): RAGPULSE_JUDGE__API_BASE.",
            "Rate limits or exhausted quotas (429): lower judge.max_concurrency or set "
            "judge.requests_per_minute.",
            "The model answers without valid JSON: see judge.structured_output.",
        ),
        ("model",),
    ),
    Runbook(
        "RagpulseJudgeSpendOverBudget",
        "The LLM judge spent more in the last 24 hours than judge.max_usd_per_day.",
        ("ragpulse plan --metric faithfulness",),
        (
            "More traffic, so more sampled traces (sampling.judge).",
            "A pricier model or longer prompts and contexts.",
            "Retries of failing calls (see RagpulseJudgeErrorRateHigh).",
        ),
        (),
    ),
    Runbook(
        "RagpulseJudgeDisagreesWithHumans",
        "The LLM judge agrees with the human labels of the last 7 days less than "
        "judge.min_agreement on a metric: its raw values are not to be trusted.",
        (
            "ragpulse traces --metric {metric} --since 7d --worst 20",
            "ragpulse traces show TRACE_ID",
        ),
        (
            "A new judge model or prompt.",
            "The labellers' guidelines changed, or the traffic moved to cases the prompt "
            "does not cover.",
        ),
        ("metric", "model"),
    ),
    _threshold(
        "RagpulseHitRate1Low",
        "hit_rate@1",
        "Fewer than half of the questions get a relevant document in first place over 24h "
        "(seed 004 §11.2: needs attention).",
        (
            "An index, chunking or embedding-model change.",
            "A reranker that regressed (compare hit_rate@5).",
            "New questions the corpus does not cover.",
        ),
    ),
    _threshold(
        "RagpulseMRRLow",
        "mrr",
        "The first relevant document ranks low on average over 24h (MRR < 0.5).",
        (
            "The ranking (reranker) regressed, when hit_rate@5 is fine.",
            "Retrieval itself regressed, when hit_rate@5 dropped too.",
        ),
    ),
    _threshold(
        "RagpulseNDCG10Low",
        "ndcg@10",
        "The ranking quality of the top 10 is below seed 004's attention threshold over 24h.",
        ("Changes to the index, the chunking or the reranker.",),
    ),
    _threshold(
        "RagpulseFaithfulnessLow",
        "faithfulness_rating",
        "Answers contain claims the retrieved contexts do not support (hallucination), "
        "rated by the LLM judge over 24h.",
        (
            "A prompt or generation-model change.",
            "Retrieval returning less relevant contexts (the model fills the gaps).",
            "A judge that disagrees with humans (RagpulseJudgeDisagreesWithHumans).",
        ),
    ),
    _threshold(
        "RagpulseE2EScoreLow",
        "e2e_score",
        "End-to-end answer quality, rated by the LLM judge, is below seed 004's attention "
        "threshold over 24h.",
        (
            "Retrieval dropped first (hit rate, NDCG on the overview dashboard).",
            "Generation dropped first (faithfulness, relevance).",
        ),
    ),
    _threshold(
        "RagpulseProductionJudgeAccuracyLow",
        "judge_accuracy",
        "The production judge decides wrongly whether to show answers (accuracy < 0.85 "
        "against its labels over 24h).",
        (
            "Low judge_precision: it shows bad answers.",
            "Low judge_recall: it hides good ones.",
        ),
    ),
    _threshold(
        "RagpulseJudgeConsistencyLow",
        "judge_consistency",
        "Re-judging the same traces gives different scores, so every LLM-judge metric is "
        "less trustworthy.",
        (
            "A high judge temperature (RAGPULSE_JUDGE__TEMPERATURE).",
            "A new or smaller judge model; failing calls (judge_error_rate).",
        ),
    ),
    Runbook(
        "RagpulseRetrievalEmptyRateHigh",
        "More than 1 question in 20 got no retrieved context in the last hour: the "
        "retriever or the index is failing.",
        (
            "ragpulse traces --metric retrieval_empty_rate --since 1h",
            "ragpulse explain --metric retrieval_empty_rate --since 1h --baseline 7d",
        ),
        (
            "The retriever or the vector store is down or times out.",
            "An empty or half-built index after a deploy.",
        ),
        ("tenant",),
    ),
    Runbook(
        "RagpulseQualityDropPage",
        "A metric's paging drift detector (CUSUM over the last hours against the 7-day "
        "baseline) crossed its threshold: a drop a person should look at now.",
        (_TRACES, _EXPLAIN),
        (
            "A deploy of the RAG application (prompt, model, retriever, index).",
            "One tenant, model or version carries the change: `explain` names it.",
            "A change in the traffic (new kinds of questions).",
        ),
        ("metric", "tenant"),
    ),
    Runbook(
        "RagpulseQualityDriftTicket",
        "A metric drifts worse slowly (the ticket detector, or the 24h value standard "
        "errors below the 7d one): no page, worth a look this week.",
        (_TRACES.replace("1h", "24h"), _EXPLAIN.replace("1h", "24h")),
        (
            "A gradual change in the traffic or the corpus.",
            "An earlier deploy whose effect builds up.",
        ),
        ("metric", "tenant"),
    ),
    Runbook(
        "RagpulseCanaryWorse",
        "The canary job found the candidate version significantly worse than the baseline "
        "on a guarded metric (corrected across the guarded metrics).",
        (
            "ragpulse compare --metric {metric} --a {baseline} --b {candidate} --since 24h",
            "ragpulse traces --metric {metric} --version {candidate} --since 24h",
        ),
        (
            "The candidate's change (prompt, model, retriever) made it worse: hold or roll "
            "back the rollout.",
            "The canary's traffic differs from the baseline's (a tenant routed to one only).",
        ),
        ("metric", "candidate"),
    ),
)

_TOPIC_RUNBOOKS = (
    Runbook(
        "RagpulseTopicEmerging",
        "Users ask about one topic much more than before: its share of the last "
        "topics.emerging_window (24h) of questions rose beyond chance against the "
        "topics.emerging_baseline (7 days) before it (Fisher's exact test, corrected over "
        "the topics, and at least topics.emerging_min_ratio times and "
        "topics.emerging_min_change above its old share), or a re-clustering found it as a "
        "new topic that took that much traffic. Nothing is broken: a ticket for whoever "
        "owns the bot's content. `ragpulse topics show ID` (ID: the alert's `topic` label) "
        "shows its example questions, its share against the baseline and its signals.",
        (
            "ragpulse topics --since 24h",
            "ragpulse topics gaps --since 24h --limit 10",
        ),
        (
            "A new product, feature, incident or campaign that users now ask about: check "
            "the corpus covers it (the topic's place in `topics gaps`: empty retrievals, "
            'misses and "I don\'t know" answers).',
            "A new tenant or client application sending another kind of question.",
            "A re-clustering split or renamed a topic (a new id for old questions): then "
            "its old share moved to it and the parent topic's share fell by as much.",
        ),
        ("topic",),
    ),
)

_SLO_CONFIRM = (
    "ragpulse slo check",
    "ragpulse traces --metric {metric} --since 6h --tenant {tenant}",
    "ragpulse explain --metric {metric} --since 6h --baseline 7d",
)
_SLO_RUNBOOKS = (
    Runbook(
        "RagpulseSloFastBurn",
        "A quality SLO burns its error budget fast: at this rate the whole budget of the "
        "SLO's window goes in hours to days (14.4x over 1h and 5m, or 6x over 6h and 30m, "
        "with enough bad events in the long window to tell a burn from chance, so a "
        "handful of sampled scores cannot page). One burn is one page: it keeps firing "
        "for 90 minutes after the burn stops.",
        _SLO_CONFIRM,
        (
            "A deploy of the RAG application made the SLO's metric worse for everyone or "
            "for one tenant: `explain` names the slice.",
            "The retriever or the index lost documents (hit_rate and faithfulness SLOs fall "
            "together).",
            "The judge changed (model or prompt): its scores moved, not the answers — the "
            "judge-consistency panel and the signature on the series tell.",
            "The conversations SLO (metric session_resolved, tier conversation): users "
            "re-ask in other words or ask for a person. `ragpulse sessions --worst --since "
            "6h` lists the failed sessions and `ragpulse sessions show ID` their turns; "
            "escalations on one kind of question are a content gap (`ragpulse topics gaps`), "
            "re-asks after empty retrievals are the index.",
        ),
        ("slo", "tenant"),
    ),
    Runbook(
        "RagpulseSloSlowBurn",
        "A quality SLO burns its error budget slowly (3x over 1d and 2h, or 1x over 3d and "
        "6h): the budget runs out before the window ends unless something changes; a ticket, "
        "not a page. It keeps firing for two hours after the burn stops.",
        _SLO_CONFIRM,
        (
            "A gradual change in the traffic or the corpus.",
            "An objective tighter than the system has been meeting: compare the SLO's error "
            "ratio over its window with its budget on the SLO dashboard.",
        ),
        ("slo", "tenant"),
    ),
)

RUNBOOKS: dict[str, Runbook] = {r.alert: r for r in (*_RUNBOOKS, *_SLO_RUNBOOKS, *_TOPIC_RUNBOOKS)}
"""Every shipped alert's runbook by alert name."""
