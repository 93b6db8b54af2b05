"""The preset README mentions every environment variable the script sets (a 'PREFIX_*' mention covers a family).

Premise: a preset's README explains every variable its script sets. Holds for: every Slurm release
(no Slurm behaviour involved). Applies to presets only (needs a manifest): the presets' own
consistency, strict by construction.
"""
from validator.rules.base import TOPOLOGY_PREFIXES

ID = "xcheck-readme"
SEVERITY = "error"
SCOPE = "preset"
DESCRIPTION = "The preset README mentions every environment variable the script sets (a 'PREFIX_*' mention covers a family)."
GOOD = {"preset.yaml": None}
BAD = {"README.md": "# example\nNo settings listed.\n"}


import re


def check(target):
    preset, script = target.preset, target.script
    if script is None or preset.readme is None:
        return
    text = preset.readme.text
    families = set(re.findall(r"\b([A-Z][A-Z0-9]*_)\*", text))
    words = set(re.findall(r"\w+", text))  # once: a search per variable is quadratic on a large README
    reported = set()
    for a in script.shell.assignments:
        if not (a.exported or a.name.startswith(TOPOLOGY_PREFIXES)) or a.name in reported:
            continue
        if a.name in words or any(a.name.startswith(f) for f in families):
            continue
        reported.add(a.name)
        yield (script.display, a.line, a.col, f"{a.name} is set here but README.md never mentions it")
