"""Inline suppressions must say why.

Premise: a suppression without a reason cannot be reviewed. Holds for: every Slurm release (no Slurm
behaviour involved).
"""
ID = "suppression-reason"
SEVERITY = "warning"
SCOPE = "any"
DESCRIPTION = "'# validator: disable=RULE' must carry a reason after ' -- '."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\n# validator: disable=security-eval -- demo only\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\n# validator: disable=security-eval\necho ok\n"}
# Findings no suppression, --select or --ignore hides (what could not be read, or the suppressions themselves).
SILENCEABLE = False


def check(target):
    for finding in getattr(target, "load_problems", []):
        if finding.rule == ID:
            yield finding
