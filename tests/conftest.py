import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"


def run_validator(*args, cwd=ROOT, env=None, prefix=()):
    """The CLI as a user runs it, in its own process (prefix: a wrapper command, e.g. setpriv)."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([*prefix, sys.executable, "-m", "validator", *args], cwd=cwd, env=full_env,
                          capture_output=True, text=True, timeout=120)


def edited_preset(tmp_path, name, edits, into=None):
    """A copy of presets/<name> under tmp_path with text replacements applied to its files.

    edits: {filename: [(old, new), ...]}; every old text must exist, so a stale edit fails loudly.
    """
    src = ROOT / "presets" / name
    dst = (into or tmp_path) / name
    dst.mkdir(parents=True)
    for path in src.iterdir():
        text = path.read_text()
        for old, new in edits.get(path.name, []):
            assert old in text, f"edit target missing in {path.name}: {old!r}"
            text = text.replace(old, new, 1)
        (dst / path.name).write_text(text)
    return dst
