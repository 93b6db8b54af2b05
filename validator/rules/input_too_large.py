"""A file over the size bound (256 KiB) is refused unread.

Premise: a preset file is a few KiB; 256 KiB and more is a mistake or an attack on the checker.
Holds for: every Slurm release (no Slurm behaviour involved).
"""
from validator.rules.base import loader_check

ID = "input-too-large"
SEVERITY = "error"
SCOPE = "any"
DESCRIPTION = "A file over the size bound (256 KiB) is refused unread."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n" + "# padding\n" * 30000}
check = loader_check(ID)
