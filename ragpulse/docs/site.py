"""Every generated page of the documentation site, and the command that writes them
(`python -m ragpulse.docs`) or checks them (`--check`, exit 1 listing stale pages)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ragpulse.docs import (
    alerts_page,
    attributes_page,
    cli_page,
    metrics_page,
    runbook_pages,
    series_page,
    settings_page,
)

DOCS = Path(__file__).resolve().parents[2] / "docs"


def pages(docs: Path = DOCS) -> dict[str, str]:
    """Page path under docs/ -> its content, as the code says now (a hand-written page
    with a generated part: the page on disk with that part regenerated)."""
    attributes = (docs / attributes_page.PAGE).read_text(encoding="utf-8")
    out = {
        attributes_page.PAGE: attributes_page.render(attributes),
        "reference/settings.md": settings_page.render(),
        "reference/cli.md": cli_page.render(),
        "reference/metrics.md": metrics_page.render(),
        "reference/series.md": series_page.render(),
        "reference/alerts.md": alerts_page.render(),
    }
    out.update(runbook_pages.pages())
    return out


def stale(docs: Path = DOCS) -> list[str]:
    """Generated pages missing or different on disk, and runbook pages of no alert."""
    wanted = pages(docs)
    out = [
        name
        for name, text in wanted.items()
        if not (docs / name).is_file() or (docs / name).read_text(encoding="utf-8") != text
    ]
    out += [
        str(path.relative_to(docs))
        for path in sorted((docs / "runbooks").glob("*.md"))
        if str(path.relative_to(docs)) not in wanted
    ]
    return out


def write(docs: Path = DOCS) -> None:
    """Write every generated page; remove runbook pages of alerts no longer shipped."""
    wanted = pages(docs)
    for path in (docs / "runbooks").glob("*.md"):
        if str(path.relative_to(docs)) not in wanted:
            path.unlink()
    for name, text in wanted.items():
        (docs / name).parent.mkdir(parents=True, exist_ok=True)
        (docs / name).write_text(text, encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ragpulse.docs",
        description="Write the documentation site's generated pages under docs/.",
    )
    parser.add_argument("--check", action="store_true", help="only report stale pages")
    args = parser.parse_args(argv)
    if args.check:
        out_of_date = stale()
        for name in out_of_date:
            print(f"stale: docs/{name}", file=sys.stderr)
        return 1 if out_of_date else 0
    write()
    return 0
