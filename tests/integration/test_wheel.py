"""What `pip install` of the built wheel claims: only the `worthit` import package and the `worthit` command."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import venv
import zipfile
from pathlib import Path

import pytest

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
    """[tool.setuptools] packages names every folder with an __init__.py, and nothing that is not one."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    folders = {
        ".".join([FOLDERS[top], *init.parent.relative_to(ROOT / top).parts])
        for top in FOLDERS
        for init in (ROOT / top).rglob("__init__.py")
    }
    assert set(config["packages"]) == folders
    assert config["package-dir"] == {package: folder for folder, package in FOLDERS.items()}
