"""$0 / BASH_SOURCE in a batch script point at Slurm's spool copy, not the repository."""
from validator.rules.base import GOOD_BATCH, bad_batch, is_batch_script
ID = "launch-script-path"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = "$0 / BASH_SOURCE in a batch script point at Slurm's spool copy, not the repository."
GOOD = {"run.sbatch": GOOD_BATCH}
BAD = bad_batch("set -euo pipefail\n", 'set -euo pipefail\nhere=$(dirname "$0")\nsource "$here/lib.sh"\n')


def check(target):
    script = target.script
    if not is_batch_script(script):
        return
    for expansion in script.shell.expansions:
        if expansion.name in ("0", "BASH_SOURCE"):
            yield (script.display, expansion.line, expansion.col,
                   f"${expansion.name} names Slurm's spool copy of the script, not the repository; "
                   "use $SLURM_SUBMIT_DIR or a documented variable")
