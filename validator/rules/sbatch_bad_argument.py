"""A stray word, a missing value or a value given to a flag in an #SBATCH line."""
from validator.rules.base import option_check

ID = "sbatch-bad-argument"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = "A stray word, a missing value or a value given to a flag in an #SBATCH line."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\n#SBATCH --no-requeue=yes 8\necho ok\n"}
check = option_check(("stray", "missing-argument", "unexpected-argument"))

