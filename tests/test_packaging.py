"""The validator as users install it, away from this checkout.

The wheel is built from the tracked files alone (as an sdist would hold them), installed with its
dependencies into a fresh virtual environment, and run from a folder that holds only a copy of
presets/ and scripts/. The pre-commit hook is tried from another git repository. pip reaches only
the package registries (and its cache); nothing here is a test double.
"""
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT


def _tracked(*paths: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z", "--", *paths], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    return [p for p in out.split("\0") if p]


def _run(cmd, cwd, env=None, timeout=300):
    return subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel pip builds from the tracked pyproject.toml and validator/ (build isolation on)."""
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    for rel in _tracked("pyproject.toml", "validator", "scripts/smoke"):
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, src / rel)
    # "./src", not "src": a bare name is a requirement, and PyPI has a package called src.
    proc = _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", base / "dist", "./src"],
                cwd=base)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (built,) = (base / "dist").glob("*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """A fresh virtual environment with the wheel and its pinned dependencies from the registry."""
    venv = tmp_path_factory.mktemp("venv") / "venv"
    proc = _run([sys.executable, "-m", "venv", venv], cwd=venv.parent)
    assert proc.returncode == 0, proc.stderr
    proc = _run([venv / "bin" / "python", "-m", "pip", "install", "--quiet", wheel], cwd=venv.parent)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return venv


@pytest.fixture
def outside(tmp_path) -> Path:
    """A folder away from the checkout holding a copy of presets/ and scripts/ only."""
    for name in ("presets", "scripts"):
        shutil.copytree(ROOT / name, tmp_path / name)
    return tmp_path


def test_wheel_holds_every_tracked_file_under_validator_and_the_job_vocabulary(wheel):
    """validator/ whole, and the in-job package it takes the job's vocabulary from (scripts/smoke,
    installed as `smoke`)."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    assert {n for n in names if n.startswith("validator/")} == set(_tracked("validator"))
    assert {n for n in names if n.startswith("smoke/")} == {p.replace("scripts/", "", 1) for p in _tracked("scripts/smoke")}


def test_installed_wheel_validates_the_presets_outside_the_checkout(installed, outside):
    python = installed / "bin" / "python"
    where = _run([python, "-c", "import validator; print(validator.__file__)"], cwd=outside)
    assert where.stdout.strip().startswith(str(installed)), where.stdout + where.stderr
    proc = _run([installed / "bin" / "preset-validator", "--summary"], cwd=outside)
    assert (proc.returncode, proc.stdout) == (0, ""), proc.stdout + proc.stderr
    assert "clean" in proc.stderr
    # Bad input still fails there: the checks travel with the package.
    script = outside / "presets" / "gh200" / "train.sbatch"
    script.write_text(script.read_text().replace("#SBATCH --time=", "#SBATCH --tme=", 1))
    proc = _run([python, "-m", "validator", "presets/gh200"], cwd=outside)
    assert proc.returncode == 1 and "unknown sbatch option '--tme'" in proc.stdout, proc.stdout + proc.stderr


def test_pre_commit_hook_from_another_repository(outside, tmp_path_factory):
    """`pre-commit try-repo` builds the hook's environment the way a user's pre-commit does."""
    repo = outside
    for name in list((repo / "presets").iterdir()):
        if name.name != "gh200":
            shutil.rmtree(name)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"], [*git, "commit", "-qm", "presets"]):
        assert _run(cmd, cwd=repo).returncode == 0
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path_factory.mktemp("pre-commit-home"))}
    try_repo = [sys.executable, "-m", "pre_commit", "try-repo", ROOT, "validate-presets", "--all-files"]
    proc = _run(try_repo, cwd=repo, env=env)
    assert proc.returncode == 0 and "Passed" in proc.stdout, proc.stdout + proc.stderr
    script = repo / "presets" / "gh200" / "train.sbatch"
    script.write_text(script.read_text().replace("#SBATCH --time=", "#SBATCH --tme=", 1))
    assert _run(["git", "add", "-A"], cwd=repo).returncode == 0
    proc = _run(try_repo, cwd=repo, env=env)
    assert proc.returncode == 1 and "unknown sbatch option '--tme'" in proc.stdout, proc.stdout + proc.stderr
