"""The manifest must be one well-formed YAML document."""
from validator.rules.base import loader_check

ID = "yaml-syntax"
SEVERITY = "error"
SCOPE = "manifest"
DESCRIPTION = "The manifest must be one well-formed YAML document."
GOOD = {"preset.yaml": None}
BAD = {"preset.yaml": "schema_version: 1\nname: [unclosed\n"}
check = loader_check(ID)
