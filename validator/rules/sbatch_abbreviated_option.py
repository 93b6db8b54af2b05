"""An abbreviated long option: getopt_long accepts it today, a new option with the same prefix breaks it.

Premise: getopt_long accepts a unique prefix of a long option (_set_options in src/sbatch/opt.c at
slurm-22-05-0-1 and slurm-26-05-1-1); a later release that adds an option with the same prefix makes
it ambiguous. Holds for: 22.05-26.05, per release in the option table.
"""
from validator.rules.base import option_check

ID = "sbatch-abbreviated-option"
SEVERITY = "warning"
SCOPE = "script"
DESCRIPTION = "An abbreviated long option: getopt_long accepts it today, a new option with the same prefix breaks it."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\n#SBATCH --ntasks-per-n=1\necho ok\n"}
check = option_check(("abbreviated",))

