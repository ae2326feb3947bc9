"""Several consumer processes in one group: `ragpulse ingest --workers N`.

One Python process decodes and writes at most one core's worth of traces (the GIL), so on
PostgreSQL `--workers N` starts N `ragpulse ingest` processes in the same consumer group.
Kafka spreads the partitions over them; each process keeps its own at-least-once loop
(transaction first, offsets after), so a rebalance or a crash replays at most a batch,
which the idempotent writes absorb. This module only supervises: it starts the children
with the caller's settings, forwards SIGTERM/SIGINT, and sums their JSON summaries.
More workers than partitions leaves the extra ones idle.
"""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from types import FrameType

logger = logging.getLogger(__name__)

SUMMARY_KEYS = ("consumed", "stored", "duplicates", "feedback", "invalid", "sampled", "unstored")
EXIT_UNSTORED = 3
"""Exit code of `ragpulse ingest` that stopped with records it could not store (refused by
the database, or a batch still failing when stopped); its summary is printed all the same."""


class WorkerFailedError(RuntimeError):
    """A worker exited with an error or printed no summary."""


@dataclass(frozen=True)
class WorkerResult:
    index: int
    returncode: int
    summary: dict[str, int] | None


def cli_command(*args: str, config: str | None = None, log_level: str | None = None) -> list[str]:
    """`ragpulse [--config F] [--log-level L] ARGS...` run by this interpreter."""
    command = [sys.executable, "-m", "ragpulse.cli"]
    if config:
        command += ["--config", config]
    if log_level:
        command += ["--log-level", log_level]
    return [*command, *args]


def worker_command(
    until_idle_s: float, *, config: str | None = None, log_level: str | None = None
) -> list[str]:
    """The command line of one worker: `ragpulse ingest` with a single consumer."""
    args = ("ingest", "--until-idle", repr(until_idle_s), "--workers", "1")
    return cli_command(*args, config=config, log_level=log_level)


def sum_summaries(summaries: Sequence[dict[str, int]]) -> dict[str, int]:
    """Field-by-field sum of the workers' summaries (the keys of SPEC §5, in order)."""
    return {key: sum(int(s.get(key, 0)) for s in summaries) for key in SUMMARY_KEYS}


def run_workers(command: Sequence[str], count: int) -> list[WorkerResult]:
    """Start `count` copies of `command`, wait for all, return each exit code and summary.

    The children inherit the environment (so the same settings and consumer group) and
    stderr; each one's stdout must be its JSON summary. SIGTERM/SIGINT received meanwhile
    are passed on, so every worker finishes its batch and commits before exiting.
    """
    if count < 1:
        raise ValueError("count must be at least 1")
    processes: list[subprocess.Popen[bytes]] = []
    with _forwarding_signals(processes):
        for _ in range(count):
            processes.append(subprocess.Popen(list(command), stdout=subprocess.PIPE))
        outputs = _communicate_all(processes)
    results = [
        WorkerResult(i, p.returncode, _parse_summary(outputs[i])) for i, p in enumerate(processes)
    ]
    for r in results:
        logger.info("worker %d exited with %d: %s", r.index + 1, r.returncode, r.summary)
    return results


def _communicate_all(processes: Sequence[subprocess.Popen[bytes]]) -> list[bytes]:
    """Read every child's stdout to the end (one thread each, so none blocks on a pipe)."""
    outputs: list[bytes] = [b""] * len(processes)

    def read(i: int) -> None:
        out, _ = processes[i].communicate()
        outputs[i] = out or b""

    threads = [threading.Thread(target=read, args=(i,), daemon=True) for i in range(len(processes))]
    for thread in threads:
        thread.start()
    for thread in threads:
        # join with a timeout so the main thread keeps handling signals
        while thread.is_alive():
            thread.join(0.2)
    return outputs


def _parse_summary(out: bytes) -> dict[str, int] | None:
    for line in reversed(out.decode("utf-8", "replace").splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict) and all(isinstance(value.get(k), int) for k in SUMMARY_KEYS):
            return {k: int(value[k]) for k in SUMMARY_KEYS}
    return None


def combined_summary(results: Sequence[WorkerResult]) -> dict[str, int]:
    """The summed summary, or `WorkerFailedError` naming each worker that failed (a worker
    that exited with `EXIT_UNSTORED` and printed its summary did not fail)."""
    failed = [r for r in results if r.returncode not in (0, EXIT_UNSTORED) or r.summary is None]
    if failed:
        detail = ", ".join(
            f"worker {r.index + 1} exited with {r.returncode}"
            if r.returncode not in (0, EXIT_UNSTORED)
            else f"worker {r.index + 1} printed no summary"
            for r in failed
        )
        raise WorkerFailedError(f"{len(failed)} of {len(results)} workers failed: {detail}")
    return sum_summaries([r.summary for r in results if r.summary is not None])


@contextmanager
def _forwarding_signals(processes: list[subprocess.Popen[bytes]]) -> Iterator[None]:
    def forward(signum: int, _frame: FrameType | None) -> None:
        logger.info("%s: asking %d workers to stop", signal.strsignal(signum), len(processes))
        for process in processes:
            if process.poll() is None:
                process.send_signal(signum)

    previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    except BaseException:
        for process in processes:
            if process.poll() is None:
                process.terminate()
        raise
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
