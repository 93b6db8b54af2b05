"""Anchors, aliases and merge keys are refused (alias bombs, hidden sharing).

Premise: anchors and merge keys allow alias bombs and hide sharing; the schema needs none.
Holds for: every Slurm release (no Slurm behaviour involved).
"""
from validator.rules.base import loader_check

ID = "yaml-alias"
SEVERITY = "error"
SCOPE = "manifest"
DESCRIPTION = "Anchors, aliases and merge keys are refused (alias bombs, hidden sharing)."
GOOD = {"preset.yaml": None}
BAD = {"preset.yaml": ("replace", "schema_version: 1\n", "schema_version: &v 1\nx: *v\n")}
# Findings no suppression, --select or --ignore hides (what could not be read, or the suppressions themselves).
SILENCEABLE = False
check = loader_check(ID)
