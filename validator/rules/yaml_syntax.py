"""The manifest must be one well-formed YAML document.

Premise: a manifest that does not parse cannot be checked. Holds for: every Slurm release (no Slurm
behaviour involved).
"""
from validator.rules.base import loader_check

ID = "yaml-syntax"
SEVERITY = "error"
SCOPE = "manifest"
DESCRIPTION = "The manifest must be one well-formed YAML document."
GOOD = {"preset.yaml": None}
BAD = {"preset.yaml": "schema_version: 1\nname: [unclosed\n"}
# Findings no suppression, --select or --ignore hides (what could not be read, or the suppressions themselves).
SILENCEABLE = False
check = loader_check(ID)
