"""An offline run recorded in the `runs` table, when the configured database exists and
is migrated (a run is never the reason a database gets created)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from evaluators.aggregate import Aggregate

logger = logging.getLogger(__name__)


def combined_signature(aggregates: Iterable[Aggregate]) -> str:
    """Distinct signatures of the run's metrics, joined (fits the runs.signature column)."""
    seen = dict.fromkeys(str(a.signature) for a in aggregates)
    return " ; ".join(seen)[:512]


def usable_database(url: str) -> bool:
    """True when the database exists and is migrated (has the `runs` table).

    A SQLite file that does not exist is not created just to record a run.
    """
    from sqlalchemy import inspect
    from sqlalchemy.engine import make_url

    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        db = parsed.database
        if not db or db == ":memory:" or not Path(db).exists():
            return False
    from collector.store.session import make_engine

    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            return bool(inspect(conn).has_table("runs"))
    except Exception:
        logger.info(
            "database %s is not reachable; the run is not recorded", parsed.render_as_string()
        )
        return False
    finally:
        engine.dispose()


class RunRecorder:
    """Writes one `runs` row: inserted as running, finished as succeeded/failed."""

    def __init__(
        self, session_factory: Any, dataset: str, metrics: Sequence[str], config: dict[str, Any]
    ):
        from collector.store.models import Run

        self._factory = session_factory
        with session_factory() as session:
            run = Run(
                kind="evaluate",
                status="running",
                dataset=dataset,
                metrics=list(metrics),
                config=config,
            )
            session.add(run)
            session.commit()
            self.run_id = run.id

    def finish(self, status: str, aggregate: dict[str, Any] | None, signature: str | None) -> None:
        from collector.store.models import Run, utcnow

        with self._factory() as session:
            run = session.get(Run, self.run_id)
            if run is None:
                return
            run.status = status
            run.finished_at = utcnow()
            run.aggregate = aggregate
            run.signature = signature
            session.commit()
