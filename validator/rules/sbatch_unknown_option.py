"""An #SBATCH option that no Slurm release knows: sbatch rejects the script."""
from validator.rules.base import option_check

ID = "sbatch-unknown-option"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = "An #SBATCH option that no Slurm release knows: sbatch rejects the script."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\n#SBATCH --gpus-per-tsk=8\necho ok\n"}
check = option_check(("unknown",))

