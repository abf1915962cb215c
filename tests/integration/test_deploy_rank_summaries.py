"""deploy/k8s/rank-summaries (an Indexed Job mapping each rank's trace to its summary, then a Job combining them)
and deploy/slurm (the same as an array job): validated as the rest of deploy/k8s is, and their commands run as
written — map then combine — on a generated run, giving the run's figures read from the raw traces, and with
what-if targets passed through (the pod's WORTHIT_WHAT_IF, the array job's arguments), the run's what-if joined
from the ranks' summaries: the one replaying the raw traces together gives."""

from __future__ import annotations

import gzip
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

import msgspec
import yaml

from tests.conftest import ROOT
from tests.integration.test_deploy_manifests import APP_UID, DEPLOY, _containers, _kustomize, _validate_kubernetes
from tests.unit.profiles.test_profiles_summary import run_traces
from worthit.rules.profiles import combine
from worthit.rules.profiles.kineto import parse_target, read_schedule, what_if
from worthit.service.cli import WHAT_IF_ENV, main

JOBS = DEPLOY / "k8s" / "rank-summaries"
SLURM = DEPLOY / "slurm"
BIN = Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin"
RANKS = 4
TARGET = "ampere*=2"


def _resources() -> list[dict[str, Any]]:
    return [doc for path in sorted(JOBS.glob("*-job.yaml")) for doc in yaml.safe_load_all(path.read_text()) if doc]


def _job(component: str) -> dict[str, Any]:
    (job,) = [d for d in _resources() if d["metadata"]["labels"]["app.kubernetes.io/component"] == component]
    return job


def _generated_run(root: Path) -> list[bytes]:
    traces = run_traces(RANKS, 2)
    (root / "traces").mkdir(parents=True)
    for rank, data in enumerate(traces):
        (root / "traces" / f"rank-{rank}.json.gz").write_bytes(gzip.compress(data))
    return traces


def _expected(traces: list[bytes]) -> Any:
    return msgspec.to_builtins(combine(traces, names=[f"rank-{r}.json.gz" for r in range(RANKS)]))


def _check_what_if(joined: Any, traces: list[bytes]) -> None:
    """The joined what-if's figures are those of the raw traces replayed together."""
    together = what_if(
        [read_schedule(data, f"rank-{r}.json.gz") for r, data in enumerate(traces)], [parse_target(TARGET)]
    )
    figures = ("measured_ns", "replayed_ns", "predicted_ns", "amdahl_ns")
    assert [joined[f] for f in figures] == [getattr(together, f) for f in figures]
    assert joined["lost_ns"] == msgspec.to_builtins(together.lost_ns)
    assert joined["targets"][0]["pattern"] == "ampere*"


def test_the_jobs_validate_and_the_kustomization_lists_them() -> None:
    resources = _resources()
    _validate_kubernetes(resources)
    kustomization = yaml.safe_load((JOBS / "kustomization.yaml").read_text())
    assert sorted(kustomization["resources"]) == sorted(p.name for p in JOBS.glob("*-job.yaml"))
    mapping = _job("rank-summaries")
    assert mapping["spec"]["completionMode"] == "Indexed"
    for _, pod, container in _containers(resources):
        assert pod["securityContext"]["runAsUser"] == APP_UID
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
        assert {m["mountPath"] for m in container["volumeMounts"]} == {"/data", "/tmp"}


def test_kustomize_builds_the_jobs() -> None:
    built = _kustomize(JOBS)
    assert len(built) == 2
    _validate_kubernetes(built)


def test_the_indexed_job_maps_each_rank_and_the_final_job_combines(tmp_path: Path) -> None:
    traces = _generated_run(tmp_path)
    (container,) = _job("rank-summaries")["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["worthit"]
    for rank in range(RANKS):  # what each pod runs, its completion index as RANK
        args = [a.replace("$(RANK)", str(rank)).replace("/data", str(tmp_path)) for a in container["args"]]
        assert main(args) == 0
    (combine_container,) = _job("combine-run")["spec"]["template"]["spec"]["containers"]
    script = combine_container["args"][0].replace("/data", str(tmp_path))
    lines = [line for line in script.splitlines() if line.startswith("worthit ")]
    assert "--upload" in lines[1]
    subprocess.run(["sh", "-c", f"set -e; PATH={shlex.quote(str(BIN))}:$PATH; {lines[0]}"], check=True)
    combined = msgspec.json.decode((tmp_path / "summaries" / "run.json").read_bytes())
    assert combined == _expected(traces)
    assert combined["barrier"]["straggler"] == 2


def test_the_indexed_job_passes_what_if_targets_through(tmp_path: Path, monkeypatch: Any) -> None:
    traces = _generated_run(tmp_path)
    (container,) = _job("rank-summaries")["spec"]["template"]["spec"]["containers"]
    (variable,) = [e for e in container["env"] if e["name"] == WHAT_IF_ENV]
    assert variable["value"] == ""  # none unless the run asks
    monkeypatch.setenv(WHAT_IF_ENV, TARGET + "\n")
    for rank in range(RANKS):
        args = [a.replace("$(RANK)", str(rank)).replace("/data", str(tmp_path)) for a in container["args"]]
        assert main(args) == 0
    (combine_container,) = _job("combine-run")["spec"]["template"]["spec"]["containers"]
    script = combine_container["args"][0].replace("/data", str(tmp_path))
    line = next(line for line in script.splitlines() if line.startswith("worthit "))
    subprocess.run(["sh", "-c", f"set -e; PATH={shlex.quote(str(BIN))}:$PATH; {line}"], check=True)
    combined = msgspec.json.decode((tmp_path / "summaries" / "run.json").read_bytes())
    _check_what_if(combined.pop("what_if"), traces)
    assert combined == _expected(traces)


def test_the_slurm_array_maps_each_rank_and_the_dependent_job_combines(tmp_path: Path) -> None:
    traces = _generated_run(tmp_path)
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    env.pop("WORTHIT_URL", None)
    for rank in range(RANKS):  # sbatch --array runs the script once per task id
        subprocess.run(
            ["bash", str(SLURM / "rank-summaries.sbatch"), str(tmp_path)],
            env={**env, "SLURM_ARRAY_TASK_ID": str(rank)},
            check=True,
        )
    subprocess.run(["bash", str(SLURM / "combine-run.sbatch"), str(tmp_path)], env=env, check=True)
    combined = msgspec.json.decode((tmp_path / "summaries" / "run.json").read_bytes())
    assert combined == _expected(traces)


def test_the_slurm_array_passes_what_if_targets_through(tmp_path: Path) -> None:
    traces = _generated_run(tmp_path)
    env = {**os.environ, "PATH": f"{BIN}:{os.environ['PATH']}"}
    env.pop("WORTHIT_URL", None)
    env.pop(WHAT_IF_ENV, None)
    for rank in range(RANKS):
        subprocess.run(
            ["bash", str(SLURM / "rank-summaries.sbatch"), str(tmp_path), TARGET],
            env={**env, "SLURM_ARRAY_TASK_ID": str(rank)},
            check=True,
        )
    subprocess.run(["bash", str(SLURM / "combine-run.sbatch"), str(tmp_path)], env=env, check=True)
    combined = msgspec.json.decode((tmp_path / "summaries" / "run.json").read_bytes())
    _check_what_if(combined.pop("what_if"), traces)
    assert combined == _expected(traces)
