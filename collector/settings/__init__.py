"""All configuration of ragpulse: one pydantic-settings class with nested groups.

Sources, strongest first: `RAGPULSE_*` environment variables (`__` nests:
`RAGPULSE_DATABASE__URL`), keyword arguments, an optional YAML file (`--config`), then
defaults.
Unknown keys and contradictory values are errors that name the offending setting.
Nothing here connects to anything; building a `Settings` only validates.

One module per area, each holding its groups with their defaults and checks: `database`,
`ingest` (kafka, decode, sampling, ground_truth), `judge`, `embeddings` (embeddings, ux),
`scheduler` (scheduler, external), `labels` (labels, versions), `alerting` (alerting,
canary, slices), `exporter` (exporter, otel, evaluation_events), `receiver` (the OTLP/HTTP
receiver), `slo` (quality SLOs: `slo_spec`, `openslo`), `topics` (topic discovery),
`sessions` (when a conversation is over);
`root` joins them into `Settings`, `loading` builds one (`load_settings`).
Import everything from here.
"""

from __future__ import annotations

from collector.settings.alerting import (
    PAGE_METRICS,
    AlertingSettings,
    CanarySettings,
    SliceSettings,
)
from collector.settings.database import DatabaseSettings
from collector.settings.durations import parse_duration
from collector.settings.embeddings import EmbeddingSettings, UXSettings
from collector.settings.exporter import (
    EvaluationEventsSettings,
    ExporterSettings,
    HttpEndpointSettings,
    OtelSettings,
)
from collector.settings.fields import CSV
from collector.settings.ingest import (
    DecodeSettings,
    GroundTruthSettings,
    KafkaSettings,
    SamplingSettings,
)
from collector.settings.judge import JudgeSettings
from collector.settings.labels import LabelLimitSettings, LabelSettings, VersionSettings
from collector.settings.loading import ConfigError, load_settings
from collector.settings.receiver import ReceiverSettings
from collector.settings.root import ENV_PREFIX, Settings
from collector.settings.scheduler import ExternalScoresSettings, SchedulerSettings
from collector.settings.sessions import SessionSettings
from collector.settings.slo import SloObjective, SloSettings
from collector.settings.slo_spec import DEFAULT_ALERTS, BurnAlert, SloSpec, SloSpecError
from collector.settings.topics import TopicSettings

__all__ = [
    "CSV",
    "DEFAULT_ALERTS",
    "ENV_PREFIX",
    "PAGE_METRICS",
    "AlertingSettings",
    "BurnAlert",
    "CanarySettings",
    "ConfigError",
    "DatabaseSettings",
    "DecodeSettings",
    "EmbeddingSettings",
    "EvaluationEventsSettings",
    "ExporterSettings",
    "ExternalScoresSettings",
    "GroundTruthSettings",
    "HttpEndpointSettings",
    "JudgeSettings",
    "KafkaSettings",
    "LabelLimitSettings",
    "LabelSettings",
    "OtelSettings",
    "ReceiverSettings",
    "SamplingSettings",
    "SchedulerSettings",
    "SessionSettings",
    "Settings",
    "SliceSettings",
    "SloObjective",
    "SloSettings",
    "SloSpec",
    "SloSpecError",
    "TopicSettings",
    "UXSettings",
    "VersionSettings",
    "load_settings",
    "parse_duration",
]
