from __future__ import annotations

from pathlib import Path

import pytest

from collector.settings import ConfigError, load_settings, parse_duration


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("RAGPULSE_") and not name.startswith("RAGPULSE_TEST_"):
            monkeypatch.delenv(name)


def test_defaults_match_the_spec() -> None:
    s = load_settings()
    assert s.database.url.get_secret_value() == "sqlite:///ragpulse.db"
    assert s.kafka.bootstrap_servers == ["127.0.0.1:9092"]
    assert s.kafka.topics == ["rag.traces", "rag.feedback", "otlp_spans"]
    assert s.kafka.group_id == "ragpulse"
    assert (s.exporter.host, s.exporter.port) == ("127.0.0.1", 9464)
    assert (s.sampling.real_users_benchmark, s.sampling.judge) == (0.1, 0.05)
    assert s.judge.models == [] and s.judge.temperature == 0.1
    assert s.judge.transient_retries == 3
    assert s.ux.threshold_mode == "balanced" and s.ux.cache_similarity_threshold is None
    assert (s.judge.min_agreement, s.judge.min_agreement_pairs) == (0.4, 30)
    assert (s.scheduler.shards, s.scheduler.shard_lease_s) == (32, 60.0)
    assert (s.receiver.host, s.receiver.port) == ("127.0.0.1", 4318)  # OTLP/HTTP's port
    assert (s.receiver.max_body_bytes, s.receiver.ack_timeout_s) == (None, 10.0)


def test_environment_with_nesting_and_comma_lists(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGPULSE_KAFKA__TOPICS", "a, b ,c")
    monkeypatch.setenv("RAGPULSE_JUDGE__MODELS", "openai/gpt-4o-mini,openai/qwen")
    monkeypatch.setenv("RAGPULSE_DATABASE__URL", "postgresql+psycopg://u:secret@db/x")
    s = load_settings()
    assert s.kafka.topics == ["a", "b", "c"]
    assert s.judge.models == ["openai/gpt-4o-mini", "openai/qwen"]
    assert "secret" not in repr(s) and "secret" not in str(s.database)


def test_yaml_file_and_environment_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "ragpulse.yaml"
    cfg.write_text("kafka:\n  group_id: from-yaml\n  topics: [x]\nexporter:\n  port: 9999\n")
    monkeypatch.setenv("RAGPULSE_EXPORTER__PORT", "9100")
    s = load_settings(cfg)
    assert s.kafka.group_id == "from-yaml"
    assert s.kafka.topics == ["x"]
    assert s.exporter.port == 9100


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"RAGPULSE_KAFKA__TOPIX": "a"}, "RAGPULSE_KAFKA__TOPIX"),
        ({"RAGPULSE_NOPE": "1"}, "RAGPULSE_NOPE"),
        ({"RAGPULSE_SAMPLING__JUDGE": "1.5"}, "sampling.judge"),
        ({"RAGPULSE_DATABASE__URL": "mysql://x"}, "database.url"),
        ({"RAGPULSE_KAFKA__SESSION_TIMEOUT_MS": "900000"}, "session_timeout_ms"),
        ({"RAGPULSE_EXPORTER__TLS_CERT_FILE": "/x.pem"}, "tls_key_file"),
        ({"RAGPULSE_RECEIVER__TLS_KEY_FILE": "/x.pem"}, "tls_key_file"),
        ({"RAGPULSE_RECEIVER__BASIC_AUTH_USERNAME": "app"}, "basic_auth_password"),
        ({"RAGPULSE_RECEIVER__ACK_TIMEOUT_S": "30"}, "shorter than request_timeout_s"),
        ({"RAGPULSE_RECEIVER__MAX_BODY_BYTES": "2000000"}, "kafka.max_message_bytes"),
        ({"RAGPULSE_RECEIVER__RETRY_AFTER_S": "0"}, "receiver.retry_after_s"),
        ({"RAGPULSE_SCHEDULER__WINDOWS": "1h,fortnight"}, "fortnight"),
        ({"RAGPULSE_EMBEDDINGS__PRECISION": "fp16"}, "embeddings.precision"),
        ({"RAGPULSE_JUDGE__TRANSIENT_RETRIES": "-1"}, "judge.transient_retries"),
        ({"RAGPULSE_JUDGE__TRANSIENT_RETRIES": "1000"}, "judge.transient_retries"),
        ({"RAGPULSE_UX__THRESHOLD_MODE": "lenient"}, "ux.threshold_mode"),
        ({"RAGPULSE_JUDGE__MIN_AGREEMENT": "1.5"}, "judge.min_agreement"),
        ({"RAGPULSE_JUDGE__MIN_AGREEMENT_PAIRS": "1"}, "judge.min_agreement_pairs"),
        ({"RAGPULSE_DATABASE__RETENTION": "a month"}, "database.retention"),
        ({"RAGPULSE_DATABASE__RETENTION": "3d"}, "longest scheduler window"),
        ({"RAGPULSE_DATABASE__PARTITIONS_AHEAD": "0"}, "database.partitions_ahead"),
        ({"RAGPULSE_SCHEDULER__SHARDS": "-1"}, "scheduler.shards"),
        ({"RAGPULSE_SCHEDULER__SHARD_LEASE_S": "0.5"}, "scheduler.shard_lease_s"),
    ],
)
def test_unknown_and_contradictory_settings_are_clear_errors(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], message: str
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(ConfigError, match=message):
        load_settings()


def test_unknown_key_in_yaml_is_an_error(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("kafka:\n  bootstrap: x\n")
    with pytest.raises(ConfigError, match=r"kafka\.bootstrap"):
        load_settings(cfg)


def test_unreadable_or_malformed_yaml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_settings(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("- a list\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_settings(bad)


@pytest.mark.parametrize(
    ("text", "seconds"), [("30s", 30), ("15m", 900), ("1h", 3600), ("7d", 604800)]
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "h", "0h", "1x", "-1h", "1.5h"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


def test_label_bounds_from_yaml_and_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ragpulse.job_setup import label_limits

    config = tmp_path / "ragpulse.yaml"
    config.write_text(
        "scheduler: {group_labels: [tenant, model]}\n"
        'labels:\n  max_values: 20\n  per_label:\n    tenant: {values: [acme, " globex\\n"]}\n'
    )
    monkeypatch.setenv("RAGPULSE_LABELS__PER_LABEL__MODEL__MAX_VALUES", "3")
    limits = label_limits(load_settings(config))
    assert limits.policy("tenant").allow == {"acme", "globex"}  # cleaned like tag values
    assert limits.policy("model").max_values == 3 and limits.policy("model").allow is None
    assert limits.policy("lang").max_values == 20
    assert limits.bound("tenant") == 3 and limits.bound("model") == 4


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"labels": {"per_label": {"model": {"max_values": 3}}}},
            "not among scheduler.group_labels",
        ),
        ({"labels": {"per_label": {"tenant": {"values": ["acme", "other"]}}}}, "'other'"),
        ({"labels": {"max_values": 0}}, "labels.max_values"),
    ],
)
def test_label_bounds_are_checked(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_settings(**overrides)


def test_strict_threshold_mode_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGPULSE_UX__THRESHOLD_MODE", "strict")
    s = load_settings()
    assert s.ux.threshold_mode == "strict"
    assert s.ux.model_dump()["threshold_mode"] == "strict"  # what the metrics' options get


def test_versions_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragpulse.job_setup import label_limits

    defaults = load_settings()
    assert defaults.scheduler.group_labels == ["tenant", "version", "topic"]
    assert (defaults.versions.sources, defaults.versions.max_values) == (["version"], 10)
    monkeypatch.setenv("RAGPULSE_VERSIONS__SOURCES", "retriever_version, prompt_version,model")
    monkeypatch.setenv("RAGPULSE_VERSIONS__MAX_VALUES", "4")
    s = load_settings()
    assert s.versions.sources == ["retriever_version", "prompt_version", "model"]
    assert label_limits(s).policy("version").max_values == 4
    # labels.per_label.version wins over versions.max_values
    monkeypatch.setenv("RAGPULSE_LABELS__PER_LABEL__VERSION__MAX_VALUES", "7")
    assert label_limits(load_settings()).policy("version").max_values == 7
    monkeypatch.setenv("RAGPULSE_VERSIONS__SOURCES", "v,v")
    with pytest.raises(ConfigError, match="listed twice"):
        load_settings()
    monkeypatch.setenv("RAGPULSE_VERSIONS__SOURCES", " , ")
    with pytest.raises(ConfigError, match="at least one version source"):
        load_settings()


def test_trace_retention_is_off_unless_set(monkeypatch: pytest.MonkeyPatch) -> None:
    assert load_settings().database.retention is None
    monkeypatch.setenv("RAGPULSE_DATABASE__RETENTION", "30d")
    assert load_settings().database.retention == "30d"
