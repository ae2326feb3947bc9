"""The documentation site's generated pages: references built from the code (settings,
command line, metrics, `/metrics` series, alert rules) and a runbook page per alert.

`python -m ragpulse.docs` writes them under `docs/` (`--check` only compares); the pages
are committed so the site builds offline with plain `mkdocs build`, and
`tests/ragpulse/test_docs_site.py` fails when one differs from what the code says now.
One module per page family; `site` lists them all. It runs from a checkout (it reads
`dashboards/` and writes `docs/`), so the wheel leaves it out.
"""
