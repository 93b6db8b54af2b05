"""Explicit YAML tags (!!python/..., !!int) are refused.

Premise: explicit tags make readers build objects (!!python/...) or convert types. Holds for: every
Slurm release (no Slurm behaviour involved).
"""
from validator.rules.base import loader_check

ID = "yaml-tag"
SEVERITY = "error"
SCOPE = "manifest"
DESCRIPTION = "Explicit YAML tags (!!python/..., !!int) are refused."
GOOD = {"preset.yaml": None}
BAD = {"preset.yaml": ("replace", "schema_version: 1\n", "schema_version: !!int 1\n")}
# Findings no suppression, --select or --ignore hides (what could not be read, or the suppressions themselves).
SILENCEABLE = False
check = loader_check(ID)
