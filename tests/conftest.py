import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"


def run_validator(*args, cwd=ROOT, env=None):
    """The CLI as a user runs it, in its own process."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", "validator", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def root():
    return ROOT
