"""The report's conversations section: did the users get what they came for?

One row of rates over the report's window (sessions resolved, re-asked, escalated to a
person, abandoned, answers followed by a re-ask), each with its 95% interval and counts,
the mean turns to resolution, then the worst sessions (unresolved: escalated, abandoned,
most re-asks first) with their first question and the command that shows them. Made
from `collector.jobs.queries.session_overview`; the HTML only here.
"""

from __future__ import annotations

from html import escape

from collector.jobs.queries.session_overview import Mean, SessionOverview, Share
from collector.jobs.queries.sessions import SessionView

QUESTION_CHARS = 90
CSS = """
.conv-row { display: flex; flex-wrap: wrap; gap: 8px; margin: 6px 0 10px; }
.conv-tile { background: #fff; border: 1px solid var(--line); border-radius: 6px;
  padding: 6px 10px; min-width: 150px; }
.conv-tile .name { color: var(--muted); font-size: 11px; }
.conv-tile .value { font-size: 20px; font-weight: 600; }
.conv-tile .ci { color: var(--muted); font-size: 11px; }
table.sessions { border-collapse: collapse; width: 100%; font-size: 12px; background: #fff; }
table.sessions th { text-align: left; color: var(--muted); font-weight: 600; padding: 2px 6px;
  border-bottom: 1px solid var(--line); }
table.sessions td { padding: 3px 6px; border-bottom: 1px solid #eaeef2; }
table.sessions td.num, table.sessions th.num { text-align: right; white-space: nowrap; }
"""


def _rate(value: float) -> str:
    """A percentage: one decimal below 10% (a 0.4% bound is not 0%)."""
    return f"{value:.1%}" if 0 < value < 0.1 else f"{value:.0%}"


def _tile(name: str, share: Share, of: str, key: str) -> str:
    value = share.value
    if value is None:
        shown, ci = "–", f"no {of}"
    else:
        shown = _rate(value)
        ci = f"[{_rate(share.lower)}, {_rate(share.upper)}] · {share.count} of {share.n} {of}"
    return (
        f'<div class="conv-tile" data-metric="{key}"><div class="name">{escape(name)}</div>'
        f'<div class="value">{shown}</div><div class="ci">{escape(ci)}</div></div>'
    )


def _mean_tile(mean: Mean) -> str:
    if mean.value is None or mean.lower is None or mean.upper is None:
        shown, ci = "–", "no resolved session"
    else:
        shown = f"{mean.value:.1f}"
        ci = f"[{mean.lower:.1f}, {mean.upper:.1f}] · {mean.n} resolved sessions"
    return (
        '<div class="conv-tile" data-metric="turns_to_resolution">'
        '<div class="name">turns to resolution</div>'
        f'<div class="value">{shown}</div><div class="ci">{escape(ci)}</div></div>'
    )


def rates_row(seen: SessionOverview) -> str:
    """The row of rates with their intervals."""
    return (
        '<div class="conv-row">'
        + _tile("resolved", seen.resolved, "sessions", "session_resolved")
        + _tile("re-asked", seen.re_asked, "sessions", "session_re_asked")
        + _tile("escalated to a person", seen.escalated, "sessions", "session_escalated")
        + _tile("abandoned", seen.abandoned, "sessions", "session_abandoned")
        + _tile("answers re-asked", seen.turns_re_asked, "answers", "turn_re_asked")
        + _mean_tile(seen.turns_to_resolution)
        + "</div>"
    )


def _question(view: SessionView) -> str:
    text = " ".join((view.turns[0].question if view.turns else "").split())
    return text if len(text) <= QUESTION_CHARS else text[: QUESTION_CHARS - 1] + "…"


def _what(view: SessionView) -> str:
    parts = []
    if view.escalated:
        parts.append("asked for a person")
    if view.re_asks:
        parts.append(f"{view.re_asks} re-ask{'s' if view.re_asks > 1 else ''}")
    if view.abandoned:
        parts.append("abandoned")
    return ", ".join(parts) or "not resolved (negative feedback)"


def worst_table(seen: SessionOverview) -> str:
    if not seen.worst:
        return '<p class="meta">No unresolved session in the window.</p>'
    rows = []
    for view in seen.worst:
        tenant = str(view.groups.get("tenant", "")) if view.groups else ""
        rows.append(
            f'<tr data-session="{escape(view.session_id)}">'
            f"<td><code>{escape(view.session_id)}</code></td>"
            f"<td>{escape(tenant)}</td>"
            f'<td class="num">{view.counted_turns}</td>'
            f"<td>{escape(_what(view))}</td><td>{escape(_question(view))}</td></tr>"
        )
    return (
        '<table class="sessions"><tr><th>session</th><th>tenant</th>'
        '<th class="num">turns</th><th>what went wrong</th><th>first question</th></tr>'
        + "".join(rows)
        + "</table>"
        + '<p class="meta">One session turn by turn: <code>ragpulse sessions show ID</code>; '
        "all of them: <code>ragpulse sessions --worst</code>.</p>"
    )


def conversations_section(seen: SessionOverview) -> str:
    """The section's HTML (an explanation instead when no session closed in the window)."""
    when = f"{seen.since:%Y-%m-%d %H:%M} – {seen.until:%Y-%m-%d %H:%M} UTC"
    head = (
        f"<style>{CSS}</style>"
        '<h2 class="dashboard" id="conversations">Conversations</h2>'
        f'<p class="meta">Did the users get what they came for, {when}: {seen.sessions} '
        "closed sessions. Resolved: no re-ask in other words, no request for a person, no "
        "negative feedback; abandoned: the session ended right after a bad answer or a "
        "re-ask. 95% intervals in brackets.</p>"
    )
    if not seen.sessions:
        return head + (
            '<p class="meta">No closed session in the window: the sessions job closes the '
            "traces sharing a session_id once they are idle for sessions.idle (5 min).</p>"
        )
    return (
        head + rates_row(seen) + '<h3 id="worst-sessions">Worst sessions</h3>' + worst_table(seen)
    )
