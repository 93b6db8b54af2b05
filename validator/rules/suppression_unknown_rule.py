"""A suppression must name existing rules exactly: a typo suppresses nothing, a wildcard everything.

Premise: a misspelt rule id suppresses nothing, a wildcard everything. Holds for: every Slurm
release (no Slurm behaviour involved).
"""
from validator.rules.base import loader_check

ID = "suppression-unknown-rule"
SEVERITY = "error"
SCOPE = "any"
DESCRIPTION = "'# validator: disable=RULE' must name rule ids that exist (or shellcheck codes), without wildcards."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\n# validator: disable=security-eval -- demo only\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\n# validator: disable-file=* -- everything\necho ok\n"}
# Findings no suppression, --select or --ignore hides (what could not be read, or the suppressions themselves).
SILENCEABLE = False

check = loader_check(ID)
