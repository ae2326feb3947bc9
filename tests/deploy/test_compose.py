"""deploy/: the compose file cannot run here (no container runtime), so everything that
can be checked without one is: the YAML, every path it mounts or builds from, the
Prometheus configuration and rules with the real `promtool` on the files laid out as the
containers see them, the service names and ports the parts use to find each other, and
ragpulse's environment against its own settings validation."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from collector.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def _compose() -> dict[str, Any]:
    return dict(yaml.safe_load((DEPLOY / "docker-compose.yml").read_text()))


def _binds(service: dict[str, Any]) -> list[tuple[Path, str]]:
    """(host path, container path) of the service's bind mounts (named volumes skipped)."""
    out = []
    for volume in service.get("volumes", []):
        source, target = volume.split(":")[:2]
        if source.startswith((".", "/")):
            out.append(((DEPLOY / source).resolve(), target))
    return out


def test_every_part_is_there_and_every_mounted_or_built_path_exists() -> None:
    compose = _compose()
    services = compose["services"]
    parts = {"ragpulse", "migrate", "kafka", "postgres", "prometheus", "alertmanager", "grafana"}
    assert parts <= set(services)
    for name, service in services.items():
        for host, _ in _binds(service):
            assert host.exists(), f"{name} mounts {host}, which does not exist"
        build = service.get("build")
        if build:
            context = (DEPLOY / build["context"]).resolve()
            assert context == ROOT
            assert (context / build["dockerfile"]).is_file()
    dockerfile = (DEPLOY / "Dockerfile").read_text()
    copied = re.findall(r"^COPY (\S+)", dockerfile, flags=re.M)
    for source in copied:
        assert (ROOT / source).exists(), f"Dockerfile copies {source}, which does not exist"
    # every package the distribution installs is in the image
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    for pattern in packages["packages"]["find"]["include"]:
        assert pattern.rstrip("*") in copied, f"the Dockerfile does not copy {pattern}"
    for name, service in services.items():
        for dependency in service.get("depends_on", {}):
            assert dependency in services, f"{name} depends on unknown {dependency}"


def test_prometheus_config_and_rules_pass_promtool_as_mounted(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian package `prometheus`)")
    service = _compose()["services"]["prometheus"]
    for host, target in _binds(service):  # the container's view of its files
        destination = tmp_path / target.lstrip("/")
        destination.parent.mkdir(parents=True, exist_ok=True)
        if host.is_dir():
            shutil.copytree(host, destination)
        else:
            shutil.copy(host, destination)
    config_flag = next(a for a in service["command"] if a.startswith("--config.file="))
    config = tmp_path / config_flag.split("=", 1)[1].lstrip("/")
    result = subprocess.run(
        [promtool, "check", "config", str(config)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
    shipped = sorted((ROOT / "dashboards" / "prometheus" / "rules").glob("*.yml"))
    assert f"SUCCESS: {len(shipped)} rule files found" in result.stdout + result.stderr


def test_the_parts_find_each_other_by_service_name_and_port() -> None:
    compose = _compose()
    services = compose["services"]
    env = services["ragpulse"]["environment"]
    prometheus = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    scrape = prometheus["scrape_configs"][0]
    assert scrape["honor_labels"] is True
    assert scrape["static_configs"][0]["targets"] == [f"ragpulse:{env['RAGPULSE_EXPORTER__PORT']}"]
    assert env["RAGPULSE_EXPORTER__HOST"] == "0.0.0.0"  # reachable from the prometheus container
    alertmanagers = prometheus["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"]
    assert alertmanagers == ["alertmanager:9093"]
    assert "9093:9093" in services["alertmanager"]["ports"]
    kafka = services["kafka"]["environment"]
    assert f"PLAINTEXT://{env['RAGPULSE_KAFKA__BOOTSTRAP_SERVERS']}" in kafka[
        "KAFKA_ADVERTISED_LISTENERS"
    ].split(",")
    pg = services["postgres"]["environment"]
    assert env["RAGPULSE_DATABASE__URL"] == (
        f"postgresql+psycopg://{pg['POSTGRES_USER']}:{pg['POSTGRES_PASSWORD']}"
        f"@postgres:5432/{pg['POSTGRES_DB']}"
    )
    datasource = yaml.safe_load((DEPLOY / "grafana" / "datasources.yml").read_text())
    assert datasource["datasources"][0]["url"] == "http://prometheus:9090"
    # Grafana's dashboard provider reads the folder the shipped dashboards are mounted at.
    grafana = dict((str(h), t) for h, t in _binds(services["grafana"]))
    provider_file = ROOT / "dashboards" / "grafana" / "provisioning" / "dashboards" / "ragpulse.yml"
    provider = yaml.safe_load(provider_file.read_text())
    path = provider["providers"][0]["options"]["path"]
    assert grafana[str(ROOT / "dashboards" / "grafana" / "dashboards")] == path
    assert grafana[str(provider_file)].startswith("/etc/grafana/provisioning/dashboards/")
    home = services["grafana"]["environment"]["GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH"]
    assert (ROOT / "dashboards" / "grafana" / "dashboards" / Path(home).name).is_file()
    assert home.startswith(path)
    alert = yaml.safe_load((DEPLOY / "alertmanager" / "alertmanager.yml").read_text())
    assert alert["route"]["receiver"] in {r["name"] for r in alert["receivers"]}


def test_ragpulse_environment_passes_its_settings_validation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    env = _compose()["services"]["ragpulse"]["environment"]
    for key in [k for k in os.environ if k.startswith("RAGPULSE_")]:
        monkeypatch.delenv(key)
    for key, value in env.items():
        monkeypatch.setenv(key, str(value))
    settings = load_settings()  # unknown or malformed settings raise ConfigError
    assert settings.kafka.bootstrap_servers == ["kafka:9092"]
    assert settings.kafka.topics == ["rag.traces", "rag.feedback", "otlp_spans"]
    assert settings.exporter.port == 9464
    assert settings.database.url.get_secret_value().startswith("postgresql+psycopg://")
    assert _compose()["services"]["migrate"]["command"] == ["ragpulse", "migrate"]
