"""`ragpulse topics`, `topics show ID`, `topics gaps` and `topics export`.

What the users ask about, as the `topics` job found it (issue 41): the active topics with
their label (top keywords per language), how many traces of a window each got, their
share, whether they are emerging and their knowledge-gap signals; one topic with its
example questions; the knowledge-gap list (`collector.jobs.queries.topic_gaps`); and
every trace's topic as JSON lines for a BI tool or a notebook.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from collector.settings import load_settings


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "topics",
        help="what users ask about: the topics of their questions, with volume and share",
        description="List the active topics the `topics` job found in the questions' "
        "embeddings: id (kept across re-clusterings), label (the LLM judge's short name "
        "when one is configured, else the top keywords per language), "
        "traces of the last SINCE given the topic and their share of the window's traces "
        "with an embedding (the rest: no topic near), the topic's size in the last "
        "clustering, when it was first found, whether it is emerging (its share of the "
        "last topics.emerging_window rose beyond chance against the topics.emerging_baseline "
        "before: Fisher's exact test, Benjamini-Hochberg over the topics, a minimum rise), "
        "and the share of its measured traces that failed a knowledge-gap signal. With "
        "--json each topic carries id, label, volume, share, emerging, change and metrics "
        "(each gap signal with its 95% interval). `ragpulse topics show ID` prints one "
        "topic with its example questions; `ragpulse topics gaps` the knowledge-gap list; "
        "`ragpulse topics export` every trace's topic as JSON lines.",
        epilog="examples:\n  ragpulse topics\n  ragpulse topics --since 24h --json\n"
        "  ragpulse topics show 3\n  ragpulse topics gaps --since 7d --limit 10\n"
        "  ragpulse topics export --since 7d --output topics.jsonl",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--since", default="7d", metavar="DURATION", help="window ending now (default 7d)"
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="one JSON object: the window, its traces and the topics with their numbers "
        "(id, label, volume, share, emerging, change, metrics)",
    )
    sub = parser.add_subparsers(dest="topics_command", metavar="ACTION")
    show = sub.add_parser(
        "show",
        help="one topic: its keywords per language, example questions and numbers",
        description="Print one topic (active or retired): its label and keywords per "
        "language, example questions (the sampled ones nearest its centroid), traces of "
        "the last SINCE and their share, size in the last clustering, when it was first "
        "and last found, and the clustering that found it. Exit 1 when no such topic.",
    )
    show.add_argument("topic_id", metavar="ID", type=int)
    show.add_argument(
        "--since", default="7d", metavar="DURATION", help="window ending now (default 7d)"
    )
    show.add_argument(
        "--json", action="store_true", dest="show_json", help="the topic as one JSON object"
    )
    show.set_defaults(func=show_topic)
    gaps = sub.add_parser(
        "gaps",
        help="the knowledge-gap list: topics ranked by what the corpus fails to give them",
        description="Rank the active topics by what the corpus fails to give them over the "
        "last SINCE. A trace fails when its retrieval returned nothing "
        "(retrieval_empty_rate), it missed the relevant document in the top 5 where "
        "ground truth is known (hit_rate@5), the judge scored its context relevance or "
        "faithfulness below 0.5 (judged traces), or its answer says it does not know "
        "(English and Russian phrasings). Each topic shows its volume, the share of its "
        "measured traces that failed at least one signal with the Wilson 95% interval, "
        "each signal with its 95% interval (Wilson for rates, Student t for means) and "
        "example questions of failed traces. The rank: volume x the interval's lower "
        "bound, the failed traces the topic has at the least, so the biggest sure "
        "problems come first.",
        epilog="examples:\n  ragpulse topics gaps\n  ragpulse topics gaps --since 24h --limit 5"
        "\n  ragpulse topics gaps --json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    gaps.add_argument(
        "--since", default="7d", metavar="DURATION", help="window ending now (default 7d)"
    )
    gaps.add_argument(
        "--limit", type=int, default=20, metavar="N", help="the first N topics (default 20)"
    )
    gaps.add_argument(
        "--json",
        action="store_true",
        dest="gaps_json",
        help="one JSON object: the window and the ranked topics with their failure rate, "
        "signals and examples",
    )
    gaps.set_defaults(func=list_gaps)
    export = sub.add_parser(
        "export",
        help="every trace's topic as JSON lines (trace_id, topic_id, topic_label)",
        description="Write one JSON line per trace of the last SINCE that the `topics` job "
        'gave a topic: {"trace_id", "topic_id", "topic_label"} (topic_id and topic_label '
        "null for a trace no topic was near enough), ordered by trace id.",
    )
    export.add_argument(
        "--since", default="7d", metavar="DURATION", help="window ending now (default 7d)"
    )
    export.add_argument(
        "--output", required=True, metavar="FILE.jsonl", help="the file to write (- for stdout)"
    )
    export.set_defaults(func=export_topics)
    parser.set_defaults(func=list_topics)


def _session(args: argparse.Namespace) -> Any:
    from ragpulse.store_check import migrated_session

    return migrated_session(args.config)


def _overview(args: argparse.Namespace, topic_id: int | None = None) -> Any:
    """The overview of the last `--since` (None: `topic_id` has no row)."""
    from collector.jobs.queries.topic_overview import overview
    from collector.store.topics import get_topic
    from ragpulse.time_window import window

    settings = load_settings(args.config).topics
    since, until = window(args.since, None)
    with _session(args) as session:
        topics = None
        if topic_id is not None:
            topic = get_topic(session, topic_id)
            if topic is None:
                return None
            topics = [topic]
        return overview(session, settings, since, until, signals=True, topics=topics)


def list_topics(args: argparse.Namespace) -> int:
    from ragpulse.topics_render import cut, topic_json

    seen = _overview(args)
    since, until = seen.since, seen.until
    if args.json:
        document = {
            "since": since.isoformat(),
            "until": until.isoformat(),
            "traces": seen.traces,
            "without_topic": seen.without_topic,
            "topics": [topic_json(row, whole=False) for row in seen.rows],
        }
        print(json.dumps(document, ensure_ascii=False))
        return 0
    print(
        f"{len(seen.rows)} topics over {seen.traces} traces with an embedding, "
        f"{since:%Y-%m-%d %H:%M} – {until:%Y-%m-%d %H:%M} UTC"
    )
    if not seen.rows:
        print("  none yet (the `topics` job finds them: `ragpulse jobs run topics`)")
        return 0
    print(
        f"  {'id':>5s} {'volume':>7s} {'share':>6s} {'size':>5s}  {'first seen':11s}  "
        f"{'failed':>6s}  label"
    )
    for row in seen.rows:
        topic = row.topic
        shown = f"{row.share:.1%}" if row.share is not None else "-"
        failed = f"{row.gap.failure_rate:.0%}" if row.gap is not None else "-"
        mark = "  EMERGING" if row.emerging else ""
        print(
            f"  {topic.id:>5d} {row.volume:>7d} {shown:>6s} {topic.size:>5d}  "
            f"{topic.first_seen:%m-%d %H:%M}  {failed:>6s}  {cut(topic.title)}{mark}"
        )
    if seen.without_topic:
        share = seen.without_topic / seen.traces
        print(f"  {'-':>5s} {seen.without_topic:>7d} {share:>6.1%}  (no topic near)")
    emerging = [r for r in seen.rows if r.emerging]
    if emerging:
        print(
            f"emerging: {len(emerging)} topics whose share rose beyond chance "
            "(`ragpulse topics show ID`)"
        )
    return 0


def show_topic(args: argparse.Namespace) -> int:
    from ragpulse.topics_render import signal_text, topic_json

    seen = _overview(args, args.topic_id)
    if seen is None:
        print(f"ragpulse topics: no topic {args.topic_id}", file=sys.stderr)
        return 1
    (row,) = seen.rows
    topic, since = row.topic, seen.since
    if args.show_json or args.json:  # `topics --json show ID` as well as `show ID --json`
        print(json.dumps(topic_json(row, whole=True), ensure_ascii=False))
        return 0
    state = "active" if topic.active else "retired"
    print(f"topic {topic.id} ({state}): {topic.title}")
    if topic.name is not None:
        print(f"  named by {topic.name.model}; keywords: {topic.label}")
    for lang, words in sorted(topic.keywords.items()):
        print(f"  keywords ({lang}): {', '.join(words)}")
    shown = f"{row.share:.1%}" if row.share is not None else "-"
    print(f"  traces since {since:%Y-%m-%d %H:%M} UTC: {row.volume} ({shown} of those embedded)")
    e = row.emergence
    if e is not None and e.recent_share is not None and e.baseline_share is not None:
        verdict = "EMERGING" if e.emerging else "not emerging"
        print(
            f"  share {e.recent_share:.1%} of the recent window against "
            f"{e.baseline_share:.1%} before: {verdict}" + (" (new topic)" if e.new else "")
        )
    print(f"  size in the last clustering: {topic.size} sampled questions")
    print(f"  first found {topic.first_seen:%Y-%m-%d %H:%M}, last {topic.last_seen:%Y-%m-%d %H:%M}")
    print(f"  clustering: {topic.method} on {topic.model}")
    if row.gap is not None:
        gap = row.gap
        print(
            f"  failed a gap signal: {gap.failed} of {gap.measured} measured traces "
            f"({gap.failure_rate:.0%} [{gap.lower:.0%}, {gap.upper:.0%}])"
        )
        for name, estimate in gap.signals.items():
            print(f"    {name}: {signal_text(estimate)}")
    print("  examples:")
    for example in topic.examples:
        print(f"    - {' '.join(example.split())}")
    return 0


def list_gaps(args: argparse.Namespace) -> int:
    from collector.jobs.queries.topic_gaps import topic_gaps
    from collector.store.topics import load_topics
    from ragpulse.time_window import window
    from ragpulse.topics_render import gap_json, print_gaps

    if args.limit < 1:
        print("ragpulse topics gaps: --limit must be at least 1", file=sys.stderr)
        return 2
    examples = load_settings(args.config).topics.examples
    since, until = window(args.since, None)
    with _session(args) as session:
        stored = load_topics(session)
        labels = {t.id: t.label for t in stored}
        titles = {t.id: t.title for t in stored}  # the judge's name when it has one
        found = [
            g for g in topic_gaps(session, since, until, examples=examples) if g.topic in labels
        ]
    shown = found[: args.limit]
    if args.gaps_json or args.json:
        document = {
            "since": since.isoformat(),
            "until": until.isoformat(),
            "ranked_by": "volume x lower 95% bound of the failure rate",
            "topics": [gap_json(g, labels[g.topic], rank) for rank, g in enumerate(shown, 1)],
        }
        print(json.dumps(document, ensure_ascii=False))
        return 0
    print_gaps(shown, titles, since, until, sys.stdout)
    return 0


def export_topics(args: argparse.Namespace) -> int:
    from collector.store.topics import iter_assignments, load_topics
    from ragpulse.time_window import window

    since, _until = window(args.since, None)
    written = 0
    with _session(args) as session:
        labels = {t.id: t.label for t in load_topics(session, active_only=False)}
        out = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")  # noqa: SIM115
        try:
            for trace_id, topic_id in iter_assignments(session, since):
                row = {
                    "trace_id": trace_id,
                    "topic_id": topic_id,
                    "topic_label": labels.get(topic_id) if topic_id is not None else None,
                }
                out.write(json.dumps(row, ensure_ascii=False) + "\n")
                written += 1
        finally:
            if out is not sys.stdout:
                out.close()
    where = "stdout" if args.output == "-" else args.output
    print(f"ragpulse topics: {written} traces written to {where}", file=sys.stderr)
    return 0
