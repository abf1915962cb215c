"""What `pip install` of the built wheel claims: only the `worthit` import package and the `worthit` command, and
for the core install (what the PR gate installs) none of the server's or the columnar reader's dependencies."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

from tests.harness import IN_CI
from tests.layering import FOLDERS, ROOT

SOURCES = ("pyproject.toml", "README.md", *FOLDERS)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from a clean copy of the sources (no stale build/ directory can leak into it)."""
    source = tmp_path_factory.mktemp("source")
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(ROOT / name, source / name)
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", str(out), str(source)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (built,) = out.glob("worthit-*.whl")
    return built


def test_the_wheel_holds_only_the_worthit_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/")[0] for name in names} == {"worthit", f"{wheel.name.split('-py3')[0]}.dist-info"}
    record = next(name for name in names if name.endswith(".dist-info/RECORD"))
    rows = zipfile.ZipFile(wheel).read(record).decode().splitlines()
    assert all(row.startswith(("worthit/", "worthit-")) for row in rows)
    assert "worthit/service/gate/command.py" in names
    assert "worthit/rules/policies/default.toml" in names
    assert "worthit/migrations/versions/" in {name.rsplit("/", 1)[0] + "/" for name in names}
    entry_points = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("entry_points.txt"))).decode()
    assert entry_points.split() == ["[console_scripts]", "worthit", "=", "worthit.service.cli:main"]


def test_a_fresh_venv_gets_worthit_and_nothing_generic(wheel: Path, tmp_path: Path) -> None:
    """Installed (--no-deps) into a fresh venv: `worthit.rules` is importable, `rules` and `service` are not."""
    env = tmp_path / "venv"
    venv.create(env, with_pip=False)
    python = env / "bin" / "python"
    scripts_before = set((env / "bin").iterdir())
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--quiet", str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    assert {path.name for path in set((env / "bin").iterdir()) - scripts_before} == {"worthit"}
    probe = (
        "import importlib.util as u; "
        "print([n for n in ('worthit.rules', 'worthit.service.gate', 'worthit.migrations', 'rules', 'service', "
        "'migrations') if u.find_spec(n) is not None])"
    )
    found = subprocess.run([str(python), "-c", probe], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "['worthit.rules', 'worthit.service.gate', 'worthit.migrations']"


def test_pyproject_lists_every_package_folder() -> None:
    """[tool.setuptools] packages names every folder setuptools would see as a package (one with an __init__.py, or
    one holding only data such as service/templates), and nothing else."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    folders = {
        ".".join([FOLDERS[top], *folder.relative_to(ROOT / top).parts])
        for top in FOLDERS
        for folder in [ROOT / top, *(ROOT / top).rglob("*")]
        if folder.is_dir() and folder.name != "__pycache__" and any(path.is_file() for path in folder.iterdir())
    }
    assert set(config["packages"]) == folders
    assert config["package-dir"] == {package: folder for folder, package in FOLDERS.items()}


# What the core install must not pull in: a web framework, a database layer or driver, the columnar engine.
HEAVY = {"litestar", "sqlalchemy", "alembic", "aiosqlite", "asyncpg", "uvicorn", "polars", "jinja2", "slack-bolt"}
PROPOSAL = '{"target": "attention_softmax", "p": 0.21, "k": 10, "baseline_ms": 100, "cost_weeks": 3}'


@pytest.fixture(scope="module")
def core(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed as the gate's action installs it: no extras, dependencies resolved by
    pip from its configured index (a machine that cannot reach one skips, except under CI)."""
    env = tmp_path_factory.mktemp("core") / "venv"
    venv.create(env, with_pip=False)
    python = env / "bin" / "python"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", str(wheel)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        if IN_CI:
            pytest.fail(f"pip cannot install the core wheel: {done.stderr}")
        pytest.skip(f"pip cannot install the wheel's dependencies here: {done.stderr.strip().splitlines()[-1:]}")
    return env


def test_the_core_install_pulls_no_server_and_no_polars(core: Path) -> None:
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(core / "bin" / "python"), "list", "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    installed = {row["name"].lower().replace("_", "-") for row in json.loads(listed.stdout)}
    assert {"worthit", "msgspec", "pyyaml", "httpx"} <= installed
    assert installed & HEAVY == set()


def test_the_core_install_reviews_offline_and_names_the_extra_a_command_needs(core: Path, tmp_path: Path) -> None:
    """`review` and `--version` run on the core; `serve` says in one line which extra it needs (exit 2); `profile`
    reads a kernel trace with the exact reader and says how to get the columnar one."""
    (tmp_path / "proposal.json").write_text(PROPOSAL, encoding="utf-8")

    def worthit(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(core / "bin" / "worthit"), *argv], cwd=tmp_path, capture_output=True, text=True, timeout=120
        )

    assert worthit("--version").stdout == "worthit 0.1.0\n"
    review = worthit("review", "proposal.json")
    assert (review.returncode, review.stderr) == (0, "")
    assert review.stdout.startswith("verdict: fund\n")
    serve = worthit("serve")
    assert (serve.returncode, serve.stderr) == (
        2,
        "worthit serve needs the server extra: pip install 'worthit[server]'\n",
    )
    profile = worthit("profile", str(ROOT / "tests/data/profiles/seed_part2/kernel_trace.csv"))
    assert (profile.returncode, profile.stderr) == (0, "")
    assert "pip install 'worthit[profiles]'" in profile.stdout
