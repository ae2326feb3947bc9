"""`Settings`, the whole configuration: every group under its name, the checks that
span groups, and the order of the sources (the environment over the values passed in)."""

from __future__ import annotations

from typing import Literal

from pydantic import model_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from collector.settings.alerting import AlertingSettings, CanarySettings, SliceSettings
from collector.settings.database import DatabaseSettings
from collector.settings.durations import parse_duration
from collector.settings.embeddings import EmbeddingSettings, UXSettings
from collector.settings.exporter import (
    EvaluationEventsSettings,
    ExporterSettings,
    OtelSettings,
)
from collector.settings.ingest import (
    DecodeSettings,
    GroundTruthSettings,
    KafkaSettings,
    SamplingSettings,
)
from collector.settings.judge import JudgeSettings
from collector.settings.labels import LabelSettings, VersionSettings
from collector.settings.receiver import ReceiverSettings
from collector.settings.scheduler import ExternalScoresSettings, SchedulerSettings
from collector.settings.sessions import SessionSettings
from collector.settings.slo import SloSettings
from collector.settings.topics import TopicSettings

ENV_PREFIX = "RAGPULSE_"


class Settings(BaseSettings):
    """The whole configuration; the settings reference (docs/reference/settings.md,
    generated from these classes) lists every variable."""

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        extra="forbid",
        frozen=True,
        use_attribute_docstrings=True,
    )

    database: DatabaseSettings = DatabaseSettings()
    kafka: KafkaSettings = KafkaSettings()
    sampling: SamplingSettings = SamplingSettings()
    judge: JudgeSettings = JudgeSettings()
    embeddings: EmbeddingSettings = EmbeddingSettings()
    ux: UXSettings = UXSettings()
    exporter: ExporterSettings = ExporterSettings()
    receiver: ReceiverSettings = ReceiverSettings()
    scheduler: SchedulerSettings = SchedulerSettings()
    labels: LabelSettings = LabelSettings()
    versions: VersionSettings = VersionSettings()
    alerting: AlertingSettings = AlertingSettings()
    slices: SliceSettings = SliceSettings()
    canary: CanarySettings = CanarySettings()
    otel: OtelSettings = OtelSettings()
    evaluation_events: EvaluationEventsSettings = EvaluationEventsSettings()
    external: ExternalScoresSettings = ExternalScoresSettings()
    decode: DecodeSettings = DecodeSettings()
    ground_truth: GroundTruthSettings = GroundTruthSettings()
    slo: SloSettings = SloSettings()
    topics: TopicSettings = TopicSettings()
    sessions: SessionSettings = SessionSettings()
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    """The logging level of every ragpulse logger (`--log-level` overrides it)."""

    def _longest_window_s(self) -> float:
        return max(parse_duration(w) for w in self.scheduler.windows)

    @model_validator(mode="after")
    def _drift_span_inside_the_windows(self) -> Settings:
        longest = self._longest_window_s()
        if self.alerting.enabled and parse_duration(self.alerting.span) >= longest:
            raise ValueError(
                f"alerting.span ({self.alerting.span}) must be shorter than the longest "
                f"scheduler window ({longest:.0f}s): the rest of it is the drift baseline"
            )
        return self

    @model_validator(mode="after")
    def _retention_keeps_the_windows(self) -> Settings:
        retention = self.database.retention
        longest = self._longest_window_s()
        if retention is not None and parse_duration(retention) < longest:
            raise ValueError(
                f"database.retention ({retention}) must be at least the longest scheduler "
                f"window ({longest:.0f}s): the jobs aggregate the traces of that window"
            )
        return self

    @model_validator(mode="after")
    def _label_bounds_name_group_labels(self) -> Settings:
        stray = sorted(set(self.labels.per_label) - set(self.scheduler.group_labels))
        if stray:
            raise ValueError(
                f"labels.per_label names {', '.join(stray)}, not among scheduler.group_labels "
                f"({', '.join(self.scheduler.group_labels) or 'none'})"
            )
        return self

    @model_validator(mode="after")
    def _receiver_bodies_fit_a_message(self) -> Settings:
        limit = self.receiver.max_body_bytes
        if limit is not None and limit > self.kafka.max_message_bytes:
            raise ValueError(
                f"receiver.max_body_bytes ({limit}) must not exceed kafka.max_message_bytes "
                f"({self.kafka.max_message_bytes}): the consumer refuses larger messages"
            )
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # init (which carries the YAML file's values) must lose to the environment only
        # for keys the environment sets; pydantic-settings merges nested dicts per key.
        return env_settings, init_settings
