"""The wiring of `ragpulse run` (and `demo`, `ingest`): database, consumer, background parts.

`Service` owns the engine, the Prometheus registry the consumer counts on, the stop event
and a list of background components (anything with `start()` / `stop()`: the scheduler,
the `/metrics` server). The consumer runs on the calling thread; components start before
it and stop after it, in reverse order. SIGTERM/SIGINT set the stop event: the batch in
hand is stored and committed, the consumer leaves its group, and `run` returns.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any, Protocol

from prometheus_client import CollectorRegistry
from sqlalchemy import Engine

from collector.ingest.kafka.client import make_kafka_consumer
from collector.ingest.kafka.consumer import TraceConsumer
from collector.ingest.kafka.stats import ConsumerStats
from collector.ingest.pipeline import BatchResult, Ingestor
from collector.settings import ConfigError, KafkaSettings, Settings
from collector.store.session import make_engine, make_session_factory
from ragpulse.gc_tuning import consumer_gc

logger = logging.getLogger(__name__)


class StartupError(RuntimeError):
    """A part the service needs (database, Kafka) cannot be reached at start."""


class Component(Protocol):
    """A background part of the service, started before the consumer and stopped after."""

    def start(self) -> Any: ...

    def stop(self) -> None: ...


def prepare_database(url: str, *, migrate: bool) -> None:
    """Migrate when asked to (or for SQLite, where it is cheap and local); otherwise check
    that the schema is at the newest revision and raise `ConfigError` if it is not."""
    from sqlalchemy.exc import OperationalError

    from migrations.runner import current_heads, database_heads, upgrade

    try:
        if migrate or url.startswith("sqlite"):
            upgrade(url)
            return
        current = database_heads(url)
    except OperationalError as exc:
        from ragpulse.store_check import unusable

        raise StartupError(unusable(url, exc)) from exc
    if current != set(current_heads()):
        raise ConfigError(
            f"the database schema is not current (at {sorted(current) or 'nothing'}, "
            f"need {list(current_heads())}): run `ragpulse migrate` or pass --migrate"
        )


class Service:
    """Consumer + components over one database and one Prometheus registry."""

    def __init__(
        self,
        settings: Settings,
        *,
        registry: CollectorRegistry | None = None,
        consumer_factory: Callable[[KafkaSettings], Any] = make_kafka_consumer,
    ) -> None:
        self.settings = settings
        self.registry = registry if registry is not None else CollectorRegistry()
        self.stop_event = threading.Event()
        self.stats = ConsumerStats(self.registry)
        self.engine: Engine = make_engine(
            settings.database.url.get_secret_value(),
            echo=settings.database.echo,
            pool_size=settings.database.pool_size,
        )
        self.session_factory = make_session_factory(self.engine)
        self.components: list[Component] = []
        self.consume = True
        """False for `ragpulse run --role scheduler|exporter`: no Kafka consumer is run."""
        self.consumer = TraceConsumer(
            settings.kafka,
            self.session_factory,
            Ingestor(settings),
            self.stats,
            consumer_factory=consumer_factory,
        )

    def add(self, component: Component) -> None:
        self.components.append(component)

    def request_stop(self) -> None:
        self.stop_event.set()

    def install_signal_handlers(self) -> None:
        """SIGTERM and SIGINT request a graceful stop (main thread only)."""

        def handler(signum: int, _frame: FrameType | None) -> None:
            if self.stop_event.is_set():
                logger.warning("second %s: still finishing the batch", signal.strsignal(signum))
            else:
                logger.info("%s: stopping after the current batch", signal.strsignal(signum))
            self.stop_event.set()

        signal.signal(signal.SIGTERM, handler)
        signal.signal(signal.SIGINT, handler)

    def run(self, idle_timeout_s: float | None = None) -> BatchResult:
        """Start the components, consume until stopped (or idle), stop everything."""
        started: list[Component] = []
        try:
            for component in self.components:
                component.start()
                started.append(component)
            if not self.consume:
                # Roles without the consumer (scheduler/exporter) serve until stopped.
                self.stop_event.wait(idle_timeout_s)
                return BatchResult()
            with consumer_gc():
                return self.consumer.run(self.stop_event, idle_timeout_s=idle_timeout_s)
        finally:
            for component in reversed(started):
                try:
                    component.stop()
                except Exception:
                    logger.exception("stopping %r failed", component)
            self.engine.dispose()
