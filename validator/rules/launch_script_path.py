"""$0 / BASH_SOURCE in a batch script point at Slurm's spool copy, not the repository.

Premise: slurmd runs a copy of the batch script from its spool folder, <spool>/job<id>/slurm_script
(src/slurmd/slurmd/slurmd.c, src/slurmd/slurmstepd/mgr.c at slurm-22-05-0-1 and slurm-26-05-1-1): $0
is that copy. Holds for: 22.05-26.05.
"""
from validator.rules.base import GOOD_BATCH, bad_batch, is_batch_script
ID = "launch-script-path"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = "$0 / BASH_SOURCE in a batch script point at Slurm's spool copy, not the repository."
GOOD = {"run.sbatch": GOOD_BATCH}
BAD = bad_batch("set -euo pipefail\n", 'set -euo pipefail\nhere=$(dirname "$0")\nsource "$here/lib.sh"\n')


# Printing the script's name (a usage line) is harmless; locating files next to it is not.
_NAMES_ONLY = {"echo", "printf", "basename", "log", "usage"}


def _printed(expansion) -> bool:
    node = expansion.node
    while node is not None and node.type != "command":
        node = node.parent
    name = node.child_by_field_name("name") if node is not None else None
    return name is not None and name.text.decode("utf-8", "replace") in _NAMES_ONLY


def check(target):
    script = target.script
    if not is_batch_script(script):
        return
    for expansion in script.shell.expansions:
        if expansion.name in ("0", "BASH_SOURCE") and not _printed(expansion):
            yield (script.display, expansion.line, expansion.col,
                   f"${expansion.name} names Slurm's spool copy of the script, not the repository; "
                   "use $SLURM_SUBMIT_DIR or a documented variable")
