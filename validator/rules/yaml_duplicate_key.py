"""Duplicate keys: YAML readers silently keep the last one.

Premise: YAML readers keep the last of two equal keys without a word. Holds for: every Slurm release
(no Slurm behaviour involved).
"""
from validator.rules.base import loader_check

ID = "yaml-duplicate-key"
SEVERITY = "error"
SCOPE = "manifest"
DESCRIPTION = "Duplicate keys: YAML readers silently keep the last one."
GOOD = {"preset.yaml": None}
BAD = {"preset.yaml": ("replace", "schema_version: 1\n", "schema_version: 1\nschema_version: 1\n")}
# Findings no suppression, --select or --ignore hides (what could not be read, or the suppressions themselves).
SILENCEABLE = False
check = loader_check(ID)
