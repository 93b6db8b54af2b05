"""A file with NUL bytes is binary; sbatch refuses it too."""
from validator.rules.base import loader_check

ID = "input-binary"
SEVERITY = "error"
SCOPE = "any"
DESCRIPTION = "A file with NUL bytes is binary; sbatch refuses it too."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n\x00\x01\x02"}
check = loader_check(ID)
