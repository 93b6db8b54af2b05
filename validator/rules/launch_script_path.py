"""$0 / BASH_SOURCE in a batch script point at Slurm's spool copy, not the repository.

Premise: slurmd runs a copy of the batch script from its spool folder, <spool>/job<id>/slurm_script
(src/slurmd/slurmd/slurmd.c, src/slurmd/slurmstepd/mgr.c at slurm-22-05-0-1 and slurm-26-05-1-1): $0
is that copy. Holds for: 22.05-26.05. Not reported where the script uses the path only outside
Slurm (the else branch of a test on SLURM_JOB_ID or SLURM_SUBMIT_DIR, a for list of candidates that
also tries SLURM_SUBMIT_DIR) or tests it against the spool folder (`*slurmd*`) and falls back.
"""
import re

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


_SLURM = re.compile(r"SLURM_(SUBMIT_DIR|JOB_ID)\b")
_SPOOL_TEST_WITHIN = 20  # lines after the assignment where the script tests it against the spool folder


def _text(node) -> str:
    return node.text.decode("utf-8", "replace") if node is not None and node.text else ""


def _guarded(expansion) -> bool:
    """The script uses the path only outside Slurm: in the else branch of a test on SLURM_JOB_ID or
    SLURM_SUBMIT_DIR, or as one candidate of a for list that also tries SLURM_SUBMIT_DIR."""
    child, node = expansion.node, getattr(expansion.node, "parent", None)
    while node is not None:
        if node.type == "else_clause" and node.parent is not None and node.parent.type == "if_statement":
            condition = node.parent.child_by_field_name("condition")
            if _SLURM.search(_text(condition)):
                return True
        if node.type == "for_statement" and child is not None and child.type != "do_group" \
                and _SLURM.search(_text(node).split("do", 1)[0]):
            return True
        child, node = node, node.parent
    return False


def _checked_for_spool(script, by_line: dict, expansion) -> bool:
    """SCRIPT_DIR=$(dirname "$0") followed by a test of SCRIPT_DIR against slurmd's spool folder
    (`[[ $SCRIPT_DIR == *slurmd* ]] && TOP=$SLURM_SUBMIT_DIR`): the script knows and falls back."""
    for a in by_line.get(expansion.line, ()):
        if a.col <= expansion.col:
            use = re.compile(rf"\$\{{?{re.escape(a.name)}\b")
            following = script.parsed.lines[a.line:a.line + _SPOOL_TEST_WITHIN]  # bounded: linear in the file
            return any(use.search(line) and "slurmd" in line for line in following)
    return False


def check(target):
    script = target.script
    if not is_batch_script(script):
        return
    by_line: dict = {}
    for a in script.shell.assignments:
        by_line.setdefault(a.line, []).append(a)
    for expansion in script.shell.expansions:
        if expansion.name in ("0", "BASH_SOURCE") and not _printed(expansion) and not _guarded(expansion) \
                and not _checked_for_spool(script, by_line, expansion):
            yield (script.display, expansion.line, expansion.col,
                   f"${expansion.name} names Slurm's spool copy of the script, not the repository; "
                   "use $SLURM_SUBMIT_DIR or a documented variable")
