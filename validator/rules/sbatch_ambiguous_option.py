"""An option prefix that matches several options: sbatch rejects it.

Premise: getopt_long refuses a prefix that matches several long options (_set_options in
src/sbatch/opt.c at slurm-22-05-0-1 and slurm-26-05-1-1). Holds for: the selected release's option
table (22.05-26.05).
"""
from validator.rules.base import option_check

ID = "sbatch-ambiguous-option"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = "An option prefix that matches several options: sbatch rejects it."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\n#SBATCH --gpus-per=8\necho ok\n"}
check = option_check(("ambiguous",))

