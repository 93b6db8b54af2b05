"""A file whose checking hit a bound (shellcheck's time or memory, YAML nesting) was not fully checked."""
from validator.rules.base import loader_check

ID = "input-too-complex"
SEVERITY = "error"
SCOPE = "any"
DESCRIPTION = ("Checking this file hit a bound (shellcheck's time or memory, README 'Bounds'; YAML nested over "
               "64 levels): it was not fully checked. Simplify it (deep nesting).")
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"preset.yaml": ("replace", "schema_version: 1\n", "schema_version: 1\nx: " + "[" * 100 + "]" * 100 + "\n")}

# reported by the YAML loader and by the shellcheck runner (validator/shellcheck.py)
check = loader_check(ID)
