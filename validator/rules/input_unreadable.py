"""A file the validator must read is missing or unreadable.

Premise: a file that cannot be read cannot be checked; a silent pass would hide it. Holds for: every
Slurm release (no Slurm behaviour involved).
"""
from validator.rules.base import loader_check

ID = "input-unreadable"
SEVERITY = "error"
SCOPE = "any"
DESCRIPTION = "A file the validator must read is missing or unreadable."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"preset.yaml": ("missing",)}
check = loader_check(ID)
