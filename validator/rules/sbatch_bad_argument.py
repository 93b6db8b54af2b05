"""A stray word, a missing value or a value given to a flag in an #SBATCH line.

Premise: a word that is no option in an #SBATCH line, or a missing value, makes sbatch stop with
"Invalid directive found in batch script" (_opt_batch_script in src/sbatch/opt.c at slurm-22-05-0-1
and slurm-26-05-1-1). Holds for: 22.05-26.05.
"""
from validator.rules.base import option_check

ID = "sbatch-bad-argument"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = "A stray word, a missing value or a value given to a flag in an #SBATCH line."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\n#SBATCH --no-requeue=yes 8\necho ok\n"}
check = option_check(("stray", "missing-argument", "unexpected-argument"))

