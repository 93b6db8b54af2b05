"""Plain values that YAML 1.1 converts silently (4:00:00, no, 0755, 3.10) must be quoted.

Premise: YAML 1.1 readers (PyYAML, many tools) turn 4:00:00 into 14400, no into false, 0755 into
493. Holds for: every Slurm release (no Slurm behaviour involved).
"""
from validator.rules.base import loader_check

ID = "yaml-ambiguous-scalar"
SEVERITY = "error"
SCOPE = "manifest"
DESCRIPTION = "Plain values that YAML 1.1 converts silently (4:00:00, no, 0755, 3.10) must be quoted."
GOOD = {"preset.yaml": None}
BAD = {"preset.yaml": ("replace", "min_version: \"22.05\"", "min_version: 22.10")}
check = loader_check(ID)
