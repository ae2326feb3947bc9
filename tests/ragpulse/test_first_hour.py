"""A newcomer's first ten minutes (issue 39): `make demo` in one terminal, then every
command block of README.md and of the "start here" pages (docs/start/*.md), as written,
in another.

The demo is the real `ragpulse demo` the Makefile runs, started in a copy of the checkout
(a fresh clone's files; its `.venv` is the test's own virtual environment), on its
default ports, or free ones when they are taken, as it does for anyone. The commands are
parsed from the pages' ```sh blocks; each runs in a fresh `bash` whose PATH is a new
user's (no virtual environment on it), in that folder, after the lines of the same page
that set a terminal up (`. .venv/bin/activate`, `cd`, `export`), as a reader who pasted
the page into one terminal has them. Each must exit 0 without a traceback, and all of
them run within the demo's first ten minutes. What a test cannot run (the two set-up
commands themselves, servers that run until stopped, installs from the network, the
reader's own app) is listed in `SKIPPED`, with why; a listed command no page has any
more fails the test, so the list stays reviewed.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from ragpulse.demo.prometheus import find_prometheus

ROOT = Path(__file__).resolve().parents[2]
PAGES = (ROOT / "README.md", *sorted((ROOT / "docs" / "start").glob("*.md")))
FENCE = re.compile(r"^```(?:sh|bash|shell)\s*$")

SKIPPED = {
    "make demo": "the demo itself: this test starts it (`ragpulse demo`, what the Makefile runs)",
    "make test": "the whole test suite, this test among it",
    ".venv/bin/mkdocs serve": "a server that runs until stopped (test_docs_site builds the site)",
    "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu": (
        "an install from the network (what `make` does)"
    ),
    "pip install -e '.[dev,embedded,instrumentation]'": (
        "an install from the network (what `make` does)"
    ),
    "RAGPULSE_RECEIVER__HOST=0.0.0.0 ragpulse receive": (
        "a server that runs until stopped (the demo runs one)"
    ),
    "OTEL_EXPORTER_OTLP_ENDPOINT=http://ragpulse-receiver:4318 python app.py": "the reader's app",
}
SETUP = re.compile(r"^(\.|source|cd|export)\s")
"""Lines that set a terminal up: they carry over to the page's later commands."""
FIRST_TEN_MINUTES = 600.0
NOT_IN_A_CLONE = (".git", ".venv", ".demo", "*.db", "*cache*", "site", "__pycache__", "*.html")


@dataclass(frozen=True)
class Command:
    page: str
    line: int
    text: str


def _strip_comment(line: str) -> str:
    """The line without a trailing shell comment (a `#` after a blank, outside quotes)."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def page_commands(page: Path) -> list[Command]:
    """The commands of a page's shell blocks, in order (continued lines joined)."""
    out: list[Command] = []
    inside = False
    pending = ""
    start = 0
    for number, raw in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if not inside:
            inside = bool(FENCE.match(raw.strip()))
            continue
        if raw.strip().startswith("```"):
            inside = False
            continue
        text = _strip_comment(raw)
        if not text and not pending:
            continue
        if not pending:
            start = number
        if text.endswith("\\"):
            pending += text[:-1] + " "
            continue
        out.append(Command(page.relative_to(ROOT).as_posix(), start, (pending + text).strip()))
        pending = ""
    return out


def test_the_pages_blocks_are_parsed_and_the_skip_list_is_current() -> None:
    """Cheap checks of the parser and the list, without a demo."""
    found = [c for page in PAGES for c in page_commands(page)]
    texts = {c.text for c in found}
    assert "make demo" in texts and "make test" in texts
    assert any(c.page == "README.md" and c.text.startswith("ragpulse explain") for c in found)
    assert not set(SKIPPED) - texts, "SKIPPED lists commands no page has any more"
    assert _strip_comment("a '#b' # c") == "a '#b'"


def _clone(target: Path) -> Path:
    """A copy of the checkout's tracked files (what a fresh clone holds: no `.demo/` of an
    earlier demo) whose `.venv` is the test's own virtual environment."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=False)
    if listed.returncode == 0:
        for name in listed.stdout.decode().split("\0"):
            source = ROOT / name
            if name and source.is_file():
                (target / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target / name)
    else:  # not a git checkout (an unpacked archive): everything but what runs leave
        shutil.copytree(ROOT, target, ignore=shutil.ignore_patterns(*NOT_IN_A_CLONE))
    target.mkdir(exist_ok=True)
    (target / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    return target


def _new_user_env() -> dict[str, str]:
    """The environment of a new user's terminal: no virtual environment on PATH, no
    ragpulse settings. PYTHONPATH is kept (a worktree sharing another checkout's venv
    sets it; a fresh clone has none)."""
    prefixes = (sys.prefix, os.environ.get("VIRTUAL_ENV") or sys.prefix)
    path = [
        p
        for p in os.environ.get("PATH", os.defpath).split(os.pathsep)
        if p and not any(Path(p).resolve().is_relative_to(Path(x).resolve()) for x in prefixes)
    ]
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("RAGPULSE_") and k != "VIRTUAL_ENV"
    }
    env["PATH"] = os.pathsep.join(path)
    env.pop("PYTHONHOME", None)
    return env


def _wait_for(path: Path, pattern: str, count: int, deadline: float) -> str:
    """The file's text once `pattern` occurs `count` times in it."""
    while True:
        text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
        if len(re.findall(pattern, text, re.M)) >= count:
            return text
        if time.monotonic() > deadline:
            raise AssertionError(f"waited in vain for {pattern!r} x{count}:\n{text[-3000:]}")
        time.sleep(0.5)


def _jobs_ran_twice(log: Path, deadline: float) -> None:
    """Wait until every evaluation job has finished its second run: the traffic of the
    demo's first minute is scored (a newcomer reading the README takes that long)."""
    run = r"job (\S+): (?:ok|skipped)"
    while True:
        text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
        runs: dict[str, int] = {}
        for name in re.findall(run, text):
            runs[name] = runs.get(name, 0) + 1
        if runs and min(runs.values()) >= 2:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"the jobs did not run twice: {runs}\n{text[-3000:]}")
        time.sleep(1)


def _history_claims(output: str, age_s: float) -> list[str]:
    """The "N min of history" an output claims beyond the demo's age (the demo used to
    stamp its traffic ten minutes back: "10 min of history" a minute after start)."""
    wrong = []
    claims = r"^\S+: (\d+(?:\.\d+)?) ?(s|min|h|d) of history"  # "hit_rate@5: 2 min of history"
    for amount, unit in re.findall(claims, output, re.M):
        seconds = float(amount) * {"s": 1, "min": 60, "h": 3600, "d": 86400}[unit]
        if seconds > age_s:
            wrong.append(f"{amount} {unit} of history claimed {age_s:.0f} s after the start")
    return wrong


def _a_stored_trace(database: Path) -> str:
    with sqlite3.connect(database) as conn:
        row = conn.execute(
            "SELECT trace_id FROM traces WHERE not_request IS NULL ORDER BY timestamp DESC"
        ).fetchone()
    assert row is not None, "the demo stored no trace"
    return str(row[0])


@pytest.mark.slow
@pytest.mark.timeout(660)
def test_the_readme_and_start_pages_commands_work_as_written_in_the_demos_first_minutes(
    tmp_path: Path,
) -> None:
    if find_prometheus() is None:
        pytest.skip("the `prometheus` binary is not installed (`ragpulse report` needs it)")
    if sys.prefix == sys.base_prefix:
        pytest.skip("the tests run outside a virtual environment: no .venv to activate")
    clone = _clone(tmp_path / "clone")
    env = _new_user_env()
    bare = subprocess.run(
        ["bash", "-c", "command -v ragpulse"], cwd=clone, env=env, capture_output=True
    )
    assert bare.returncode != 0, "`ragpulse` is on a new user's PATH: the test proves nothing"

    out, err = clone / "demo.out", clone / "demo.err"
    started = time.monotonic()
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        demo = subprocess.Popen(
            [str(clone / ".venv" / "bin" / "ragpulse"), "demo"],  # the Makefile's command
            cwd=clone,
            env=env,
            stdout=stdout,
            stderr=stderr,
        )
    failures: list[str] = []
    ran: list[str] = []
    history: list[str] = []
    try:
        banner = _wait_for(out, r"Ctrl-C to stop", 1, started + 120)
        assert "slos" in banner and "ragpulse slo check" in banner, banner
        prometheus = re.search(r"^  prometheus (http://\S+)", banner, re.M)
        assert prometheus is not None, banner
        _jobs_ran_twice(err, started + 240)
        # placeholders a reader fills in: the values the demo has
        fill = {
            "TRACE_ID": _a_stored_trace(clone / ".demo" / "ragpulse.db"),
            "http://127.0.0.1:9090": prometheus.group(1),
        }
        for page in PAGES:
            setup: list[str] = []
            for command in page_commands(page):
                if command.text in SKIPPED:
                    continue
                text = command.text
                for placeholder, value in fill.items():
                    text = text.replace(placeholder, value)
                if SETUP.match(text):
                    setup.append(text)
                    continue
                began = time.monotonic()
                done = subprocess.run(
                    ["bash", "-c", "\n".join([*setup, text])],
                    cwd=clone,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=180,
                )
                took = time.monotonic() - began
                ran.append(f"{command.page}:{command.line} ({took:.0f} s): {text}")
                print(ran[-1], done.stdout[-1500:], done.stderr[-1500:], sep="\n")
                both = done.stdout + done.stderr
                if done.returncode != 0 or "Traceback" in both:
                    failures.append(
                        f"{command.page}:{command.line}: `{command.text}` exited "
                        f"{done.returncode}\n{both[-2500:]}"
                    )
                history.extend(_history_claims(done.stdout, time.monotonic() - started))
        elapsed = time.monotonic() - started
    finally:
        demo.send_signal(signal.SIGINT)
        try:
            demo.wait(60)
        except subprocess.TimeoutExpired:
            demo.kill()
            demo.wait(10)
    assert not failures, "\n\n".join(failures)
    assert not history, history
    assert len(ran) >= 6, ran
    assert elapsed < FIRST_TEN_MINUTES, f"{elapsed:.0f} s: not within the first ten minutes"
    assert demo.returncode == 0, err.read_text(errors="replace")[-3000:]
