"""An abbreviated long option: getopt_long accepts it today, a new option with the same prefix breaks it."""
from validator.rules.base import option_check

ID = "sbatch-abbreviated-option"
SEVERITY = "warning"
SCOPE = "script"
DESCRIPTION = "An abbreviated long option: getopt_long accepts it today, a new option with the same prefix breaks it."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\n#SBATCH --ntasks-per-n=1\necho ok\n"}
check = option_check(("abbreviated",))

