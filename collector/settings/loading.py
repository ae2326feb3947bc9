"""`load_settings`: a YAML file, keyword overrides and the environment validated into a
`Settings`, or a `ConfigError` naming every bad setting (typos in the environment too)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, get_args, get_origin

import yaml
from pydantic import ValidationError
from pydantic_settings.exceptions import SettingsError

from collector.settings.root import ENV_PREFIX, Settings


class ConfigError(ValueError):
    """The configuration is invalid; the message names each bad setting."""


def _unknown_env_keys(environ: dict[str, str]) -> list[str]:
    """Environment variables with our prefix that name no setting (typos)."""
    unknown = []
    for name in environ:
        if not name.startswith(ENV_PREFIX) or name.startswith("RAGPULSE_TEST_"):
            continue
        path = name[len(ENV_PREFIX) :].lower().split("__")
        model: Any = Settings
        for part in path:
            if get_origin(model) is dict:  # a key of a dict setting, e.g. labels.per_label
                model = get_args(model)[1]
                continue
            fields = getattr(model, "model_fields", None)
            if fields is None or part not in fields:
                unknown.append(name)
                break
            model = fields[part].annotation
    return unknown


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
    unknown = _unknown_env_keys(dict(os.environ))
    if unknown:
        raise ConfigError("unknown setting(s) in the environment: " + ", ".join(sorted(unknown)))
    try:
        return Settings(**data)
    except SettingsError as exc:
        raise ConfigError(f"invalid configuration: {exc}") from None
    except ValidationError as exc:
        lines = []
        for err in exc.errors():
            where = ".".join(str(p) for p in err["loc"]) or "settings"
            lines.append(f"  {where}: {err['msg']}")
        raise ConfigError("invalid configuration:\n" + "\n".join(lines)) from None


def _deep_update(target: dict[str, Any], extra: dict[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(target.get(key), dict):
            _deep_update(target[key], value)
        else:
            target[key] = value
