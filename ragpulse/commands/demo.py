"""`ragpulse demo`: everything embedded — broker, SQLite, live sample traffic, the service."""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from collector.settings import Settings, load_settings
from ragpulse.demo import handoff

logger = logging.getLogger(__name__)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="run everything embedded: broker, SQLite, sample traffic, the service, /metrics",
        description="Start the embedded Kafka-compatible broker, a SQLite database under "
        "--dir (migrated), a producer replaying the bundled sample traffic (Russian and "
        "English RAG traces of three tenants, feedback, OTLP spans and a few malformed "
        "messages, with fresh ids and timestamps every round), the OTLP/HTTP receiver "
        "(`ragpulse receive`) with apps instrumented with the OpenTelemetry SDK sending about "
        "a fifth of the traces through it, and the service consuming "
        "it, running the evaluation jobs and serving /metrics. Ctrl-C stops everything "
        "cleanly. The broker keeps nothing after it stops; "
        "the database stays in --dir. When the `prometheus` binary is installed, a "
        "Prometheus with the shipped alert rules scrapes /metrics (data under --dir) and "
        "`ragpulse report` draws the Grafana dashboards from it into one HTML page.",
    )
    parser.add_argument(
        "--dir", default=".demo", help="directory for the database and logs (default: .demo)"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=9092,
        help="broker port; if it is taken a free one is used (default: %(default)s)",
    )
    parser.add_argument(
        "--rate", type=float, default=20.0, help="sample messages per second (default: 20)"
    )
    parser.add_argument(
        "--partitions", type=int, default=3, help="partitions per topic (default: 3)"
    )
    parser.add_argument(
        "--prometheus-port",
        type=int,
        default=9090,
        help="port of the demo's Prometheus (started when the `prometheus` binary is "
        "installed); if it is taken a free one is used (default: %(default)s)",
    )
    parser.add_argument(
        "--no-prometheus",
        action="store_true",
        help="do not start Prometheus even when it is installed",
    )
    parser.add_argument(
        "--judge",
        choices=["off", "local"],
        default="off",
        help="the LLM judge of the judge metrics (faithfulness, relevance, ...): off (the "
        "default, unless RAGPULSE_JUDGE__MODELS configures one) or local, a SmolLM2-135M "
        "served by llama.cpp on this machine (`make demo JUDGE=local` installs it once; slow "
        "on a laptop, and a tiny model: the numbers show the pipeline, not a good judge)",
    )
    parser.set_defaults(func=run)


EXAMPLE_SLOS = Path(__file__).resolve().parents[2] / "examples" / "slo.yaml"
"""The OpenSLO file behind the shipped SLO rules and dashboard: the demo records its events."""


DEMO_TOPICS: dict[str, Any] = {
    # first topics two minutes in (the `ux` job has embedded a minute of traffic by then),
    # and found again as often, so a fresh demo shows them quickly
    "recluster_every": "2m",
    # The demo repeats 113 phrasings of 21 intents: with the default 5,000 rows and a
    # minimum of 10, every phrasing repeated ten times would be a topic of its own. 1,200
    # rows hold ~10 copies of a phrasing and 50-67 questions of an intent.
    "sample_size": 1200,
    "min_topic_size": 25,
    # every one of the demo's ~21 topics gets series (the default keeps the 10 largest),
    # so the topics dashboard shows the planted knowledge gaps too
    "series": 25,
}
"""The demo's topic settings, where the user set none (see `demo_settings`)."""


def _demo_topics(base: Settings) -> dict[str, Any]:
    """The embeddings and topics settings the demo's topics need, the user's kept: the
    questions' vectors stored (SQLite keeps none by default) and `DEMO_TOPICS`."""
    update: dict[str, Any] = {}
    if base.embeddings.persist is None:
        update["embeddings"] = base.embeddings.model_copy(update={"persist": True})
    chosen = base.topics.model_fields_set
    topics = {k: v for k, v in DEMO_TOPICS.items() if k not in chosen}
    if topics:
        update["topics"] = base.topics.model_copy(update=topics)
    return update


def demo_settings(base: Settings, database_url: str, bootstrap: str) -> Settings:
    """The user's settings pointed at the embedded parts (see collector/ingest/kafka/broker.py for
    how the embedded broker treats group timeouts), storing the questions' vectors and
    finding topics soon after start (`_demo_topics`)."""
    kafka = base.kafka.model_copy(
        update={
            "bootstrap_servers": [bootstrap],
            "topics": ["rag.traces", "rag.feedback", "otlp_spans"],
            "feedback_topic": "rag.feedback",
            "otlp_topic": "otlp_spans",
            "otlp_encoding": "otlp_proto",
            # The demo's broker is fresh on every start, so no dead member can hold a
            # join for long; leave room for batches slowed by the evaluation jobs.
            "max_poll_interval_ms": 30_000,
            "session_timeout_ms": 10_000,
        }
    )
    database = base.database.model_copy(update={"url": SecretStr(database_url)})
    update: dict[str, Any] = {"kafka": kafka, "database": database, **_demo_topics(base)}
    if not base.slo.specs() and EXAMPLE_SLOS.is_file():
        # the SLOs the shipped SLO rules and dashboard are built from (a source checkout)
        update["slo"] = base.slo.model_copy(update={"openslo_file": EXAMPLE_SLOS})
    return base.model_copy(update=update)


def handoff_settings(settings: Settings) -> dict[str, Any]:
    """What other commands need of the demo's settings (a `--config` file's content)."""
    kafka = settings.kafka
    out: dict[str, Any] = {
        "database": {"url": settings.database.url.get_secret_value()},
        "kafka": {
            "bootstrap_servers": list(kafka.bootstrap_servers),
            "topics": list(kafka.topics),
            "feedback_topic": kafka.feedback_topic,
            "otlp_topic": kafka.otlp_topic,
            "otlp_encoding": kafka.otlp_encoding,
            "otlp_logs_topic": kafka.otlp_logs_topic,
        },
        "exporter": {"host": settings.exporter.host, "port": settings.exporter.port},
        "receiver": {"host": settings.receiver.host, "port": settings.receiver.port},
    }
    # the demo's topics as `ragpulse jobs run topics` in a second terminal should find them
    out["embeddings"] = {"persist": settings.embeddings.persist}
    out["topics"] = settings.topics.model_dump(mode="json")
    slo = _slo_handoff(settings)
    if slo:
        out["slo"] = slo
    if settings.judge.models:
        out["judge"] = {"models": list(settings.judge.models)}
        if settings.judge.api_base:
            out["judge"]["api_base"] = settings.judge.api_base
    return out


def _slo_handoff(settings: Settings) -> dict[str, Any]:
    """The demo's SLOs as settings, so `ragpulse slo check` and the report see the SLOs
    whose alerts the demo's Prometheus evaluates."""
    slo = settings.slo
    out: dict[str, Any] = {}
    if slo.openslo_file is not None:
        out["openslo_file"] = str(slo.openslo_file.resolve())
    if slo.objectives:
        out["objectives"] = [o.model_dump(mode="json") for o in slo.objectives]
    return out


def slo_line(settings: Settings, prometheus: bool) -> str | None:
    """The start-up line naming the demo's SLOs, where they come from and where their
    alerts fire (None: no SLO)."""
    specs = settings.slo.specs()
    if not specs:
        return None
    names = ", ".join(spec.name for spec in specs)
    source = settings.slo.openslo_file
    where = f" from {source}" if source is not None else ""
    alerts = "in the Prometheus above" if prometheus else "with Prometheus (not running)"
    return (
        f"  slos       {len(specs)} quality SLO{'s' if len(specs) > 1 else ''}{where} "
        f"({names}):\n"
        f"             events on /metrics, burn-rate alerts {alerts}; "
        "`ragpulse slo check` lists them"
    )


def path_line(cwd: Path) -> str | None:
    """How a second terminal gets `ragpulse` when the demo was started without it on PATH
    (`make demo` runs `.venv/bin/ragpulse`); None when it is on PATH already."""
    import shutil

    if shutil.which("ragpulse") is not None or sys.prefix == sys.base_prefix:
        return None
    activate = Path(sys.prefix) / "bin" / "activate"
    shown = str(activate)
    if activate.is_relative_to(cwd):
        shown = activate.relative_to(cwd).as_posix()
        shown = shown if shown.startswith(".") else f"./{shown}"
    return (
        f"  commands   in a second terminal in this folder, first `. {shown}` (it puts "
        "`ragpulse` on that terminal's PATH), then e.g. `ragpulse slo check`"
    )


def with_local_judge(settings: Settings, api_base: str) -> Settings:
    """The demo's settings judging with the local SmolLM2 server (one request at a time)."""
    judge = settings.judge.model_copy(
        update={"models": ["openai/smollm2"], "api_base": api_base, "max_concurrency": 1}
    )
    return settings.model_copy(update={"judge": judge})


def judge_line(settings: Settings) -> str:
    """The start-up line that says whether the judge metrics run, and how to turn them on."""
    if settings.judge.models:
        where = f" at {settings.judge.api_base}" if settings.judge.api_base else ""
        return f"  judge      {', '.join(settings.judge.models)}{where}"
    return (
        "  judge      OFF: the LLM-judge metrics (faithfulness, answer/context relevance, "
        "judge accuracy, ...) are skipped;\n"
        "             turn them on with `make demo JUDGE=local` (a small local model), or "
        "RAGPULSE_JUDGE__MODELS=openai/gpt-4o-mini\n"
        "             (+ RAGPULSE_JUDGE__API_BASE for an OpenAI-compatible server of your own)"
    )


def _free_ports(settings: Settings) -> Settings:
    """Keep the configured /metrics and receiver ports when they are free, else take any
    free ones."""
    from collector.ingest.kafka.broker import free_port, port_is_free

    update: dict[str, Any] = {}
    for name in ("exporter", "receiver"):
        endpoint = getattr(settings, name)
        if not (endpoint.port and port_is_free(endpoint.host, endpoint.port)):
            update[name] = endpoint.model_copy(update={"port": free_port(endpoint.host)})
    return settings.model_copy(update=update) if update else settings


OTLP_APP_SHARE = 1 / 6
"""The SDK apps' requests per second, as a share of --rate (messages per second, of which
~70% are traces): about a fifth of all traces come through the receiver."""


def _receiver_url(settings: Settings) -> str:
    receiver = settings.receiver
    scheme = "https" if receiver.tls_cert_file is not None else "http"
    return f"{scheme}://{receiver.host}:{receiver.port}"


def _otel_apps(settings: Settings, rate: float, run_tag: str) -> Any:
    """The SDK apps exporting to the demo's receiver (its auth and certificate too)."""
    import base64

    from ragpulse.demo.otel_app import OtelRagApps

    receiver = settings.receiver
    headers = {}
    if receiver.basic_auth_username is not None and receiver.basic_auth_password is not None:
        secret = f"{receiver.basic_auth_username}:{receiver.basic_auth_password.get_secret_value()}"
        headers["Authorization"] = "Basic " + base64.b64encode(secret.encode()).decode()
    cert = receiver.tls_cert_file
    return OtelRagApps(
        _receiver_url(settings) + "/v1/traces",
        rate=rate * OTLP_APP_SHARE,
        run_tag=run_tag,
        headers=headers,
        certificate_file=str(cert) if cert is not None else None,
    )


def _traffic(
    settings: Settings, rate: float, stop: threading.Event, run_tag: str, started: datetime
) -> None:
    """Replay sample rounds until stopped; each round gets fresh ids and timestamps (none
    before `started`: the store's history is as long as the demo has run), and every id
    carries this start's `run_tag`, so a restart never replays a stored id."""
    from collector.ingest.kafka.producer import make_producer, publish
    from ragpulse.demo.traffic import generate_round

    producer = make_producer(settings.kafka)
    try:
        round_no = 0
        while not stop.is_set():
            sent = publish(
                producer,
                generate_round(round_no, run=run_tag, not_before=started),
                topic="rag.traces",
                rate=rate,
                should_stop=stop.is_set,
            )
            logger.debug("demo traffic: round %d published (%d messages)", round_no, sent)
            round_no += 1
    except Exception:
        logger.exception("demo traffic stopped")
    finally:
        producer.close(timeout=5)


def _start_prometheus(args: argparse.Namespace, directory: Path, settings: Settings) -> Any:
    """The demo's Prometheus, or None (printing why) when it is absent or fails."""
    from ragpulse.demo.prometheus import (
        INSTALL_HINT,
        PrometheusError,
        find_prometheus,
        start_prometheus,
    )

    if args.no_prometheus:
        return None
    binary = find_prometheus()
    if binary is None:
        print(f"  prometheus not installed: {INSTALL_HINT}; continuing with /metrics only")
        return None
    target = f"{settings.exporter.host}:{settings.exporter.port}"
    try:
        return start_prometheus(
            binary,
            directory / "prometheus",
            target,
            port=args.prometheus_port,
            slo_specs=settings.slo.specs(),
        )
    except (PrometheusError, OSError) as exc:
        print(f"  prometheus failed: {exc}; continuing with /metrics only")
        return None


def _start_local_judge(directory: Path) -> Any:
    """The local SmolLM2 judge server, or None after saying what is missing."""
    from ragpulse.demo import local_judge

    reason = local_judge.missing_reason()
    if reason is not None:
        print(f"ragpulse demo: --judge local: {reason}", file=sys.stderr)
        return None
    print("  judge      starting SmolLM2-135M on llama.cpp (first start loads the model) ...")
    try:
        return local_judge.start(directory / "judge.log")
    except local_judge.LocalJudgeError as exc:
        print(f"ragpulse demo: --judge local: {exc}", file=sys.stderr)
        return None


def run(args: argparse.Namespace) -> int:
    from collector.ingest.kafka import quiet_client_logs
    from ragpulse.demo.traffic import new_run_tag

    quiet_client_logs()
    from collector.ingest.kafka.broker import BrokerError, EmbeddedBroker, free_port, port_is_free
    from ragpulse.service import Service, prepare_database

    if args.rate <= 0 or args.partitions < 1:
        print("ragpulse demo: --rate must be positive and --partitions at least 1", file=sys.stderr)
        return 2
    base = load_settings(args.config)
    directory = Path(args.dir).resolve()
    directory.mkdir(parents=True, exist_ok=True)
    database_url = f"sqlite:///{directory / 'ragpulse.db'}"
    prepare_database(database_url, migrate=True)

    port = args.port if port_is_free("127.0.0.1", args.port) else free_port()
    broker = EmbeddedBroker("127.0.0.1", port, log_file=directory / "broker.log")
    try:
        broker.start()
        broker.create_topics(["rag.traces", "rag.feedback", "otlp_spans"], args.partitions)
    except BrokerError as exc:
        broker.stop()
        print(f"ragpulse demo: {exc}", file=sys.stderr)
        return 1
    with contextlib.ExitStack() as stack:
        stack.callback(broker.stop)
        from ragpulse.monitoring import Monitoring
        from ragpulse.receiver import Receiver

        settings = _free_ports(demo_settings(base, database_url, broker.bootstrap_servers))
        if args.judge == "local":
            judge = _start_local_judge(directory)
            if judge is None:
                return 1
            stack.callback(judge.stop)
            settings = with_local_judge(settings, judge.base)
        service = Service(settings)
        run_tag = new_run_tag()
        # started in this order, stopped in reverse: the apps flush into the receiver
        # before it stops
        service.add(Receiver(settings, service.registry))
        service.add(
            Monitoring(settings, service.engine, service.registry, consumer=service.consumer)
        )
        service.add(_otel_apps(settings, args.rate, run_tag))
        service.install_signal_handlers()
        producer = threading.Thread(
            target=_traffic,
            args=(settings, args.rate, service.stop_event, run_tag, datetime.now(UTC)),
            name="ragpulse-demo-traffic",
            daemon=True,
        )
        print("ragpulse demo", flush=True)
        print(f"  broker     {broker.bootstrap_servers} (log: {directory / 'broker.log'})")
        print("  topics     rag.traces, rag.feedback, otlp_spans")
        print(f"  database   {database_url}")
        print(
            f"  traffic    bundled sample traces at {args.rate:g} messages/s "
            f"(ids of this run start with {run_tag})"
        )
        print(f"  metrics    http://{settings.exporter.host}:{settings.exporter.port}/metrics")
        print(
            f"  receiver   {_receiver_url(settings)} (OTLP/HTTP: /v1/traces -> otlp_spans, "
            f"/v1/logs -> {settings.kafka.otlp_logs_topic}; ragpulse receive)"
        )
        print(
            f"  otel apps  {args.rate * OTLP_APP_SHARE:.1f} RAG requests/s recorded with the "
            "OpenTelemetry SDK, exported through the receiver (about a fifth of the traces)"
        )
        print(
            f"  jobs       evaluation every {settings.scheduler.interval_s:g}s, first after "
            f"{settings.scheduler.initial_delay_s:g}s (results in metric_results)"
        )
        print(
            f"  topics     what users ask, from the questions' stored vectors: re-clustered "
            f"every {settings.topics.recluster_every} (the first once the `ux` job has "
            "embedded a minute of traffic); `ragpulse topics`"
        )
        print(judge_line(settings))
        prometheus = _start_prometheus(args, directory, settings)
        if prometheus is not None:
            stack.callback(prometheus.stop)
            print(
                f"  prometheus {prometheus.url} ({len(prometheus.rules)} rule files; "
                f"log: {prometheus.log})"
            )
            print(
                "  dashboards ragpulse report --output report.html  (every Grafana panel in "
                "one HTML page, from this folder; elsewhere add --prometheus "
                f"{prometheus.url})"
            )
        slos = slo_line(settings, prometheus is not None)
        if slos is not None:
            print(slos)
        given = handoff.write(
            directory,
            handoff_settings(settings),
            prometheus.url if prometheus is not None else None,
        )
        stack.callback(handoff.stopped, directory)
        print(
            f"  settings   {given}: `ragpulse traces`, `report`, `explain`, `compare`, `plan`, "
            "`jobs`, `slo` started in this folder use it while the demo runs;\n"
            f"             elsewhere: ragpulse --config {given} COMMAND"
        )
        hint = path_line(Path.cwd())
        if hint is not None:
            print(hint)
        print("  Ctrl-C to stop", flush=True)
        producer.start()
        totals = service.run()
        producer.join(10)
    print(
        f"stopped: consumed {totals.consumed} = stored {totals.stored} + duplicates "
        f"{totals.duplicates} + feedback {totals.feedback} + invalid {totals.invalid}; "
        f"sampled {totals.sampled}; database kept at {database_url}",
        flush=True,
    )
    return 0
