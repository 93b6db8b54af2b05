"""$1 (a script argument) under set -u without a default: `sbatch job.sh` without arguments stops at once with 'unbound variable'.

Premise: under set -u bash stops at $1 when the script got no argument (bash(1)). Holds for: every
Slurm release (no Slurm behaviour involved).
"""
from validator.rules.launch_strict_mode import _flags
from validator.rules.base import is_decimal

ID = "launch-unset-argument"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = ("A script argument ($1) read under set -u without a default or a check of $#: sbatch without "
               "arguments stops the job at once ('unbound variable').")
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\nconfig=${1:-default.yaml}\necho \"$config\"\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\nconfig=$1\necho \"$config\"\n"}

_GUARDS = ("#", "@", "*")  # $# checked, or the arguments handled as a list


def check(target):
    shell = target.script.shell
    nounset_at = None
    for command in shell.named("set"):
        flags, options = _flags(command)
        if "u" in flags or "nounset" in options:
            nounset_at = command.node.start_byte if nounset_at is None else min(nounset_at, command.node.start_byte)
    if nounset_at is None or any(e.name in _GUARDS for e in shell.expansions):
        return
    for expansion in shell.expansions:
        if not is_decimal(expansion.name) or expansion.name == "0" or expansion.node.start_byte < nounset_at:
            continue
        text = expansion.node.text.decode("utf-8", "replace")
        if any(op in text for op in (":-", "-", ":=", "=", ":+", "+", ":?", "?")) and text.startswith("${"):
            continue
        if _in_function(expansion.node):  # a function's own arguments
            continue
        yield (target.script.display, expansion.line, expansion.col,
               f"${expansion.name} under set -u without a default: 'sbatch' without arguments stops here with "
               f"'unbound variable'; write ${{{expansion.name}:-...}} or check $# first")
        return  # once per script: the fix is the same


def _in_function(node) -> bool:
    while node is not None:
        if node.type == "function_definition":
            return True
        node = node.parent
    return False
