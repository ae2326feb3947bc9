"""The report's topics sections: what users ask about, and what the corpus lacks.

"Topics": one row per active topic of the window (largest first, at most `TOPICS`): id,
label, traces, share of the window, change of share (the last `topics.emerging_window`
against the `topics.emerging_baseline` before, in percentage points), an EMERGING badge and
each tier's headline metric with its 95% interval. "Knowledge gaps": the topics ranked by
the failed traces they have at the least (`evaluators.topics.gaps`), each with its failure
rate and 95% interval, volume, the signals that failed and example questions of failed
traces: the list a content team works from. Made from
`collector.jobs.queries.topic_overview`; the HTML only here."""

from __future__ import annotations

from html import escape

from collector.jobs.queries.topic_overview import Overview
from evaluators.topics.gaps import SIGNALS, Estimate, Gap

TOPICS = 30
GAPS = 10
CSS = """
table.topics { border-collapse: collapse; width: 100%; font-size: 12px; background: #fff; }
table.topics th { text-align: left; color: var(--muted); font-weight: 600; padding: 2px 6px;
  border-bottom: 1px solid var(--line); }
table.topics td { padding: 3px 6px; border-bottom: 1px solid #eaeef2; }
table.topics td.num, table.topics th.num { text-align: right; white-space: nowrap; }
.emerging { display: inline-block; border-radius: 10px; padding: 0 7px; font-size: 10px;
  font-weight: 700; color: #fff; background: #bf8700; }
ol.gaps { background: #fff; border: 1px solid var(--line); border-radius: 6px;
  padding: 8px 12px 8px 34px; margin: 6px 0; }
ol.gaps > li { margin: 0 0 10px; }
ol.gaps ul li { margin: 0; }
ol.gaps .rate { font-weight: 600; color: #b42318; }
ol.gaps .signals, ol.gaps .note { color: var(--muted); font-size: 12px; }
ol.gaps ul { margin: 2px 0 0; padding-left: 18px; font-size: 12px; }
"""


def _pct(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}%}"


def _change(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:+.1f} pp"


def _rate(value: float) -> str:
    """A percentage: one decimal below 10% (a 0.4% upper bound is not 0%)."""
    return f"{value:.1%}" if 0 < value < 0.1 else f"{value:.0%}"


def _signal(e: Estimate) -> str:
    what = SIGNALS[e.signal]
    if what.proportion:
        text = f"{_rate(e.value)} [{_rate(e.lower)}, {_rate(e.upper)}]"
    else:
        text = f"{e.value:.2f} [{e.lower:.2f}, {e.upper:.2f}]"
    return f"{e.signal} {text} of {e.n} ({e.failed} failed)"


HEADLINES = ("hit_rate@5", "context_relevance", "faithfulness")
"""Each tier's headline metric in the table (retrieval, and the judge's two), per topic
with its 95% interval, where the window measured it."""


def _headline(gap: Gap | None, signal: str) -> str:
    e = None if gap is None else gap.signals.get(signal)
    if e is None:
        return "–"
    if SIGNALS[signal].proportion:
        return f"{_rate(e.value)} [{_rate(e.lower)}, {_rate(e.upper)}]"
    return f"{e.value:.2f} [{e.lower:.2f}, {e.upper:.2f}]"


def topics_table(seen: Overview) -> str:
    rows = []
    for row in seen.rows[:TOPICS]:
        change = row.emergence.change if row.emergence is not None else None
        badge = ' <span class="emerging">EMERGING</span>' if row.emerging else ""
        metrics = "".join(f'<td class="num">{_headline(row.gap, m)}</td>' for m in HEADLINES)
        rows.append(
            f'<tr data-topic="{row.topic.id}"><td class="num">{row.topic.id}</td>'
            f"<td>{escape(row.topic.title)}{badge}</td>"
            f'<td class="num">{row.volume}</td><td class="num">{_pct(row.share)}</td>'
            f'<td class="num">{_change(change)}</td>{metrics}</tr>'
        )
    more = len(seen.rows) - TOPICS
    tail = f'<p class="meta">{more} smaller topics not shown (`ragpulse topics`).</p>'
    heads = "".join(f'<th class="num">{m} [95% CI]</th>' for m in HEADLINES)
    return (
        '<table class="topics"><tr><th class="num">id</th><th>topic</th>'
        '<th class="num">traces</th><th class="num">share</th>'
        f'<th class="num">change</th>{heads}</tr>'
        + "".join(rows)
        + "</table>"
        + (tail if more > 0 else "")
    )


def _gap(gap: Gap, label: str) -> str:
    failing = [e for e in gap.signals.values() if e.failed]
    signals = "; ".join(_signal(e) for e in failing) or "none failed"
    examples = "".join(f"<li>{escape(' '.join(q.split()))}</li>" for q in gap.examples)
    return (
        f'<li data-topic="{gap.topic}"><b>{escape(label)}</b> (topic {gap.topic}) — '
        f'<span class="rate">{gap.failure_rate:.0%} failed</span> '
        f"[{_rate(gap.lower)}, {_rate(gap.upper)}] of {gap.measured} measured traces, "
        f"{gap.volume} traces in all: at least {gap.score:.0f} failed"
        f'<div class="signals">{escape(signals)}</div>'
        + (f"<ul>{examples}</ul>" if examples else "")
        + "</li>"
    )


def gaps_list(seen: Overview) -> str:
    labels = {row.topic.id: row.topic.title for row in seen.rows}
    shown = [g for g in seen.gaps if g.failed][:GAPS]
    if not shown:
        return (
            '<p class="meta">No topic has a failed trace in the window (or none was '
            "measured: the retrieval_health, real_users_benchmark and rag_quality jobs "
            'score the traces; answers are read for "I don\'t know").</p>'
        )
    items = "".join(_gap(g, labels.get(g.topic, f"topic {g.topic}")) for g in shown)
    return f'<ol class="gaps">{items}</ol>'


def topics_section(seen: Overview) -> str:
    """Both sections' HTML (an explanation instead when there are no topics yet)."""
    when = f"{seen.since:%Y-%m-%d %H:%M} – {seen.until:%Y-%m-%d %H:%M} UTC"
    head = (
        f"<style>{CSS}</style>"
        '<h2 class="dashboard" id="topics">Topics</h2>'
        f'<p class="meta">What users asked about, {when}: {seen.traces} traces with a '
        "topic or none near; change is the share of the last day against the week before, "
        "EMERGING a rise beyond chance (or a new topic that took the traffic).</p>"
    )
    if not seen.rows:
        return head + (
            '<p class="meta">No topics yet: the topics job clusters the questions\' stored '
            "embeddings (embeddings.persist) once it has enough.</p>"
        )
    return (
        head
        + topics_table(seen)
        + '<h2 class="dashboard" id="knowledge-gaps">Knowledge gaps</h2>'
        + '<p class="meta">The topics the corpus fails most, by the failed traces they have '
        "at the least (volume × the lower 95% bound of the failure rate). A trace fails "
        "when its retrieval was empty, it missed the relevant document in the top 5, the "
        "judge scored context relevance or faithfulness below 0.5, the answer says it "
        "does not know, or the user asked it again in other words. Write or fix the "
        "documents these questions need.</p>" + gaps_list(seen)
    )
