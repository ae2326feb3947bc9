"""A runbook page per shipped alert (`dashboards/runbooks.py` holds what each says) and
the runbooks' index: what the alert means, its rules, how to confirm it with the CLI, its
common causes and how to silence it without hiding other problems."""

from __future__ import annotations

from collector.settings.severity import MEANING
from dashboards.runbooks import DOCS_URL, RUNBOOKS, Runbook
from ragpulse.docs.alerts_page import Rule, by_alert, rules
from ragpulse.docs.markdown import BANNER, code, table

INDEX = f"""# Runbooks

One page per alert ragpulse ships. Every rule carries a `runbook_url` annotation that
links to its page, so Alertmanager, Grafana and on-call tools show the link with the
alert. Prometheus annotations are static strings, so the address of this site is written
into the rule files: by default `{DOCS_URL}` (what `mkdocs serve` serves). Where the site is
hosted elsewhere, regenerate the rules with its address and ship those:

```sh
RAGPULSE_DOCS_URL=https://docs.example.org/ragpulse/ python dashboards/build.py
```

This rewrites `quality.yml` and the `runbook_url` lines of the hand-written
`operations.yml` and of the promtool tests. A new alert needs an entry in
`dashboards/runbooks.py` (what it means, how to confirm it, its causes, the labels that
scope a silence) and `python -m ragpulse.docs`: a test fails while an alert has no
runbook page or no `runbook_url`.

"""

SILENCE = """## Silence it safely

Silence only what you are working on, for as long as you work on it: {scope} Give it an
expiry and say why. amtool finds Alertmanager with `--alertmanager.url=http://HOST:9093`
or its config file (`~/.config/amtool/config.yml`).

```sh
{command}
```

The same matchers work in Alertmanager's UI (New silence) or its API. Check what a silence
would hide before creating it: `amtool alert query {matchers}`. Expire it when the work is
done: `amtool silence expire $(amtool silence query -q {matchers})`.
"""


def _matchers(book: Runbook) -> str:
    values = {label: f"<{label}>" for label in book.scope}
    return " ".join([f"alertname={book.alert}", *(f'{k}="{v}"' for k, v in values.items())])


def render_runbook(book: Runbook, alert_rules: list[Rule]) -> str:
    severities = "; ".join(
        f"**{s}** ({MEANING[s]})" if s in MEANING else f"**{s}**"
        for s in sorted({r.labels.get("severity", "") for r in alert_rules})
    )
    parts = [BANNER, f"# {book.alert}\n\n", f"Severity: {severities}.\n\n"]
    parts.append(f"## What it means\n\n{book.means}\n\n")
    description = alert_rules[0].annotations.get("description", "")
    if description:
        parts.append(f"The alert's own description (a template):\n\n> {code(description)}\n\n")
    parts.append("Its rules (details in [Alert rules](../reference/alerts.md)):\n\n")
    for rule in alert_rules:
        parts.append(f"```promql\n{rule.expr}\n```\n\n")
    parts.append("## Confirm it\n\n")
    if any("{" in command for command in book.confirm):
        parts.append(
            "Fill in the labels of the firing alert (shown in the notification) where a "
            "command names one in braces.\n\n"
        )
    parts.append("```sh\n" + "\n".join(book.confirm) + "\n```\n\n")
    parts.append("## Common causes\n\n")
    parts.append("".join(f"- {cause}\n" for cause in book.causes) + "\n")
    matchers = _matchers(book)
    command = (
        f"amtool silence add {matchers} \\\n"
        f'  --duration=2h --comment="<ticket>: <what you are doing>"'
    )
    if book.scope:
        labels = ", ".join(code(label) for label in book.scope)
        scope = (
            f"match the alert's name **and** the labels of this firing ({labels}). A "
            "silence on the alert name alone hides the same problem everywhere else."
        )
    else:
        scope = (
            "this alert fires once for the whole service, so its name is the only matcher "
            "and the silence hides the next outage too: keep it short."
        )
    parts.append(SILENCE.format(command=command, matchers=matchers, scope=scope))
    return "".join(parts)


def pages() -> dict[str, str]:
    """Page path under docs/ -> content: the index and every runbook."""
    grouped = by_alert(rules())
    missing = sorted(set(grouped) - set(RUNBOOKS))
    if missing:
        raise ValueError(f"alerts without a runbook in dashboards/runbooks.py: {missing}")
    rows = [
        [
            f"[{alert}]({alert}.md)",
            ", ".join(sorted({r.labels.get("severity", "") for r in grouped[alert]})),
            RUNBOOKS[alert].means,
        ]
        for alert in grouped
    ]
    out = {"runbooks/index.md": BANNER + INDEX + table(("alert", "severity", "means"), rows)}
    for alert, alert_rules in grouped.items():
        out[f"runbooks/{alert}.md"] = render_runbook(RUNBOOKS[alert], alert_rules)
    return out
