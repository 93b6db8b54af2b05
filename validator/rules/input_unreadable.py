"""A file the validator must read is missing or unreadable."""
from validator.rules.base import loader_check

ID = "input-unreadable"
SEVERITY = "error"
SCOPE = "any"
DESCRIPTION = "A file the validator must read is missing or unreadable."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"preset.yaml": ("missing",)}
check = loader_check(ID)
