"""A file whose checking hit a bound (shellcheck's time or memory, YAML nesting) was not fully checked.

Premise: a check cut off at a bound checked nothing; saying so beats a silent pass. Holds for: every
Slurm release (no Slurm behaviour involved).
"""
from validator.rules.base import loader_check

ID = "input-too-complex"
SEVERITY = "error"
SCOPE = "any"
DESCRIPTION = ("Checking this file hit a bound (shellcheck's time or memory, README 'Bounds'; YAML nested over "
               "64 levels, bash over 400 syntax levels): it was not fully checked. Simplify it (deep nesting).")
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"preset.yaml": ("replace", "schema_version: 1\n", "schema_version: 1\nx: " + "[" * 100 + "]" * 100 + "\n")}
# Findings no suppression, --select or --ignore hides (what could not be read, or the suppressions themselves).
SILENCEABLE = False

_reported = loader_check(ID)  # by the YAML loader; the shellcheck runner reports its own bounds


def check(target):
    yield from _reported(target)
    script = target.script
    if script is not None and script.shell.too_deep:
        from validator.shell import MAX_DEPTH

        yield (script.display, 1, 1, f"nested more than {MAX_DEPTH} syntax levels deep: the rules did not "
                                     "look deeper (a real script nests a few dozen)")
