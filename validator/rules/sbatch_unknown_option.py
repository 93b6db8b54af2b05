"""An #SBATCH option that no Slurm release knows: sbatch rejects the script.

Premise: sbatch hands #SBATCH arguments to getopt_long (_set_options in src/sbatch/opt.c at
slurm-22-05-0-1 and slurm-26-05-1-1) and stops at an option it does not know. Holds for: the release
selected (the option table, validator/data/sbatch_options.json, is derived from
src/common/slurm_opt.c of each release 22.05-26.05).
"""
from validator.rules.base import option_check

ID = "sbatch-unknown-option"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = "An #SBATCH option that no Slurm release knows: sbatch rejects the script."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\n#SBATCH --gpus-per-tsk=8\necho ok\n"}
check = option_check(("unknown",))

