"""Keeps a stand-alone exporter's results current.

With `--role exporter` the jobs run in another process, which writes `metric_results`
but cannot reach this process's memory. `ResultsRefresher` reloads the rows written since
its previous pass every `interval_s` on a background thread, and renders the quality
families right away, so scrapes still never touch the database. A failed pass is logged
and counted, and the next one tries again.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from exporters.quality import ResultsCache

logger = logging.getLogger(__name__)


class ResultsRefresher:
    """Background reloads of `cache` from the database; `start()` / `stop()`."""

    def __init__(
        self,
        cache: ResultsCache,
        session_factory: sessionmaker[Session],
        interval_s: float,
        collector: Any = None,
        after: Callable[[], None] | None = None,
    ) -> None:
        """`after`: called after every pass (the series made from the results)."""
        if interval_s <= 0:
            raise ValueError("interval_s must be positive")
        self.cache = cache
        self.interval_s = interval_s
        self.failures = 0
        self._sessions = session_factory
        self._collector = collector
        self._after = after
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def refresh(self) -> int:
        """One pass: load what is new, render if anything changed; returns the points loaded."""
        with self._sessions() as session:
            loaded = self.cache.load_latest(session)
        if loaded and self._collector is not None:
            self._collector.prerender()
        if self._after is not None:
            self._after()
        return loaded

    def start(self) -> ResultsRefresher:
        self._thread = threading.Thread(
            target=self._loop, name="ragpulse-results-refresh", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.refresh()
            except Exception:
                self.failures += 1
                logger.exception("could not reload the latest metric results")
