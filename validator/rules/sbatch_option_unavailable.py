"""An option the selected Slurm release lacks, or a SPANK plugin's option the script does not declare."""
from validator.rules.base import option_check

ID = "sbatch-option-unavailable"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = "An option the selected Slurm release lacks, or a SPANK plugin's option the script does not declare."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\n#SBATCH --power=level\necho ok\n"}  # gone since 24.05
check = option_check(("unavailable", "spank"))

