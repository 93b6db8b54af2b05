"""A symbolic link that points outside the repository is refused, not followed.

Premise: a link out of the repository reads files nobody reviewed. Holds for: every Slurm release
(no Slurm behaviour involved).
"""
from validator.rules.base import loader_check

ID = "input-symlink-escape"
SEVERITY = "error"
SCOPE = "any"
DESCRIPTION = "A symbolic link that points outside the repository is refused, not followed."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": ("symlink", "/etc/hostname")}
check = loader_check(ID)
