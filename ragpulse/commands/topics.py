"""`ragpulse topics`, `ragpulse topics show ID` and `ragpulse topics export`.

What the users ask about, as the `topics` job found it (issue 41): the active topics with
their label (top keywords per language), how many traces of a window each got and their
share; one topic with its example questions; and every trace's topic as JSON lines for a
BI tool or a notebook.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from collector.settings import load_settings

LABEL_CHARS = 60


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "topics",
        help="what users ask about: the topics of their questions, with volume and share",
        description="List the active topics the `topics` job found in the questions' "
        "embeddings: id (kept across re-clusterings), label (top keywords per language), "
        "traces of the last SINCE given the topic and their share of the window's traces "
        "with an embedding (the rest: no topic near), the topic's size in the last "
        "clustering, and when it was first found. `ragpulse topics show ID` prints one "
        "topic with its example questions; `ragpulse topics export` writes every trace's "
        "topic as JSON lines.",
        epilog="examples:\n  ragpulse topics\n  ragpulse topics --since 24h --json\n"
        "  ragpulse topics show 3\n"
        "  ragpulse topics export --since 7d --output topics.jsonl",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--since", default="7d", metavar="DURATION", help="window ending now (default 7d)"
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="one JSON object: the window, its traces and the topics with their numbers",
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


@contextmanager
def _session(args: argparse.Namespace) -> Iterator[Any]:
    from sqlalchemy.orm import Session

    from collector.store.session import make_engine
    from ragpulse.store_check import require_migrated

    settings = load_settings(args.config)
    url = settings.database.url.get_secret_value()
    require_migrated(url)
    engine = make_engine(url)
    try:
        with Session(engine) as session:
            yield session
    finally:
        engine.dispose()


def _time(when: datetime) -> str:
    return when.isoformat()


def _numbers(volumes: dict[int | None, int], topic_id: int) -> tuple[int, float | None]:
    """(volume, share of all assigned traces of the window; None when there are none)."""
    total = sum(volumes.values())
    volume = volumes.get(topic_id, 0)
    return volume, (volume / total if total else None)


def _topic_json(topic: Any, volumes: dict[int | None, int], *, whole: bool) -> dict[str, Any]:
    volume, share = _numbers(volumes, topic.id)
    out: dict[str, Any] = {
        "id": topic.id,
        "label": topic.label,
        "keywords": {lang: list(words) for lang, words in topic.keywords.items()},
        "volume": volume,
        "share": share,
        "size": topic.size,
        "first_seen": _time(topic.first_seen),
        "last_seen": _time(topic.last_seen),
    }
    if whole:
        out |= {
            "active": topic.active,
            "examples": list(topic.examples),
            "model": topic.model,
            "method": topic.method,
            "params": dict(topic.params),
        }
    return out


def list_topics(args: argparse.Namespace) -> int:
    from collector.store.topics import load_topics, topic_volumes
    from ragpulse.time_window import window

    since, until = window(args.since, None)
    with _session(args) as session:
        topics = load_topics(session)
        volumes = topic_volumes(session, since)
    topics.sort(key=lambda t: (-volumes.get(t.id, 0), t.id))
    total = sum(volumes.values())
    if args.json:
        document = {
            "since": _time(since),
            "until": _time(until),
            "traces": total,
            "without_topic": volumes.get(None, 0),
            "topics": [_topic_json(t, volumes, whole=False) for t in topics],
        }
        print(json.dumps(document, ensure_ascii=False))
        return 0
    print(
        f"{len(topics)} topics over {total} traces with an embedding, "
        f"{since:%Y-%m-%d %H:%M} – {until:%Y-%m-%d %H:%M} UTC"
    )
    if not topics:
        print("  none yet (the `topics` job finds them: `ragpulse jobs run topics`)")
        return 0
    print(f"  {'id':>5s} {'volume':>7s} {'share':>6s} {'size':>5s}  {'first seen':11s}  label")
    for topic in topics:
        volume, share = _numbers(volumes, topic.id)
        label = topic.label
        if len(label) > LABEL_CHARS:
            label = label[: LABEL_CHARS - 1] + "…"
        shown = f"{share:.1%}" if share is not None else "-"
        print(
            f"  {topic.id:>5d} {volume:>7d} {shown:>6s} {topic.size:>5d}  "
            f"{topic.first_seen:%m-%d %H:%M}  {label}"
        )
    if volumes.get(None):
        print(f"  {'-':>5s} {volumes[None]:>7d} {volumes[None] / total:>6.1%}  (no topic near)")
    return 0


def show_topic(args: argparse.Namespace) -> int:
    from collector.store.topics import get_topic, topic_volumes
    from ragpulse.time_window import window

    since, _until = window(args.since, None)
    with _session(args) as session:
        topic = get_topic(session, args.topic_id)
        volumes = topic_volumes(session, since) if topic is not None else {}
    if topic is None:
        print(f"ragpulse topics: no topic {args.topic_id}", file=sys.stderr)
        return 1
    if args.show_json or args.json:  # `topics --json show ID` as well as `show ID --json`
        print(json.dumps(_topic_json(topic, volumes, whole=True), ensure_ascii=False))
        return 0
    volume, share = _numbers(volumes, topic.id)
    state = "active" if topic.active else "retired"
    print(f"topic {topic.id} ({state}): {topic.label}")
    for lang, words in sorted(topic.keywords.items()):
        print(f"  keywords ({lang}): {', '.join(words)}")
    shown = f"{share:.1%}" if share is not None else "-"
    print(f"  traces since {since:%Y-%m-%d %H:%M} UTC: {volume} ({shown} of those embedded)")
    print(f"  size in the last clustering: {topic.size} sampled questions")
    print(f"  first found {topic.first_seen:%Y-%m-%d %H:%M}, last {topic.last_seen:%Y-%m-%d %H:%M}")
    print(f"  clustering: {topic.method} on {topic.model}")
    print("  examples:")
    for example in topic.examples:
        print(f"    - {' '.join(example.split())}")
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
