"""Helpers shared by rule modules."""
from __future__ import annotations

from validator.model import Target


def loader_check(rule_id: str):
    """A `check` that reports what the file readers and the YAML loader found under `rule_id`.

    Reading happens before any rule runs (a file that cannot be read cannot be checked), so these
    rules only surface those findings; they exist so that every id has a module, a description and
    examples.
    """
    def check(target: Target):
        for finding in getattr(target, "load_problems", []):
            if finding.rule == rule_id:
                yield finding
    return check


def script_files(target: Target):
    if target.script is not None:
        yield target.script
