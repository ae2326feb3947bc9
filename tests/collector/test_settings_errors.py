"""Configuration errors name the variable or YAML key the user wrote, echo the refused
value (never a secret's), and suggest the setting a typo meant."""

from __future__ import annotations

from pathlib import Path

import pytest

from collector.settings import ConfigError, load_settings


def test_a_bad_environment_value_names_the_variable_and_echoes_the_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RAGPULSE_KAFKA__MAX_MESSAGE_BYTES", "ten megabytes")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    message = str(caught.value)
    assert "RAGPULSE_KAFKA__MAX_MESSAGE_BYTES" in message
    assert "'ten megabytes'" in message


def test_a_bad_yaml_value_names_the_file_key(tmp_path: Path) -> None:
    config = tmp_path / "ragpulse.yaml"
    config.write_text("kafka:\n  max_message_bytes: -5\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_settings(config)
    assert f"kafka.max_message_bytes in {config}" in str(caught.value)
    assert "(got -5)" in str(caught.value)


def test_a_secret_is_never_echoed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGPULSE_DATABASE__URL", "mysql://admin:hunter2@db/prod")
    with pytest.raises(ConfigError) as caught:
        load_settings()
    assert "RAGPULSE_DATABASE__URL" in str(caught.value)
    assert "hunter2" not in str(caught.value)


def test_a_mistyped_variable_gets_a_suggestion(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGPULSE_KAFKA__BOOTSTRAP_SERVER", "localhost:9092")
    with pytest.raises(ConfigError, match=r"did you mean RAGPULSE_KAFKA__BOOTSTRAP_SERVERS\?"):
        load_settings()


def test_a_mistyped_yaml_key_gets_a_suggestion(tmp_path: Path) -> None:
    config = tmp_path / "ragpulse.yaml"
    config.write_text("kafka:\n  topcs: rag.traces\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"did you mean topics\?"):
        load_settings(config)
