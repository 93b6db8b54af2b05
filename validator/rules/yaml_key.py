"""Mapping keys must be plain strings, not lists or mappings.

Premise: a key that is a list or mapping has no meaning in the schema and breaks readers. Holds for:
every Slurm release (no Slurm behaviour involved).
"""
from validator.rules.base import loader_check

ID = "yaml-key"
SEVERITY = "error"
SCOPE = "manifest"
DESCRIPTION = "Mapping keys must be plain strings, not lists or mappings."
GOOD = {"preset.yaml": None}
BAD = {"preset.yaml": ("replace", "schema_version: 1\n", "schema_version: 1\n? [a, b]\n: 1\n")}
# Findings no suppression, --select or --ignore hides (what could not be read, or the suppressions themselves).
SILENCEABLE = False
check = loader_check(ID)
