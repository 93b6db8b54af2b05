"""$1 (a script argument) under set -u without a default: `sbatch job.sh` without arguments stops at once with 'unbound variable'.

Premise: under set -u bash stops at $1 when the script got no argument (bash(1)). Holds for: every
Slurm release (no Slurm behaviour involved).
In a script nobody here wrote (the default profile) only an argument that the script tests for a
value (`[ "$1" = convert ]`, `case $1 in`) is reported: it is a switch the job means to run without,
and set -u stops it instead of taking the other branch. An argument used as the job's input (DF=$1,
`--input "$1"`) is required: submitted without it the job stops either way, and stopping at once is
set -u doing its work (rounds twenty-one and twenty-four: 3 of 3 such findings judged false; round
one's true finding was a tested switch). Nor is an emptiness check that exits with a failure
(`if [[ -z $1 ]]; then usage; exit; fi`, `[ -z "$1" ] && { echo ...; exit 1; }`): the argument is
required, and set -u stops the job at the same place (round three hundred and five); an emptiness check
that goes on without it (`if [ -z "$1" ]; then X=default; else X=$1; fi`), or ends the job with `exit 0`
("nothing to do"), is an optional argument, reported. Our presets (the strict profile) keep every use reported.
"""
import re

from validator.rules.base import CHILD_SHELLS, in_function, is_decimal, node_key, set_effect

ID = "launch-unset-argument"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = ("A script argument ($1) read under set -u without a default or a check of $#: sbatch without "
               "arguments stops the job at once ('unbound variable').")
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\nconfig=${1:-default.yaml}\necho \"$config\"\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\nif [ \"$1\" = convert ]; then\n"
                     "    python3 convert.py\nfi\n"}

_GUARDS = ("#", "@", "*")  # $# checked, or the arguments handled as a list


def check(target):
    shell = target.script.shell
    nounset_at = None
    for command in shell.named("set"):
        if "u" in set_effect(command).on:
            nounset_at = command.node.start_byte if nounset_at is None else min(nounset_at, command.node.start_byte)
    if nounset_at is None or any(e.name in _GUARDS for e in shell.expansions):
        return
    for expansion in shell.expansions:
        if not is_decimal(expansion.name) or expansion.name == "0" or expansion.node.start_byte < nounset_at:
            continue
        text = expansion.node.text.decode("utf-8", "replace")
        if any(op in text for op in (":-", "-", ":=", "=", ":+", "+", ":?", "?")) and text.startswith("${"):
            continue
        if in_function(expansion.node):  # a function's own arguments
            continue
        if not target.strict and (not _tested(expansion.node) or _required_check(expansion.node)):
            continue  # the job's input ($1 as a file or a value): without it, stopping is the right failure
        yield (target.script.display, expansion.line, expansion.col,
               f"${expansion.name} under set -u without a default: 'sbatch' without arguments stops here with "
               f"'unbound variable'; write ${{{expansion.name}:-...}} or check $# first")
        return  # once per script: the fix is the same


# Where an argument is compared with a value, it is a switch the script means to work without:
# `if [ "$1" = "convert" ]` takes the other branch when it is absent, but set -u stops the job there.
def _tested(node) -> bool:
    """The expansion is an operand of [ ], [[ ]], (( )) or test, or the word a case statement
    matches (not a command inside one of its branches)."""
    child = node
    while node is not None and node.type not in ("program", "function_definition", "case_item"):
        if node.type in ("test_command", "arithmetic_expansion"):
            return True
        if node.type == "compound_statement" and node.text.startswith(b"(("):  # (( $1 > 3 ))
            return True
        if node.type == "case_statement":
            return node.child_by_field_name("value") == child
        if node.type == "command":
            name = node.child_by_field_name("name")
            return name is not None and name.text in (b"test", b"[")
        child, node = node, node.parent
    return False





# `-z "$1"`, alone or joined with `-o` / `||` to more of the same
_PRESENCE_TEST = re.compile(r'^\s*-z\s+("?)\$\{?\w+\}?\1(\s+(-o|\|\|)\s+-z\s+("?)\$\{?\w+\}?\4)*\s*$')


def _required_check(node) -> bool:
    """The expansion is in a test of emptiness only (`[[ -z $1 ]]`, `[ -z "$1" ]`, `[[ -z $1 || -z $2 ]]`,
    `[ -z "$1" -o -z "$2" ]`: no `!`, no `-a` or `&&`, which make an argument optional), the condition of
    an `if` or the left side of `&&`, whose branch exits with another status than 0: the usage check of
    a required argument (`if [[ -z $1 ]]; then usage; exit; fi`)."""
    test = node
    while test is not None and test.type in ("simple_expansion", "expansion", "string", "unary_expression",
                                             "binary_expression"):
        test = test.parent
    if test is None or test.type != "test_command":
        return False
    inner = test.text.decode("utf-8", "replace").strip()
    inner = inner[2:-2] if inner.startswith("[[") and inner.endswith("]]") else inner[1:-1]
    if _PRESENCE_TEST.match(inner) is None:
        return False
    holder = test.parent
    if holder is None:
        return False
    children = holder.children
    place = next((i for i, child in enumerate(children) if node_key(child) == node_key(test)), None)
    if place is None:
        return False
    if holder.type == "if_statement":
        then = next((i for i, child in enumerate(children) if child.type == "then"), None)
        if then is None or place > then:
            return False  # a test among the branch's commands, not the condition
        branch = []
        for child in children[then + 1:]:
            if child.type in ("elif_clause", "else_clause", "fi"):
                break
            branch.append(child)
    elif holder.type == "list" and len(children) == 3 and place == 0 and children[1].type == "&&":
        branch = [children[2]]
    else:
        return False
    return any(_exits(child) for child in branch)


# Where a branch's commands run in another process (base.CHILD_SHELLS: a subshell, a command or process
# substitution, a pipeline's element), or only when called (a function defined there), an exit ends no job.
_OWN_PROCESS = (*CHILD_SHELLS, "function_definition")


def _exits(node) -> bool:
    """An `exit` among the commands of a branch with a status other than a literal 0 (`exit 0` is the
    author's "nothing to do", which set -u turns into a failed job; `return` outside a function ends
    nothing: bash prints an error and goes on)."""
    if node.type == "command":
        name = node.child_by_field_name("name")
        if name is None or name.text != b"exit":
            return False
        arguments = [c for c in node.named_children if c.type != "command_name"]
        status = arguments[0].text.decode("utf-8", "replace").strip("\"'") if arguments else ""
        return not (is_decimal(status) and int(status) == 0)
    if node.type in _OWN_PROCESS:
        return False
    return any(_exits(child) for child in node.children)
