"""The manifest must match the JSON Schema (draft 2020-12) shipped in validator/schema/.

Premise: every rule that reads the manifest needs the shape the schema states. Holds for: every
Slurm release (no Slurm behaviour involved).
"""
from __future__ import annotations

ID = "manifest-schema"
SEVERITY = "error"
SCOPE = "manifest"
DESCRIPTION = "preset.yaml must match validator/schema/preset.schema.json (unknown keys, types, required keys)."
GOOD = {"preset.yaml": None}
BAD = {"preset.yaml": ("replace", "schema_version: 1\n", "schema_version: 1\nsumary: typo\n")}
# Findings no suppression, --select or --ignore hides: the rules that need the manifest did not run.
SILENCEABLE = False


def check(target):
    """The schema errors the model found once (validator/schema_check.py), as findings."""
    preset = target.preset
    if preset is None:
        return
    for line, col, message in preset.schema_problems:
        yield preset.display, line, col, message
