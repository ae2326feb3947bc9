"""deploy/kubernetes/: no cluster here, so the manifests are checked as far as they can be
without one. They are rendered by the real kustomize (`kubectl kustomize`), the base and
every overlay; every object is validated against the Kubernetes API schemas
(kubernetes-validate, strict: an unknown field fails), the ServiceMonitor and the
PrometheusRules against the Prometheus Operator's schemas (node, tests/deploy/crd_schemas);
the rendered rules must be exactly the shipped rules files and pass their promtool unit
tests, the rendered dashboards exactly the shipped dashboards; the settings the pods get
must pass ragpulse's settings validation with the secrets taken by reference; and the
migration Job's, the exporter's and the jobs workers' own commands are run with that
environment against PostgreSQL, their probes answered on the paths and port the manifests
name; and the consumer's command, on the embedded broker, shows why its replicas =
partitions."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from collector.settings import load_settings
from dashboards import kubernetes as generated_manifests
from tests.fixtures.broker import KafkaTopics
from tests.fixtures.db import create_postgres_database, drop_postgres_database

ROOT = Path(__file__).resolve().parents[2]
KUBERNETES = ROOT / "deploy" / "kubernetes"
OVERLAYS = sorted(p.parent for p in (KUBERNETES / "overlays").glob("*/kustomization.yaml"))
TREES = [KUBERNETES / "base", *OVERLAYS]
RULES = ROOT / "dashboards" / "prometheus" / "rules"
RULE_TESTS = ROOT / "dashboards" / "prometheus" / "tests"
DASHBOARDS = ROOT / "dashboards" / "grafana" / "dashboards"
CRD_SCHEMAS = Path(__file__).resolve().parent / "crd_schemas"
# The oldest and the newest Kubernetes minor kubernetes-validate holds schemas for.
_HELD = sorted(
    set(kubernetes_validate.utils.all_versions()), key=lambda v: tuple(map(int, v.split(".")))
)
K8S_VERSIONS = [_HELD[0], _HELD[-1]]
# Settings that are secrets: they must come from the Secret, never as a literal value.
SECRET_SETTINGS = {
    "RAGPULSE_DATABASE__URL",
    "RAGPULSE_JUDGE__API_KEY",
    "RAGPULSE_KAFKA__SASL_USERNAME",
    "RAGPULSE_KAFKA__SASL_PASSWORD",
}
ROLES = {"consumer", "jobs", "exporter"}
# What `kubectl apply` (client side) can carry: the object goes into an annotation.
APPLY_LIMIT = 262_144


def _render(tree: Path) -> list[dict[str, Any]]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed (it renders the kustomizations)")
    result = subprocess.run(
        [kubectl, "kustomize", str(tree)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return [d for d in yaml.safe_load_all(result.stdout) if d]


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[dict[str, Any]]]:
    return {tree.relative_to(KUBERNETES).as_posix(): _render(tree) for tree in TREES}


def _of(objects: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def _containers(objects: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any]]]:
    for o in objects:
        if o["kind"] in ("Deployment", "Job"):
            for container in o["spec"]["template"]["spec"]["containers"]:
                yield o["metadata"]["name"], container


def _settings_map(objects: list[dict[str, Any]]) -> dict[str, Any]:
    (settings,) = [
        o
        for o in objects
        if o["kind"] == "ConfigMap" and o["metadata"]["name"].startswith("ragpulse-settings")
    ]
    return settings


def test_there_is_a_base_and_an_overlay() -> None:
    assert (KUBERNETES / "base" / "kustomization.yaml").is_file()
    assert OVERLAYS, "no overlay under deploy/kubernetes/overlays/"


def test_every_part_is_rendered(rendered: dict[str, list[dict[str, Any]]]) -> None:
    for tree, objects in rendered.items():
        deployments = _of(objects, "Deployment")
        assert set(deployments) == {f"ragpulse-{role}" for role in ROLES}, tree
        for role in ROLES:
            args = deployments[f"ragpulse-{role}"]["spec"]["template"]["spec"]["containers"][0][
                "args"
            ]
            assert args[:4] == ["ragpulse", "run", "--role", role], tree
        (job,) = _of(objects, "Job").values()
        assert job["spec"]["template"]["spec"]["containers"][0]["args"] == ["ragpulse", "migrate"]
        assert "ragpulse-exporter" in _of(objects, "Service")
        assert len(_of(objects, "ServiceMonitor")) == 1
        assert set(_of(objects, "PodDisruptionBudget")) == {"ragpulse-consumer", "ragpulse-jobs"}
        # secrets by reference: the user creates the Secret, the manifests never hold one
        assert not _of(objects, "Secret"), tree


def test_every_object_passes_the_kubernetes_schemas(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    for tree, objects in rendered.items():
        for o in objects:
            if o["apiVersion"].startswith("monitoring.coreos.com/"):
                continue  # the operator's schemas: the next test
            for version in K8S_VERSIONS:
                try:
                    kubernetes_validate.validate(o, version, strict=True)
                except kubernetes_validate.ValidationError as exc:
                    pytest.fail(f"{tree}: {o['kind']} {o['metadata']['name']} ({version}): {exc}")


def test_the_kubernetes_schemas_are_strict(rendered: dict[str, list[dict[str, Any]]]) -> None:
    """The check above fails on a misspelled field, not only on a wrong type."""
    deployment = json.loads(json.dumps(_of(rendered["base"], "Deployment")["ragpulse-consumer"]))
    deployment["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, K8S_VERSIONS[-1], strict=True)


def _operator_validate(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    node = shutil.which("node")
    if node is None or not (CRD_SCHEMAS / "node_modules").is_dir():
        pytest.skip(f"node or the operator's schemas are missing: npm ci --prefix {CRD_SCHEMAS}")
    result = subprocess.run(
        [node, str(CRD_SCHEMAS / "validate.mjs")],
        input=json.dumps(objects),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return list(json.loads(result.stdout))


def test_servicemonitor_and_prometheusrules_pass_the_operator_schemas(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    for tree, objects in rendered.items():
        operator = [o for o in objects if o["apiVersion"].startswith("monitoring.coreos.com/")]
        assert {o["kind"] for o in operator} == {"ServiceMonitor", "PrometheusRule"}
        for result in _operator_validate(operator):
            assert result["error"] is None, f"{tree}: {result}"
    # and the same check rejects what the operator would
    broken = json.loads(json.dumps(_of(rendered["base"], "PrometheusRule")["ragpulse-quality"]))
    del broken["spec"]["groups"][0]["rules"][0]["expr"]
    wrong = json.loads(json.dumps(next(iter(_of(rendered["base"], "ServiceMonitor").values()))))
    wrong["spec"]["endpoints"][0]["interval"] = "15 seconds"
    errors = [r["error"] for r in _operator_validate([broken, wrong])]
    assert "expr" in errors[0]
    assert "interval" in errors[1]


def test_the_rendered_rules_are_exactly_the_shipped_rules(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    shipped = {
        f"ragpulse-{p.stem}": yaml.safe_load(p.read_text()) for p in sorted(RULES.glob("*.yml"))
    }
    for tree, objects in rendered.items():
        rules = _of(objects, "PrometheusRule")
        assert set(rules) == set(shipped), tree
        for name, rule in rules.items():
            assert rule["spec"] == {"groups": shipped[name]["groups"]}, f"{tree}: {name}"


def test_the_rendered_rules_pass_the_shipped_rule_tests(
    rendered: dict[str, list[dict[str, Any]]], tmp_path: Path
) -> None:
    """promtool's unit tests of the shipped rules, run on the rules the cluster gets."""
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.skip("promtool is not installed (Debian package `prometheus`)")
    (tmp_path / "rules").mkdir()
    for name, rule in _of(rendered["base"], "PrometheusRule").items():
        path = tmp_path / "rules" / f"{name.removeprefix('ragpulse-')}.yml"
        path.write_text(yaml.safe_dump(rule["spec"], sort_keys=False))
    shutil.copytree(RULE_TESTS, tmp_path / "tests")
    tests = sorted(str(p) for p in (tmp_path / "tests").glob("*_test.yml"))
    assert tests

    def run(test: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [promtool, "test", "rules", test], capture_output=True, text=True, timeout=300
        )

    # One promtool per file, two at a time: each is one busy core for up to ~13 s, and
    # the files are independent (test_rules.py splits the shipped ones the same way).
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(run, tests))
    for test, result in zip(tests, results, strict=True):
        assert result.returncode == 0, f"{test}:\n{result.stdout}{result.stderr}"


def test_the_rendered_dashboards_are_exactly_the_shipped_dashboards(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    shipped = {p.name: json.loads(p.read_text()) for p in sorted(DASHBOARDS.glob("*.json"))}
    for tree, objects in rendered.items():
        maps = [
            o
            for o in objects
            if o["kind"] == "ConfigMap" and o["metadata"]["labels"].get("grafana_dashboard") == "1"
        ]
        carried = {}
        for config_map in maps:
            assert config_map["metadata"]["annotations"]["grafana_folder"] == "ragpulse"
            assert len(json.dumps(config_map)) < APPLY_LIMIT, config_map["metadata"]["name"]
            for key, text in config_map["data"].items():
                carried[key] = json.loads(text)
        assert carried == shipped, tree


def test_the_generated_manifests_are_up_to_date() -> None:
    for path, text in generated_manifests.generated().items():
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.relative_to(ROOT)} is stale: run python dashboards/build.py"
        )


def test_settings_come_from_the_config_map_and_secrets_by_reference(
    rendered: dict[str, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    for tree, objects in rendered.items():
        settings = _settings_map(objects)
        assert not SECRET_SETTINGS & set(settings["data"]), tree
        for workload, container in _containers(objects):
            refs = [e["configMapRef"]["name"] for e in container["envFrom"]]
            assert refs == [settings["metadata"]["name"]], f"{tree}: {workload}"
            env = {e["name"]: e for e in container.get("env", [])}
            assert "RAGPULSE_DATABASE__URL" in env, workload
            for name, entry in env.items():
                assert name in SECRET_SETTINGS, f"{workload}: {name} belongs in the ConfigMap"
                assert "value" not in entry, f"{workload}: {name} is written in the manifest"
                assert entry["valueFrom"]["secretKeyRef"]["name"] == "ragpulse"
            for key in [k for k in os.environ if k.startswith("RAGPULSE_")]:
                monkeypatch.delenv(key)
            for key, value in settings["data"].items():
                monkeypatch.setenv(key, value)
            for name in env:  # what the Secret would hold
                monkeypatch.setenv(name, "postgresql+psycopg://u:p@db:5432/ragpulse")
            loaded = load_settings()  # unknown or malformed settings raise ConfigError
            assert loaded.exporter.host == "0.0.0.0"
            assert loaded.scheduler.shards > max(
                d["spec"]["replicas"] for d in _of(objects, "Deployment").values()
            ), f"{tree}: a jobs worker would be left without a shard"


def test_probes_ports_and_selectors_fit_together(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    for tree, objects in rendered.items():
        port = int(_settings_map(objects)["data"]["RAGPULSE_EXPORTER__PORT"])
        deployments = _of(objects, "Deployment")
        for name, deployment in deployments.items():
            spec = deployment["spec"]
            labels = spec["template"]["metadata"]["labels"]
            assert spec["selector"]["matchLabels"].items() <= labels.items(), name
            (container,) = spec["template"]["spec"]["containers"]
            assert container["ports"] == [{"name": "metrics", "containerPort": port}]
            assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
            assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}
        # every Service reaches pods of a Deployment, on the metrics port
        services = _of(objects, "Service")
        for name, service in services.items():
            selector = service["spec"]["selector"]
            assert any(
                selector.items() <= d["spec"]["template"]["metadata"]["labels"].items()
                for d in deployments.values()
            ), f"{tree}: Service {name} selects no pod"
            assert [p["targetPort"] for p in service["spec"]["ports"]] == ["metrics"]
        # the ServiceMonitor scrapes every role's Service (the rules sum over consumers)
        (monitor,) = _of(objects, "ServiceMonitor").values()
        wanted = monitor["spec"]["selector"]["matchLabels"].items()
        scraped = {n for n, s in services.items() if wanted <= s["metadata"]["labels"].items()}
        assert scraped == {f"ragpulse-{role}" for role in ROLES}, tree
        assert monitor["spec"]["endpoints"][0]["port"] == "metrics"
        assert monitor["spec"]["endpoints"][0]["honorLabels"] is True
        for name, budget in _of(objects, "PodDisruptionBudget").items():
            selected = budget["spec"]["selector"]["matchLabels"].items()
            pods = deployments[name]["spec"]["template"]["metadata"]["labels"].items()
            assert selected <= pods, f"{tree}: budget {name}"
            assert deployments[name]["spec"]["replicas"] > budget["spec"]["maxUnavailable"]


def test_consumer_replicas_equal_the_partitions(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    """Kafka gives a partition to one consumer of the group: more replicas idle (and are
    never ready), fewer are each given several partitions."""
    for tree, objects in rendered.items():
        consumer = _of(objects, "Deployment")["ragpulse-consumer"]
        partitions = int(consumer["metadata"]["annotations"]["ragpulse.dev/kafka-partitions"])
        assert consumer["spec"]["replicas"] == partitions, tree
        strategy = consumer["spec"]["strategy"]["rollingUpdate"]
        assert strategy["maxSurge"] == 0, "a surge consumer may get no partition"


def _mebibytes(quantity: str) -> float:
    units = {"Ki": 1 / 1024, "Mi": 1.0, "Gi": 1024.0}
    for suffix, factor in units.items():
        if quantity.endswith(suffix):
            return float(quantity.removesuffix(suffix)) * factor
    return float(quantity) / 2**20


def _cores(quantity: str) -> float:
    return float(quantity[:-1]) / 1000 if quantity.endswith("m") else float(quantity)


def test_every_container_requests_what_was_measured(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    """Requests and limits on every container; each process imports the service, whose
    measured peak RSS is 160-179 MB (benchmarks/RESULTS.md "Hot paths (issue 21)")."""
    for workload, container in _containers(rendered["base"]):
        requests, limits = container["resources"]["requests"], container["resources"]["limits"]
        assert _mebibytes(requests["memory"]) >= 179 * 10**6 / 2**20, workload
        assert _mebibytes(requests["memory"]) <= _mebibytes(limits["memory"]), workload
        assert _cores(requests["cpu"]) <= _cores(limits["cpu"]), workload


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code
    except OSError:
        return 0


def _command(container: dict[str, Any]) -> list[str]:
    """The container's command, run from this checkout."""
    args = list(container["args"])
    assert args[0] == "ragpulse"
    return [sys.executable, "-m", "ragpulse", *args[1:]]


def _wait_ready(container: dict[str, Any], port: int, process: subprocess.Popen[bytes]) -> None:
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while _get(base + container["readinessProbe"]["httpGet"]["path"]) != 200:
        assert process.poll() is None, f"{container['args']} exited"
        assert time.monotonic() < deadline, f"{container['args']} never became ready"
        time.sleep(0.5)
    assert _get(base + container["livenessProbe"]["httpGet"]["path"]) == 200


def _job_runs(port: int) -> dict[str, float]:
    """ragpulse_job_runs_total of one process, summed by status."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    runs: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("ragpulse_job_runs_total{"):
            status = line.split('status="', 1)[1].split('"', 1)[0]
            runs[status] = runs.get(status, 0.0) + float(line.rsplit(" ", 1)[1])
    return runs


@pytest.mark.timeout(300)
def test_the_migration_job_then_the_exporter_and_jobs_workers_run_as_the_manifests_say(
    rendered: dict[str, list[dict[str, Any]]], tmp_path: Path
) -> None:
    """With the pods' environment against an empty PostgreSQL database: the exporter exits
    asking for the migration (a pod restarts until the Job ran); the Job's command
    migrates; then the exporter and two jobs workers (sharing the jobs' shards) answer
    their liveness and readiness probes, and the workers run the jobs without an error."""
    objects = rendered["base"]
    (job,) = _of(objects, "Job").values()
    deployments = _of(objects, "Deployment")
    url = create_postgres_database("ragpulse_k8s")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAGPULSE_")}
    env.update(_settings_map(objects)["data"])
    env.update(RAGPULSE_DATABASE__URL=url, PYTHONPATH=str(ROOT))
    exporter = deployments["ragpulse-exporter"]["spec"]["template"]["spec"]["containers"][0]
    jobs = deployments["ragpulse-jobs"]["spec"]["template"]["spec"]["containers"][0]
    processes: list[tuple[dict[str, Any], int, subprocess.Popen[bytes]]] = []
    try:
        early = subprocess.run(
            _command(exporter), env=env, capture_output=True, text=True, timeout=120
        )
        assert early.returncode != 0
        assert "ragpulse migrate" in early.stderr
        migrate = subprocess.run(
            _command(job["spec"]["template"]["spec"]["containers"][0]),
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert migrate.returncode == 0, migrate.stderr
        for i, container in enumerate((exporter, jobs, jobs)):
            port = _free_port()  # each its own here; in a pod, the pod's own 9464
            with (tmp_path / f"{i}.log").open("wb") as log:
                process = subprocess.Popen(
                    _command(container),
                    env={**env, "RAGPULSE_EXPORTER__PORT": str(port)},
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
            processes.append((container, port, process))
        for container, port, process in processes:
            _wait_ready(container, port, process)
        deadline = time.monotonic() + 120  # the first runs start 5 s after start-up
        for _, port, process in processes[1:]:
            while not _job_runs(port).get("ok"):
                assert process.poll() is None, "a jobs worker exited"
                assert time.monotonic() < deadline, "no job ran"
                time.sleep(1)
        for i, (container, port, process) in enumerate(processes[1:], start=1):
            assert not _job_runs(port).get("error"), (tmp_path / f"{i}.log").read_text()
            _wait_ready(container, port, process)
    finally:
        for _, _, process in processes:
            process.terminate()
        for _, _, process in processes:
            process.wait(timeout=60)
        drop_postgres_database(url)


@pytest.mark.timeout(300)
def test_consumers_past_the_partitions_are_not_ready(
    rendered: dict[str, list[dict[str, Any]]], kafka_topics: KafkaTopics, postgres_url: str
) -> None:
    """Why consumer replicas = partitions: the consumer Deployment's command, with the pod's
    environment, on topics of 3 partitions (the base's annotation): 3 consumers are all
    ready; a 4th joins, holds no partition and one of the 4 answers /readyz with 503."""
    objects = rendered["base"]
    consumer = _of(objects, "Deployment")["ragpulse-consumer"]
    assert consumer["metadata"]["annotations"]["ragpulse.dev/kafka-partitions"] == "3"
    container = consumer["spec"]["template"]["spec"]["containers"][0]
    readyz = container["readinessProbe"]["httpGet"]["path"]
    healthz = container["livenessProbe"]["httpGet"]["path"]
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("RAGPULSE_")}
    base_env.update(_settings_map(objects)["data"])
    base_env.update(kafka_topics.env(postgres_url), PYTHONPATH=str(ROOT))
    ports: list[int] = []
    processes: list[subprocess.Popen[bytes]] = []

    def start() -> None:
        port = _free_port()
        env = {**base_env, "RAGPULSE_EXPORTER__PORT": str(port)}
        command = [sys.executable, "-m", "ragpulse", *container["args"][1:]]
        processes.append(subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL))
        ports.append(port)

    def ready() -> list[bool] | None:
        """Each consumer's readiness; None while one does not serve yet (not live)."""
        for process in processes:
            assert process.poll() is None, "a consumer exited"
        if any(_get(f"http://127.0.0.1:{port}{healthz}") != 200 for port in ports):
            return None
        return [_get(f"http://127.0.0.1:{port}{readyz}") == 200 for port in ports]

    def settle(want: int, timeout_s: float) -> list[bool]:
        """The readiness once every consumer is live and `want` of them are ready, 3
        polls in a row."""
        deadline, streak, states = time.monotonic() + timeout_s, 0, ready()
        while streak < 3 or states is None:
            assert time.monotonic() < deadline, f"ready: {states}, want {want}"
            time.sleep(1)
            states = ready()
            streak = streak + 1 if states is not None and sum(states) == want else 0
        return states

    try:
        for _ in range(3):
            start()
        assert settle(3, 120) == [True, True, True]
        start()
        states = settle(3, 120)
        assert sorted(states) == [False, True, True, True]
        idle = ports[states.index(False)]
        with pytest.raises(urllib.error.HTTPError) as answer:
            urllib.request.urlopen(f"http://127.0.0.1:{idle}{readyz}", timeout=5)
        checks = json.loads(answer.value.read())["checks"]
        assert checks["consumer"] == "no partition assigned", checks
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            process.wait(timeout=60)
