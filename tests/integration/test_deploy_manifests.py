"""deploy/ is checked by the tools made for each format, offline: compose's own JSON schema (as vendored by
check-jsonschema), the Kubernetes OpenAPI schemas in strict mode (kubernetes-validate), kustomize itself (kubectl's
built-in, when kubectl is on the machine) and hadolint for the Dockerfile. Then the properties the deployment relies
on: one migration step before the API, the API refusing to migrate, probes, limits, a hardened pod.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from dockerfile_parse import DockerfileParser
from kubernetes_validate.utils import latest_version

from tests.conftest import ROOT

DEPLOY = ROOT / "deploy"
K8S = DEPLOY / "k8s"
OVERLAY = DEPLOY / "overlays" / "example"
BOT = K8S / "slack-bot"
"""The Slack bot's component: an overlay adds it (`components:`), the base leaves it out."""
# The oldest Kubernetes the manifests promise to work on (autoscaling/v2 and policy/v1 are GA since 1.23), and the
# newest whose schemas kubernetes-validate ships.
KUBERNETES_VERSIONS = ("1.25.0", latest_version())
APP_UID = 10001


def _compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text())  # type: ignore[no-any-return]


REQUIRED = {"POSTGRES_PASSWORD": "s3cret-from-deploy-env"}
"""What compose needs to be given (`${NAME:?…}`): the values a user's deploy/.env holds."""


def _interpolate(value: Any) -> Any:
    """Compose's variable interpolation, with an environment holding only the required variables (REQUIRED)."""
    if isinstance(value, dict):
        return {key: _interpolate(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_interpolate(item) for item in value]
    if not isinstance(value, str):
        return value

    def substitute(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, required, _ = match.group(1).partition(":?")
        if required:
            return REQUIRED[name]
        _, _, default = match.group(1).partition(":-")
        return default

    return re.sub(r"\$\$|\$\{([^}]*)\}", substitute, value)


def _manifest_files() -> list[Path]:
    return sorted(path for path in K8S.glob("*.yaml") if path.name != "kustomization.yaml")


def _documents(text: str) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(text) if doc]


def _base_resources() -> list[dict[str, Any]]:
    return [doc for path in _manifest_files() for doc in _documents(path.read_text())]


def _bot_resources() -> list[dict[str, Any]]:
    return [
        doc
        for path in sorted(BOT.glob("*.yaml"))
        if path.name != "kustomization.yaml"
        for doc in _documents(path.read_text())
    ]


def _all_resources() -> list[dict[str, Any]]:
    """The base and the Slack bot's component: every workload a team may run."""
    return _base_resources() + _bot_resources()


def _one(kind: str, resources: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """The one resource of `kind` that belongs to the API (the Slack bot's Deployment, slack-bot.yaml, is another)."""
    (found,) = [
        doc
        for doc in (resources or _base_resources())
        if doc["kind"] == kind and doc["metadata"].get("labels", {}).get("app.kubernetes.io/component") != "slack-bot"
    ]
    return found


def _containers(resources: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(kind, pod spec, container) for every container of every workload."""
    for doc in resources:
        if doc["kind"] in ("Deployment", "Job"):
            pod = doc["spec"]["template"]["spec"]
            for container in pod["containers"] + pod.get("initContainers", []):
                yield doc["kind"], pod, container


def _validate_kubernetes(resources: list[dict[str, Any]]) -> None:
    for version in KUBERNETES_VERSIONS:
        for doc in resources:
            try:
                kubernetes_validate.validate(doc, version, strict=True)
            except kubernetes_validate.ValidationError as exc:
                pytest.fail(f"{doc['kind']}/{doc['metadata']['name']} is not valid for Kubernetes {version}: {exc}")


# --- compose -------------------------------------------------------------------------------------------------------


def test_compose_file_matches_the_compose_specification() -> None:
    """deploy/compose.yaml, interpolated as compose does, validates against compose-spec.json; a typo fails."""
    schema = json.loads((files("check_jsonschema.builtin_schemas.vendor") / "compose-spec.json").read_text())
    assert schema["title"] == "Compose Specification"
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    validator = validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)
    compose = _interpolate(_compose())
    errors = [f"{'/'.join(map(str, error.absolute_path))}: {error.message}" for error in validator.iter_errors(compose)]
    assert errors == []

    compose["services"]["api"]["deploy"]["replica"] = 2  # the schema is strict, so it catches a misspelt key
    assert not validator.is_valid(compose)


def test_compose_comes_up_with_only_a_password_given() -> None:
    """Every variable has a default but the database password, which compose requires (naming it) rather than
    shipping one; what compose builds and mounts exists."""
    variables = re.findall(r"\$\{([^}]*)\}", json.dumps(_compose()))
    assert variables
    required = {name.partition(":?")[0] for name in variables if ":?" in name}
    assert required == set(REQUIRED)
    assert [name for name in variables if ":-" not in name and ":?" not in name] == []
    assert all("POSTGRES_PASSWORD" in name.partition(":?")[2] for name in variables if ":?" in name)
    assert "worthit@db" not in (DEPLOY / "compose.yaml").read_text(), "no password in the file"
    compose = _interpolate(_compose())
    for service in compose["services"].values():
        if "build" in service:
            context = (DEPLOY / service["build"]["context"]).resolve()
            assert context == ROOT
            assert (context / service["build"]["dockerfile"]).is_file()
    named = set(compose["volumes"])
    for service in compose["services"].values():
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0]
            assert source in named or source.startswith((".", "/")), volume


def test_compose_migrates_once_before_two_api_replicas() -> None:
    """migrate (`worthit migrate`) waits for a healthy database; the API waits for both and never migrates."""
    services = _interpolate(_compose())["services"]
    db, migrate, api = services["db"], services["migrate"], services["api"]

    assert "pg_isready" in " ".join(db["healthcheck"]["test"])
    assert any(volume.endswith(":/var/lib/postgresql/data") for volume in db["volumes"])

    assert migrate["command"] == ["worthit", "migrate"]
    assert migrate["restart"] == "no"
    assert migrate["depends_on"] == {"db": {"condition": "service_healthy"}}

    assert api["deploy"]["replicas"] == 2
    assert "container_name" not in api, "a fixed container name allows one replica only"
    assert api["depends_on"]["db"] == {"condition": "service_healthy"}
    assert api["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}
    assert api["environment"]["WORTHIT_MIGRATE_ON_START"] == "0"
    assert api.get("command") in (None, ["worthit", "serve"])
    assert migrate["image"] == api["image"]
    for service in (migrate, api):
        assert service["environment"]["WORTHIT_DATABASE_URL"].startswith("postgresql://")
        assert "@db:5432/" in service["environment"]["WORTHIT_DATABASE_URL"]
        assert service["environment"]["WORTHIT_REQUIRE_AUTH"] == "1"

    # No fixed host port: each replica gets a free one, and two replicas never compete for the same.
    (published,) = api["ports"]
    host_ip, host_port, container_port = published.split(":")
    assert (host_ip, host_port, container_port) == ("127.0.0.1", "", "8000")


def test_compose_limits_every_service_as_the_pods_are() -> None:
    """Memory and CPU limits on every service; an API replica gets the API pod's 512 MiB."""
    services = _interpolate(_compose())["services"]
    for name, service in services.items():
        assert service.get("mem_limit"), name
        assert 0 < float(service["cpus"]) <= 1, name
    pod = _one("Deployment")["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]
    assert (services["api"]["mem_limit"], pod["memory"]) == ("512m", "512Mi")
    assert services["db"]["environment"]["POSTGRES_PASSWORD"] == REQUIRED["POSTGRES_PASSWORD"]


# --- Kubernetes ----------------------------------------------------------------------------------------------------


def test_network_policies_let_only_the_ingress_and_the_bot_reach_the_api() -> None:
    """Every component's pods are selected by a NetworkPolicy that denies by default in both directions; the API
    takes 8000 from the ingress namespace and the Slack bot only, and reaches DNS and PostgreSQL only."""
    policies = {doc["metadata"]["name"]: doc for doc in _all_resources() if doc["kind"] == "NetworkPolicy"}
    components = {
        doc["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"]
        for doc in _all_resources()
        if doc["kind"] in ("Deployment", "Job")
    }
    selected = {
        policy["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] for policy in policies.values()
    }
    assert selected == components == {"api", "slack-bot", "migrate"}
    for policy in policies.values():
        assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"]
    api = policies["worthit-api"]["spec"]
    (rule,) = api["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": 8000}]
    sources = [next(iter(peer)) for peer in rule["from"]]
    assert sources == ["namespaceSelector", "podSelector"]
    assert rule["from"][1]["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "slack-bot"
    egress_ports = sorted(port["port"] for egress in api["egress"] for port in egress["ports"])
    assert egress_ports == [53, 53, 5432]
    assert "ingress" not in policies["worthit-slack-bot"]["spec"]
    assert "ingress" not in policies["worthit-migrate"]["spec"]
    container_port = _one("Deployment")["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"]
    assert container_port == 8000


def test_kustomization_lists_every_manifest() -> None:
    kustomization = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert kustomization["kind"] == "Kustomization"
    assert sorted(kustomization["resources"]) == sorted(path.name for path in _manifest_files())
    assert {path.name for path in _manifest_files()} >= {
        "deployment.yaml",
        "service.yaml",
        "migrate-job.yaml",
        "hpa.yaml",
        "secret.example.yaml",
    }


def test_kubernetes_manifests_match_the_kubernetes_schemas() -> None:
    """Every manifest validates strictly (no unknown fields) on the oldest and newest Kubernetes we aim at."""
    resources = _all_resources()
    assert {doc["kind"] for doc in resources} >= {"Deployment", "Service", "Job", "HorizontalPodAutoscaler", "Secret"}
    _validate_kubernetes(resources)

    deployment = _one("Deployment", resources)
    deployment["spec"]["template"]["spec"]["containers"][0]["readinessprobe"] = deployment["spec"]["template"]["spec"][
        "containers"
    ][0].pop("readinessProbe")
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSIONS[-1], strict=True)


def _kustomize(directory: Path) -> list[dict[str, Any]]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl (with its built-in kustomize) is not installed")
    result = subprocess.run([kubectl, "kustomize", str(directory)], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    return _documents(result.stdout)


def test_kustomize_builds_the_base_into_valid_manifests() -> None:
    built = _kustomize(K8S)
    assert len(built) == len(_base_resources())
    _validate_kubernetes(built)
    for doc in built:
        assert doc["metadata"]["labels"]["app.kubernetes.io/part-of"] == "worthit"


def test_the_example_overlay_builds_with_the_teams_values(tmp_path: Path) -> None:
    """The overlay in deploy/overlays/example (shown in deploy/README.md) sets namespace, image, secret and sizes."""
    copy = tmp_path / "deploy"
    shutil.copytree(K8S, copy / "k8s")
    shutil.copytree(OVERLAY, copy / "overlays" / "example")
    overlay = copy / "overlays" / "example"
    (overlay / "secrets.env").write_text(
        "database-url=postgresql://team:s3cret@pg.team.internal:5432/worthit\nslack-signing-secret=abc\napi-token=\n"
    )
    # As deploy/README.md's steps say: the team's overlay names its own secrets.env instead of the placeholders.
    kustomization = overlay / "kustomization.yaml"
    assert "      - secrets.env.example\n" in kustomization.read_text()
    kustomization.write_text(kustomization.read_text().replace("- secrets.env.example\n", "- secrets.env\n"))
    built = _kustomize(overlay)
    _validate_kubernetes(built)
    assert {doc["metadata"].get("namespace") for doc in built} == {"worthit"}
    secret = _one("Secret", built)
    assert "stringData" not in secret, "the overlay replaces the placeholder Secret"
    assert secret["data"]["slack-signing-secret"] == "YWJj"
    images = {container["image"] for _, _, container in _containers(built)}
    assert images == {"registry.example.com/platform/worthit:0.1.0"}
    assert _one("ConfigMap", built)["data"]["WORTHIT_PUBLIC_URL"] == "https://worthit.example.com"
    assert _one("ConfigMap", built)["data"]["WORTHIT_TRUSTED_PROXIES"] == "10.244.0.0/16"
    assert _one("HorizontalPodAutoscaler", built)["spec"]["maxReplicas"] == 3


def test_the_example_overlay_builds_as_its_comment_says() -> None:
    """`kubectl kustomize deploy/overlays/example`, in place, as its first lines say: placeholders for the Secret,
    and no Slack bot (it would exit 2 on the empty tokens and restart in a loop)."""
    comment = (OVERLAY / "kustomization.yaml").read_text().splitlines()[1]
    assert "`kubectl kustomize deploy/overlays/example`" in comment
    built = _kustomize(OVERLAY)
    _validate_kubernetes(built)
    assert "slack-bot" not in {doc["metadata"]["labels"].get("app.kubernetes.io/component") for doc in built}
    secret = _one("Secret", built)
    assert base64.b64decode(secret["data"]["database-url"]).decode().startswith("postgresql://worthit:CHANGE-ME@")


def test_the_slack_bot_is_a_component_an_overlay_adds(tmp_path: Path) -> None:
    """The base deploys no bot; the example overlay with its commented `components:` lines turned on deploys the bot,
    its network policy, the overlay's image and namespace, and the bot's Secret keys."""
    base = _kustomize(K8S)
    assert not [doc for doc in base if "slack-bot" in doc["metadata"]["name"]]
    copy = tmp_path / "deploy"
    shutil.copytree(K8S, copy / "k8s")
    shutil.copytree(OVERLAY, copy / "overlays" / "example")
    kustomization = copy / "overlays" / "example" / "kustomization.yaml"
    text = kustomization.read_text()
    assert "# components:\n#   - ../../k8s/slack-bot\n" in text
    kustomization.write_text(
        text.replace("# components:\n#   - ../../k8s/slack-bot\n", "components:\n  - ../../k8s/slack-bot\n")
    )
    built = _kustomize(copy / "overlays" / "example")
    _validate_kubernetes(built)
    bot = [doc for doc in built if doc["metadata"]["labels"].get("app.kubernetes.io/component") == "slack-bot"]
    assert sorted((doc["kind"], doc["metadata"]["name"]) for doc in bot) == [
        ("Deployment", "worthit-slack-bot"),
        ("NetworkPolicy", "worthit-slack-bot"),
    ]
    for doc in bot:
        assert doc["metadata"]["namespace"] == "worthit"
        assert doc["metadata"]["labels"]["app.kubernetes.io/part-of"] == "worthit"
    (container,) = next(doc for doc in bot if doc["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "registry.example.com/platform/worthit:0.1.0"
    assert len(built) == len(_kustomize(OVERLAY)) + 2


def test_the_compose_settings_table_agrees_with_compose_yaml() -> None:
    """deploy/README.md's table of compose settings gives each variable the default compose.yaml gives it: a value
    for `${NAME:-value}`, "required" for `${NAME:?…}` (no password ships), "unset" for a bare pass-through."""
    readme = (DEPLOY / "README.md").read_text()
    table = readme.split("Settings come from the shell or from an `.env` file in `deploy/`", 1)[1].split("\n\n")[1]
    compose = (DEPLOY / "compose.yaml").read_text()
    checked = 0
    for row in table.splitlines()[2:]:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        names = re.findall(r"`([A-Z_]+)`", cells[0])
        if len(names) != 1:
            continue  # a row for several settings "as in Settings"
        (name,) = names
        required = re.search(rf"\$\{{{name}:\?", compose)
        default = re.search(rf"\$\{{{name}:-([^}}]*)\}}", compose)
        if required:
            assert cells[1] == "required", (name, cells[1])
        elif default:
            assert cells[1] == f"`{default[1]}`", (name, cells[1])
        else:
            assert re.search(rf"^\s+{name}:\s*$", compose, re.MULTILINE), name
            assert cells[1] == "unset", (name, cells[1])
        checked += 1
    assert checked >= 4


def test_the_trusted_proxy_setting_is_documented_for_the_ingress() -> None:
    """Behind an ingress every client shares the controller's address: the base names the setting (empty, for the
    overlay to fill) and the example overlay's value is one the server accepts."""
    from worthit.service.settings import Settings

    base = (K8S / "configmap.yaml").read_text()
    assert _one("ConfigMap")["data"]["WORTHIT_TRUSTED_PROXIES"] == ""
    assert "ingress" in base.split("WORTHIT_TRUSTED_PROXIES")[0].rsplit("\n  WORTHIT_", 1)[-1]
    overlay = yaml.safe_load((OVERLAY / "kustomization.yaml").read_text())
    (literal,) = [
        item for item in overlay["configMapGenerator"][0]["literals"] if item.startswith("WORTHIT_TRUSTED_PROXIES=")
    ]
    value = literal.partition("=")[2]
    assert Settings(trusted_proxies=value).trusted_proxy_networks == ["10.244.0.0/16"]


def test_the_readme_shows_the_example_overlay_as_it_is() -> None:
    readme = (DEPLOY / "README.md").read_text()
    assert (OVERLAY / "kustomization.yaml").read_text().strip() in readme
    assert (OVERLAY / ".gitignore").read_text().split() == ["secrets.env"]


def test_the_api_pods_are_probed_sized_and_locked_down() -> None:
    resources = _all_resources()
    deployment = _one("Deployment", resources)
    assert deployment["spec"]["replicas"] == 2
    pod = deployment["spec"]["template"]["spec"]
    (api,) = pod["containers"]
    assert api["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert api["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert api["command"][:2] == ["worthit", "serve"]
    assert pod["terminationGracePeriodSeconds"] > 10, "longer than uvicorn's graceful shutdown"

    for kind, pod_spec, container in _containers(resources):
        where = f"{kind}/{container['name']}"
        assert pod_spec["securityContext"]["runAsNonRoot"] is True, where
        assert pod_spec["securityContext"]["runAsUser"] == APP_UID, where
        assert pod_spec["automountServiceAccountToken"] is False, where
        security = container["securityContext"]
        assert security["readOnlyRootFilesystem"] is True, where
        assert security["allowPrivilegeEscalation"] is False, where
        assert security["capabilities"]["drop"] == ["ALL"], where
        assert set(container["resources"]["requests"]) >= {"cpu", "memory"}, where
        assert set(container["resources"]["limits"]) >= {"cpu", "memory"}, where
        tmp = [mount for mount in container["volumeMounts"] if mount["mountPath"] == "/tmp"]
        assert tmp, f"{where}: a read-only root needs a writable /tmp"
        volumes = {volume["name"]: volume for volume in pod_spec["volumes"]}
        assert "emptyDir" in volumes[tmp[0]["name"]], where
        env = {item["name"]: item for item in container["env"]}
        if container["name"] == "slack-bot":
            # A client of the API: its address and a token, never the database.
            assert "WORTHIT_DATABASE_URL" not in env, where
            assert "envFrom" not in container, where
            assert container["command"] == ["worthit", "slack-bot"], where
            assert env["WORTHIT_URL"]["value"] == "http://worthit", where
            continue
        assert container["envFrom"] == [{"configMapRef": {"name": "worthit-config"}}], where
        database = env["WORTHIT_DATABASE_URL"]
        assert database["valueFrom"]["secretKeyRef"] == {"name": "worthit", "key": "database-url"}, where


def test_the_job_migrates_and_the_api_does_not() -> None:
    resources = _base_resources()
    config = _one("ConfigMap", resources)["data"]
    assert config["WORTHIT_MIGRATE_ON_START"] == "0"
    assert config["WORTHIT_REQUIRE_AUTH"] == "1"
    job = _one("Job", resources)
    (container,) = job["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["worthit", "migrate"]
    assert job["spec"]["template"]["spec"]["restartPolicy"] in ("OnFailure", "Never")


def test_service_hpa_and_budget_point_at_the_api_pods() -> None:
    resources = _base_resources()
    deployment = _one("Deployment", resources)
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert deployment["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    service = _one("Service", resources)
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert service["spec"]["ports"][0]["targetPort"] == "http"
    budget = _one("PodDisruptionBudget", resources)
    assert budget["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    hpa = _one("HorizontalPodAutoscaler", resources)
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "worthit"}
    assert hpa["spec"]["minReplicas"] >= 2
    # Each pod may hold 20 PostgreSQL connections; the ceiling keeps the total under PostgreSQL's default 100.
    assert hpa["spec"]["maxReplicas"] * 20 + 1 < 100


def test_the_secret_template_holds_placeholders_for_every_key_the_pods_read() -> None:
    resources = _all_resources()
    secret = _one("Secret", resources)
    assert set(secret["stringData"]) == {
        "database-url",
        "slack-signing-secret",
        "link-secret",
        "api-token",
        "slack-app-token",
        "slack-bot-token",
        "slack-bot-api-token",
    }
    assert "CHANGE-ME" in secret["stringData"]["database-url"]
    referenced = {
        item["valueFrom"]["secretKeyRef"]["key"]
        for _, _, container in _containers(resources)
        for item in container["env"]
        if "secretKeyRef" in item.get("valueFrom", {})
    }
    assert referenced <= set(secret["stringData"])
    example = (OVERLAY / "secrets.env.example").read_text()
    assert {line.split("=", 1)[0] for line in example.splitlines() if line} == set(secret["stringData"])


# --- the image -----------------------------------------------------------------------------------------------------


def _dockerfile() -> DockerfileParser:
    return DockerfileParser(path=str(DEPLOY / "Dockerfile"), env_replace=True)


def test_hadolint_finds_nothing_in_the_dockerfile() -> None:
    hadolint = Path(sys.executable).with_name("hadolint")
    if not hadolint.exists():
        hadolint = Path(shutil.which("hadolint") or "hadolint")
    result = subprocess.run(
        [str(hadolint), "--no-color", "--format", "json", "--failure-threshold", "style", str(DEPLOY / "Dockerfile")],
        capture_output=True,
        text=True,
        check=False,
        env={key: value for key, value in os.environ.items() if not key.startswith("HADOLINT_")},
    )
    assert json.loads(result.stdout or "[]") == [], result.stdout
    assert result.returncode == 0, result.stderr


def test_the_image_is_multi_stage_slim_non_root_and_health_checked() -> None:
    parser = _dockerfile()
    stages = [item["value"] for item in parser.structure if item["instruction"] == "FROM"]
    assert len(stages) >= 2
    assert stages[0].endswith(" AS builder")
    assert parser.is_multistage
    assert re.fullmatch(r"python:3\.11-slim(-\w+)?", parser.baseimage), "the runtime is a slim Python"

    runtime = parser.structure[
        max(index for index, item in enumerate(parser.structure) if item["instruction"] == "FROM") :
    ]
    runtime_commands = " ".join(item["value"] for item in runtime if item["instruction"] == "RUN")
    for tool in ("gcc", "build-essential", "apt-get install", "pip install", "curl"):
        assert tool not in runtime_commands, f"{tool} in the runtime stage"
    assert any(
        item["instruction"] == "COPY" and item["value"].startswith("--from=builder /opt/worthit") for item in runtime
    )

    users = [item["value"] for item in runtime if item["instruction"] == "USER"]
    assert users, "the runtime stage sets a USER"
    user = users[-1].split(":")[0]
    assert user not in ("root", "0")
    assert user == str(APP_UID), "the same uid the Kubernetes manifests run as"

    (healthcheck,) = [item["value"] for item in runtime if item["instruction"] == "HEALTHCHECK"]
    assert '"python"' in healthcheck
    assert "/healthz" in healthcheck

    env = parser.envs
    assert env["WORTHIT_HOST"] == "0.0.0.0"
    assert env["WORTHIT_PORT"] == "8000"
    assert env["WORTHIT_REQUIRE_AUTH"] == "1"
    (command,) = [item["value"] for item in runtime if item["instruction"] == "CMD"]
    assert json.loads(command) == ["worthit", "serve"]


def test_the_healthcheck_command_is_valid_python() -> None:
    (healthcheck,) = [item["value"] for item in _dockerfile().structure if item["instruction"] == "HEALTHCHECK"]
    exec_form = json.loads(healthcheck.split("CMD", 1)[1])
    assert exec_form[:2] == ["python", "-c"]
    compile(exec_form[2], "<healthcheck>", "exec")


def test_the_build_context_leaves_out_what_the_image_does_not_need() -> None:
    ignored = {line.strip() for line in (ROOT / ".dockerignore").read_text().splitlines()}
    assert {".venv", ".git", "*.db", ".pytest_cache", ".hypothesis", ".mypy_cache", ".ruff_cache"} <= ignored
    copies = [item["value"].split() for item in _dockerfile().structure if item["instruction"] == "COPY"]
    sources = [source for copy in copies if not copy[0].startswith("--from") for source in copy[:-1]]
    assert "service" in sources
    for source in sources:
        assert source not in ignored
        assert (ROOT / source).exists(), source
