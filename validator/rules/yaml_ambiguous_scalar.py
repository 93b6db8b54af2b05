"""Plain values that YAML 1.1 converts silently (4:00:00, no, 0755, 3.10) must be quoted."""
from validator.rules.base import loader_check

ID = "yaml-ambiguous-scalar"
SEVERITY = "error"
SCOPE = "manifest"
DESCRIPTION = "Plain values that YAML 1.1 converts silently (4:00:00, no, 0755, 3.10) must be quoted."
GOOD = {"preset.yaml": None}
BAD = {"preset.yaml": ("replace", "min_version: \"22.05\"", "min_version: 22.10")}
check = loader_check(ID)
