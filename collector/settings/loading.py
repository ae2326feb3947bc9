"""`load_settings`: a YAML file, keyword overrides and the environment validated into a
`Settings`, or a `ConfigError` naming every bad setting (typos in the environment too)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from pydantic_settings.exceptions import SettingsError

from collector.settings.errors import describe, unknown_env
from collector.settings.root import ENV_PREFIX, Settings


class ConfigError(ValueError):
    """The configuration is invalid; the message names each bad setting."""


def load_settings(config_file: str | Path | None = None, **overrides: Any) -> Settings:
    """Build and validate the settings; raise `ConfigError` with a readable message."""
    data: dict[str, Any] = {}
    if config_file is not None:
        path = Path(config_file)
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read config file {path}: {exc}") from exc
        except yaml.YAMLError as exc:
            raise ConfigError(f"config file {path} is not valid YAML: {exc}") from exc
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"config file {path} must hold a mapping at the top level")
        data.update(loaded or {})
    _deep_update(data, overrides)
    environ = dict(os.environ)
    unknown = unknown_env(environ, Settings, ENV_PREFIX)
    if unknown:
        raise ConfigError("unknown setting(s) in the environment: " + ", ".join(sorted(unknown)))
    try:
        return Settings(**data)
    except SettingsError as exc:
        raise ConfigError(f"invalid configuration: {exc}") from None
    except ValidationError as exc:
        lines = [
            describe(
                err,
                model=Settings,
                prefix=ENV_PREFIX,
                environ=environ,
                config_file=str(config_file) if config_file is not None else None,
                from_file=data,
            )
            for err in exc.errors()
        ]
        raise ConfigError("invalid configuration:\n" + "\n".join(lines)) from None


def _deep_update(target: dict[str, Any], extra: dict[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _deep_update(target[key], value)
        else:
            target[key] = value
