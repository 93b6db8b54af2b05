"""An empty (or whitespace-only) file is not a preset file.

Premise: an empty file is no preset file (nothing to run or describe). Holds for: every Slurm
release (no Slurm behaviour involved).
"""
from validator.rules.base import loader_check

ID = "input-empty"
SEVERITY = "error"
SCOPE = "any"
DESCRIPTION = "An empty (or whitespace-only) file is not a preset file."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "\n\n"}
check = loader_check(ID)
