"""`ragpulse sessions`, `ragpulse sessions show ID` and `ragpulse sessions export`.

Conversations as the `sessions` job closed them (issue 42): the closed sessions of a
window with their outcome (resolved, re-asks, escalated, abandoned), the worst first with
`--worst`; one session's turns in order with their scores and whether each was re-asked
or asked for a person; and every closed session as JSON lines for a BI tool or a notebook.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from typing import Any

QUESTION_CHARS = 70


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "sessions",
        help="conversations: closed sessions with their outcome (resolved, re-asked, escalated)",
        description="List the conversations the `sessions` job closed that started in the "
        "last SINCE (a session closes `sessions.idle` after its last turn, or at "
        "`sessions.max_turns`): session id, start, turns, whether it was resolved (no "
        "re-ask, no escalation, no negative feedback), its re-asks (answers followed by the "
        "question asked again in other words), escalation to a person and abandonment "
        "(ended right after a bad answer or a re-ask). `--worst` lists the worst first. "
        "`ragpulse sessions show ID` prints one session turn by turn; `ragpulse sessions "
        "export` writes every closed session as JSON lines.",
        epilog="examples:\n  ragpulse sessions --worst\n"
        "  ragpulse sessions --since 7d --limit 50 --json\n"
        "  ragpulse sessions show 7f3c-session\n"
        "  ragpulse sessions export --since 7d --output sessions.jsonl",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--since", default="24h", metavar="DURATION", help="window ending now (default 24h)"
    )
    parser.add_argument(
        "--worst",
        action="store_true",
        help="the worst first: unresolved, escalated, abandoned, most re-asks, longest",
    )
    parser.add_argument(
        "--limit", type=int, default=20, metavar="N", help="at most N sessions (default 20)"
    )
    parser.add_argument(
        "--json", action="store_true", help="one JSON object per line, as `export` writes them"
    )
    sub = parser.add_subparsers(dest="sessions_command", metavar="ACTION")
    show = sub.add_parser(
        "show",
        help="one session: its turns in order with their scores, re-asks and escalations",
        description="Print one session's turns in time order: when, the question, whether "
        "its answer was followed by a re-ask, whether it asked for a person, and the scores "
        "the other jobs stored for the trace; then the session's outcome (none while it "
        "is still open). Exit 1 when no trace has that session id.",
    )
    show.add_argument("session_id", metavar="ID")
    show.add_argument(
        "--json", action="store_true", dest="show_json", help="the session as one JSON object"
    )
    show.set_defaults(func=show_session)
    export = sub.add_parser(
        "export",
        help="every closed session as JSON lines (outcome and per-turn results)",
        description="Write one JSON line per session closed by the `sessions` job that "
        'started in the last SINCE, in start order: {"session_id", "started_at", '
        '"turns" (how many), "resolved", "re_asks", "escalated", "abandoned", '
        '"turns_to_resolution", "groups", "judged" ({"completeness", "frustration"} when '
        "the judge rated the session), "
        '"turn_outcomes": [{"trace_id", "re_asked", "escalation"}, ...]}.',
    )
    export.add_argument(
        "--since", default="7d", metavar="DURATION", help="window ending now (default 7d)"
    )
    export.add_argument(
        "--output", required=True, metavar="FILE.jsonl", help="the file to write (- for stdout)"
    )
    export.set_defaults(func=export_sessions)
    parser.set_defaults(func=list_sessions)


def _session(args: argparse.Namespace) -> Any:
    from ragpulse.store_check import migrated_session

    return migrated_session(args.config)


def session_json(view: Any) -> dict[str, Any]:
    """A closed session as one JSON object (`export`'s line)."""
    counted = [t for t in view.turns if t.counted]
    return {
        "session_id": view.session_id,
        "started_at": view.started.isoformat(),
        "turns": len(counted),
        "resolved": view.resolved,
        "re_asks": view.re_asks,
        "escalated": view.escalated,
        "abandoned": view.abandoned,
        "turns_to_resolution": view.turns_to_resolution,
        "groups": dict(view.groups),
        "judged": view.judged or None,
        "turn_outcomes": [
            {"trace_id": t.trace_id, "re_asked": t.re_asked, "escalation": t.escalation}
            for t in counted
        ],
    }


def _flags(view: Any) -> str:
    parts = ["resolved" if view.resolved else "unresolved"]
    if view.re_asks:
        parts.append(f"{view.re_asks} re-ask{'s' if view.re_asks > 1 else ''}")
    if view.escalated:
        parts.append("escalated")
    if view.abandoned:
        parts.append("abandoned")
    return ", ".join(parts)


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= QUESTION_CHARS else text[: QUESTION_CHARS - 1] + "…"


def list_sessions(args: argparse.Namespace) -> int:
    import heapq

    from collector.errors import UserError
    from collector.jobs.queries.sessions import closed_sessions
    from ragpulse.time_window import window

    if args.limit < 1:
        raise UserError("--limit: must be at least 1")
    since, until = window(args.since, None)
    seen = [0, 0]  # sessions, resolved

    def counted(views: Iterator[Any]) -> Iterator[Any]:
        for view in views:
            seen[0] += 1
            seen[1] += view.resolved
            yield view

    with _session(args) as session:
        views = counted(closed_sessions(session, since, until))
        # bounded: only the `limit` worst (or latest) are kept while reading
        if args.worst:
            shown = heapq.nsmallest(args.limit, views, key=lambda v: v.badness())
        else:
            shown = heapq.nlargest(args.limit, views, key=lambda v: v.started)
    total, resolved = seen
    if args.json:
        for view in shown:
            print(json.dumps(session_json(view), ensure_ascii=False))
        return 0
    rate = f", {resolved / total:.1%} resolved" if total else ""
    order = "worst first" if args.worst else "latest first"
    print(
        f"{total} closed sessions started {since:%Y-%m-%d %H:%M} – {until:%Y-%m-%d %H:%M} UTC"
        f"{rate} ({order}, at most {args.limit})"
    )
    if not shown:
        print("  none yet (the `sessions` job closes them: `ragpulse jobs run sessions`)")
        return 0
    for view in shown:
        first = view.turns[0].question if view.turns else ""
        print(
            f"  {view.session_id}  {view.started:%m-%d %H:%M}  {len(view.turns)} turns  "
            f"{_flags(view)}  — {_short(first)}"
        )
    return 0


def show_session(args: argparse.Namespace) -> int:
    from collector.jobs.queries.sessions import one_session

    with _session(args) as session:
        view, turns = one_session(session, args.session_id)
    if not turns:
        print(f"ragpulse sessions: no session {args.session_id!r}", file=sys.stderr)
        return 1
    if args.show_json or args.json:
        document: dict[str, Any] = {
            "session_id": args.session_id,
            "closed": view is not None,
            "outcome": session_json(view) if view is not None else None,
            "turns": [_turn_json(t, view) for t in turns],
        }
        print(json.dumps(document, ensure_ascii=False))
        return 0
    state = _flags(view) if view is not None else "open (not closed yet)"
    print(f"session {args.session_id}: {len(turns)} turns, {state}")
    by_id = {t.trace_id: t for t in view.turns} if view is not None else {}
    for i, trace in enumerate(turns, 1):
        shown = by_id.get(trace.trace_id)
        marks = []
        if shown is not None and shown.re_asked:
            marks.append("re-asked")
        if shown is not None and shown.escalation:
            marks.append("escalation")
        if view is not None and (shown is None or not shown.counted):
            marks.append("not counted")
        print(f"  {i:>3d}. {trace.timestamp:%Y-%m-%d %H:%M:%S}  {trace.trace_id}")
        print(f"       Q: {_short(trace.question)}")
        if marks:
            print(f"       {', '.join(marks)}")
        scores = shown.scores if shown is not None else {}
        if scores:
            print("       " + "  ".join(f"{k}={v:.3g}" for k, v in sorted(scores.items())))
    if view is not None:
        steps = view.turns_to_resolution
        print(
            f"  outcome: resolved={view.resolved} re_asks={view.re_asks} "
            f"escalated={view.escalated} abandoned={view.abandoned}"
            + (f" turns_to_resolution={steps}" if steps is not None else "")
        )
        if view.judged:
            judged = "  ".join(f"{k}={_judged(v)}" for k, v in sorted(view.judged.items()))
            print(f"  judged: {judged}")
    return 0


def _judged(value: Any) -> str:
    """A stored judged outcome for people: the number, else why there is none."""
    if isinstance(value, float | int):
        return f"{value:.3g}"
    if isinstance(value, dict):
        return str(value.get("skipped") or value.get("error") or value)
    return str(value)


def _turn_json(trace: Any, view: Any) -> dict[str, Any]:
    shown = {t.trace_id: t for t in view.turns}.get(trace.trace_id) if view else None
    return {
        "trace_id": trace.trace_id,
        "timestamp": trace.timestamp.isoformat(),
        "question": trace.question,
        "answer": trace.answer,
        "counted": shown is not None and shown.counted,
        "re_asked": shown.re_asked if shown is not None else None,
        "escalation": shown.escalation if shown is not None else None,
        "scores": dict(shown.scores) if shown is not None else {},
    }


def export_sessions(args: argparse.Namespace) -> int:
    from collector.jobs.queries.sessions import closed_sessions
    from ragpulse.time_window import window

    since, until = window(args.since, None)
    written = 0
    with _session(args) as session:
        out = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")  # noqa: SIM115
        try:
            for view in closed_sessions(session, since, until):
                out.write(json.dumps(session_json(view), ensure_ascii=False) + "\n")
                written += 1
        finally:
            if out is not sys.stdout:
                out.close()
    where = "stdout" if args.output == "-" else args.output
    print(f"ragpulse sessions: {written} sessions written to {where}", file=sys.stderr)
    return 0
