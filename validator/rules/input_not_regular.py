"""A path that is not a regular file (a folder, a FIFO, a device) is refused.

Premise: a folder, FIFO or device is no script; reading a FIFO could block. Holds for: every Slurm
release (no Slurm behaviour involved).
"""
from validator.rules.base import loader_check

ID = "input-not-regular"
SEVERITY = "error"
SCOPE = "any"
DESCRIPTION = "A path that is not a regular file (a folder, a FIFO, a device) is refused."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"preset.yaml": ("dir",)}
check = loader_check(ID)
