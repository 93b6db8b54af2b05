"""An option prefix that matches several options: sbatch rejects it."""
from validator.rules.base import option_check

ID = "sbatch-ambiguous-option"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = "An option prefix that matches several options: sbatch rejects it."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\n#SBATCH --gpus-per=8\necho ok\n"}
check = option_check(("ambiguous",))

