"""A file over the size bound (256 KiB) is refused unread."""
from validator.rules.base import loader_check

ID = "input-too-large"
SEVERITY = "error"
SCOPE = "any"
DESCRIPTION = "A file over the size bound (256 KiB) is refused unread."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n" + "# padding\n" * 30000}
check = loader_check(ID)
