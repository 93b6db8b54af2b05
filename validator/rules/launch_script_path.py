"""$0 / BASH_SOURCE in a batch script point at Slurm's spool copy, not the repository.

Premise: slurmd runs a copy of the batch script from its spool folder, <spool>/job<id>/slurm_script
(src/slurmd/slurmd/slurmd.c, src/slurmd/slurmstepd/mgr.c at slurm-22-05-0-1 and slurm-26-05-1-1): $0
is that copy. Holds for: 22.05-26.05. BASH_SOURCE only in shells that set it (not ksh, mksh, zsh: there it
is empty, and its folder is '.', the job's working directory).
Not reported where the script already copes with that: the value is taken in the else branch of an
`if` that tests SLURM_JOB_ID, SLURM_JOBID or SLURM_SUBMIT_DIR (used only outside Slurm), in the
then branch of an `if` that tests SLURM_JOB_ID for empty (`if [ -z $SLURM_JOB_ID ]; then sbatch "$0"`), or in an
`if` or a function that also reads SLURM_SUBMIT_DIR, or it is assigned to a variable that such an `if`
tests for the spool path (`[[ $SCRIPT_DIR == *slurmd* ]] && TOP=$SLURM_SUBMIT_DIR`): a fallback to
the submit folder when the path names the spool copy. An `if` that tries the script's folder first
(`[ -e "$(dirname $0)/$(basename $0)" ]`, true for the spool copy too) and the submit folder second
is no fallback: it is still reported.
Nor where only the script's name or text is used (`echo "usage: $0"`, `cat "$0"`, `cp "$0" $LOGDIR/`):
the spool copy is the submitted script, byte for byte; only the folder around it is another place.
Nor, in the default profile, a folder kept in a variable that nothing reads (never expanded, never
exported): the spool path goes nowhere. Nor a folder variable that the script also sets from
`scontrol show job`'s Command= (the path the job was submitted with), nor one taken in the else
branch of `if [[ -n "${CI_DIR:-}" ]]` whose then branch sets it from that variable: the submitter
hands the folder over, and the script's path is the fallback for a run without it. Nor a variable holding the
script's path whose folder only goes into such unread names (its other uses read the name or the text).
In a script nobody here wrote (the default profile) only that is reported: the folder taken from
the path (`dirname "$0"`, `${BASH_SOURCE[0]%/*}`, also through a variable set from it or from
`readlink -f "$0"`), which names the spool folder where the script's siblings are not. Every true
finding of the judged rounds was of that shape (6 of 6); every other use judged was false (20 of 20:
usage lines, copies and greps of the script's text, resubmitting it). Our presets (the strict
profile) keep every use reported.
"""
import re

from validator.rules.base import (GOOD_BATCH, JOB_ONLY_VARIABLES, bad_batch, declared_names, enclosing,
                                  enclosing_command, enclosing_command_name, is_batch_script, node_key)
ID = "launch-script-path"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = ("$0 / BASH_SOURCE in a batch script point at Slurm's spool copy, not the repository "
               "(unless the script falls back to SLURM_SUBMIT_DIR or uses them only outside Slurm).")
GOOD = {"run.sbatch": GOOD_BATCH}
BAD = bad_batch("set -euo pipefail\n", 'set -euo pipefail\nhere=$(dirname "$0")\nsource "$here/lib.sh"\n')


# Printing the script's name (a usage line) is harmless; locating files next to it is not.
_NAMES_ONLY = {"echo", "printf", "basename", "log", "usage"}
# Reading the script's text is harmless too: the spool copy is the script that was submitted, byte
# for byte (slurmstepd copies the script it was sent into it: _make_batch_script() in
# src/slurmd/slurmstepd/mgr.c, slurm-22-05-0-1 and slurm-26-05-3-1), so `cat $0` or
# `cp $0 $LOGDIR/` keeps in the log what ran. Only the folder around it is another place.
_CONTENT = {"cat", "cp", "head", "tail", "md5sum", "sha1sum", "sha256sum", "wc", "diff", "less", "more",
            "grep", "egrep", "fgrep"}  # `egrep "^#SBATCH" $0`: the job's own directives into its log


def _printed(expansion) -> bool:
    node = expansion.node
    # `${1:?usage: $0 MODEL}`: the name is only in the error message bash prints when $1 is missing
    parent = node.parent if node is not None else None
    while parent is not None and parent.type in ("string", "concatenation", "word", "expansion"):
        if parent.type == "expansion" and re.match(r"^\$\{\w+:?\?", parent.text.decode("utf-8", "replace")):
            return True
        parent = parent.parent
    return enclosing_command_name(node) in _NAMES_ONLY | _CONTENT


_SUBMIT = "SLURM_SUBMIT_DIR"
_IN_SLURM = JOB_ONLY_VARIABLES
_SCOPES = ("if_statement", "function_definition")


def _mark(expansions, names) -> set:
    """The `if` statements and functions that read one of `names`. Each node is marked once and
    the walk up stops at a marked one: linear in the script."""
    marked = set()
    for expansion in expansions:
        if expansion.name not in names or expansion.node is None:
            continue
        node = expansion.node.parent
        while node is not None:
            if node.type in _SCOPES:
                if node_key(node) in marked:
                    break
                marked.add(node_key(node))
            node = node.parent
    return marked


def _assigned_name(node) -> str | None:
    """The variable that a value holding this expansion is assigned to (also through $( ))."""
    while node is not None and node.type not in ("variable_assignment", "program", "compound_statement", *_SCOPES):
        node = node.parent
    if node is None or node.type != "variable_assignment":
        return None
    name = node.child_by_field_name("name")
    return name.text.decode("utf-8", "replace") if name is not None else None


_SPOOL_WORDS = ("slurmd", "spool", "slurm_script")


def _spool_test(node) -> bool:
    """The expansion is tested against Slurm's spool path: [[ $DIR == *slurmd* ]]."""
    while node is not None and node.type not in ("test_command", "command", "program"):
        node = node.parent
    return (node is not None and node.type == "test_command"
            and any(word in node.text.decode("utf-8", "replace").lower() for word in _SPOOL_WORDS))


def _guarded(node, submit: set, in_slurm: set) -> bool:
    """In an `if` or function that reads SLURM_SUBMIT_DIR, or in the else branch of an `if` that
    tests whether it runs under Slurm."""
    branch, child = None, None
    while node is not None:
        if node.type == "for_statement" and child is not None and child.type != "do_group" \
                and _SUBMIT in node.text.decode("utf-8", "replace").split("do", 1)[0]:
            return True  # one candidate of a list that also tries SLURM_SUBMIT_DIR
        if node.type in ("else_clause", "elif_clause"):
            branch = node
        elif node.type in _SCOPES:
            if node_key(node) in submit:
                return True
            if node.type == "if_statement" and branch is not None and branch.parent == node \
                    and node_key(node) in in_slurm and not _tests_outside(node):
                return True  # the else branch of `if [ -n "$SLURM_JOB_ID" ]`: only outside Slurm
            if node.type == "if_statement" and (branch is None or branch.parent != node) and _tests_outside(node):
                return True  # the then-branch of `if [ -z "$SLURM_JOB_ID" ]`: only outside Slurm
        child, node = node, node.parent
    return False


# `[ -z $SLURM_JOB_ID ]`, `[[ -z "${SLURM_JOB_ID:-}" ]]`, `[ "$SLURM_JOB_ID" = "" ]`: true only outside a job
# (slurmd sets SLURM_JOB_ID in every batch job: env_array_for_batch_job() in src/common/env.c).
_OUTSIDE = re.compile(r"-z\s+\"?\$\{?(SLURM_JOB_ID|SLURM_JOBID)\b"
                      r"|\"\$\{?(SLURM_JOB_ID|SLURM_JOBID)(:-)?\}?\"\s*==?\s*\"\"")


def _tests_outside(if_node) -> bool:
    condition = if_node.child_by_field_name("condition")
    text = (condition if condition is not None else if_node).text[:300].decode("utf-8", "replace")
    return bool(_OUTSIDE.search(text))


# `[[ -n "${CI_DIR:-}" ]]`, `[ -n "$REPO" ]`: a variable that the submitter may hand over
_GIVEN = re.compile(r"^\s*\[\[?\s+-n\s+\"?\$\{?([A-Za-z_]\w{0,127})(:?-)?\}?\"?\s+\]\]?\s*;?\s*$")


def _handed_over(node) -> bool:
    """The else branch of `if [[ -n "${CI_DIR:-}" ]]; then SCRIPT_DIR="${CI_DIR}/jobs"; else
    SCRIPT_DIR=$(dirname "${BASH_SOURCE[0]}"); fi` (round one hundred and thirty-eight: every submitter
    of the repository passes `sbatch --export=ALL,CI_DIR=...`): the folder comes from a variable the
    submitter hands over, what this rule's message asks for, and the script's own path is only the
    fallback for a run without it. The then branch must set the same variable from the tested one."""
    name = _assigned_name(node)
    while node is not None and node.type not in ("else_clause", "program", "function_definition"):
        node = node.parent
    if name is None or node is None or node.type != "else_clause" or node.parent is None \
            or node.parent.type != "if_statement":
        return False
    if_node = node.parent
    condition = if_node.child_by_field_name("condition")
    given = _GIVEN.match(condition.text.decode("utf-8", "replace")) if condition is not None else None
    if given is None or given.group(1) in _IN_SLURM or given.group(1).startswith(_OTHER_SCHEDULERS):
        return False
    reads = re.compile(r"\$\{?" + re.escape(given.group(1)) + r"\b")
    stack = [c for c in if_node.children if c.end_byte <= node.start_byte and c is not condition]
    while stack:  # an assignment of the then branch itself (not text inside an echo's string)
        child = stack.pop()
        if child.type == "variable_assignment":
            assigned = child.child_by_field_name("name")
            if assigned is not None and assigned.text.decode("utf-8", "replace") == name \
                    and reads.search(child.text.decode("utf-8", "replace")):
                return True
        elif child.type not in ("string", "raw_string", "heredoc_body"):
            stack.extend(child.children)
    return False


# Variables other batch systems set (PBS/Torque, LSF, Grid Engine, Cobalt, Flux, OAR, Fujitsu's PJM): under
# Slurm nothing sets them, so their else branch is the one that always runs.
_OTHER_SCHEDULERS = ("PBS_", "LSB_", "LS_", "SGE_", "COBALT_", "FLUX_", "OAR_", "PJM_")


def _submit_default(node) -> bool:
    """`${SLURM_SUBMIT_DIR:-$(dirname "${BASH_SOURCE[0]}")}`: the script's path is only the fallback
    for runs outside Slurm (slurmd sets SLURM_SUBMIT_DIR in every batch job: sbatch.1, OUTPUT
    ENVIRONMENT VARIABLES)."""
    while node is not None:
        if node.type == "expansion":
            text = node.text.decode("utf-8", "replace")
            if text.startswith(("${" + _SUBMIT + ":-", "${" + _SUBMIT + "-", "${" + _SUBMIT + ":=")):
                return True
        node = node.parent
    return False


_CD_SUBMIT = re.compile(r"cd\s+[\"']?\$\{?SLURM_SUBMIT_DIR\}?[\"']?(?:\s|$)")


def _after_submit_or(node) -> bool:
    """`cd "$SLURM_SUBMIT_DIR" 2>/dev/null || cd "$(dirname "$0")/.."` (round four hundred and ten): the right
    side of a `||` whose left side is `cd "$SLURM_SUBMIT_DIR"` runs only where that cd fails; slurmd sets
    SLURM_SUBMIT_DIR in every batch job (sbatch.1, OUTPUT ENVIRONMENT VARIABLES), the folder it was submitted
    from. A test of a folder under it (`[ -d "$SLURM_SUBMIT_DIR/x" ] || ...`) may fail: not this."""
    child, node = node, node.parent if node is not None else None
    while node is not None and node.type not in _SCOPES:
        if node.type == "list" and len(node.children) >= 3 and node.children[1].type == "||" \
                and child.start_byte == node.children[-1].start_byte \
                and _CD_SUBMIT.match(node.children[0].text.decode("utf-8", "replace")):
            return True
        child, node = node, node.parent
    return False


def _listed_with_submit(node) -> bool:
    """`[[ $DIR == *slurmd* ]] && TOP=$SLURM_SUBMIT_DIR || TOP=$DIR`: the test and its fallback in one list."""
    while node is not None and node.type not in ("list", "program"):
        node = node.parent
    return node is not None and node.type == "list" and _SUBMIT in node.text.decode("utf-8", "replace")


# `${0%/*}`, `${BASH_SOURCE[0]%/*}`, `${0%/$name}`: the path with its last part cut off, its folder
_FOLDER_CUT = re.compile(r"^\$\{#?\w+(\[[^]]*\])?%%?/")
_RESOLVERS = {"readlink", "realpath"}


def _folder_taken(node) -> bool:
    """The expansion's folder is taken: an argument of dirname (also around readlink/realpath:
    `dirname "$(realpath "$0")"`), or a `${0%/*}` cut."""
    while node is not None:
        up = node
        while up is not None and up.type not in ("command", "program"):
            if up.type == "expansion" and _FOLDER_CUT.match(up.text.decode("utf-8", "replace")):
                return True
            up = up.parent
        name = enclosing_command_name(node)
        if name == "dirname":
            return True
        if name not in _RESOLVERS:
            return False
        node = enclosing_command(node).parent  # readlink's output, as an argument of what encloses it
    return False


def _folder_uses(expansions, paths) -> list:
    """The uses of the script's path whose folder is taken: directly (`dirname "$0"`), or through a
    variable assigned the path, plain or resolved (`SELF=$(readlink -f "$0")`; `dirname "$SELF"`)."""
    holders = {}
    for e in paths:
        if e.node is not None and enclosing_command_name(e.node) in _RESOLVERS | {""}:
            name = _assigned_name(e.node)
            if name is not None:
                holders.setdefault(name, []).append(e)
    folder_of_holder = {e.name for e in expansions if e.name in holders and e.node is not None and _folder_taken(e.node)}
    return [e for e in paths if e.node is not None
            and (_folder_taken(e.node) or (_assigned_name(e.node) in folder_of_holder
                                           and enclosing_command_name(e.node) in _RESOLVERS | {""}))]


def _derived_fallback(expansions, targets: set) -> set:
    """Holders of the script's folder whose every use derives another variable that an `if` testing
    SLURM_SUBMIT_DIR in its condition sets to it, read only after that `if`: `SCRIPT_DIR=$(dirname
    "${BASH_SOURCE[0]}")`, `ROOT=$SCRIPT_DIR/..`, then `if [ -f "$SLURM_SUBMIT_DIR/scripts/run.py" ];
    then ROOT=$SLURM_SUBMIT_DIR; fi` (round thirty-five): the spool path is the fallback for runs
    outside the repository, as in a direct holder's test."""
    overridden = {}  # variable -> end of the `if` that sets it to SLURM_SUBMIT_DIR
    for e in expansions:
        branch = enclosing(e.node, ("if_statement",)) if e.name == _SUBMIT else None
        condition = branch.child_by_field_name("condition") if branch is not None else None
        name = _assigned_name(e.node)
        if name is not None and condition is not None and _SUBMIT.encode() in condition.text:
            overridden.setdefault(name, branch.end_byte)
    out = set()
    for name in targets:
        uses = [e for e in expansions if e.name == name and e.node is not None]
        derived = {_assigned_name(e.node) for e in uses}
        if not uses or None in derived or name in derived or not derived <= overridden.keys():
            continue
        if all(e.node.start_byte > overridden[e.name] for e in expansions if e.name in derived and e.node is not None):
            out.add(name)
    return out




def _unread(script, expansions, targets: set) -> set:
    """Holders of the script's folder that nothing reads: expanded only into other such holders or by echo and
    printf or as the default of `${SLURM_SUBMIT_DIR:-...}` (set in every batch job), not exported (a program the job
    runs could read it), no `set -a`: the spool path goes nowhere (round fifty-eight: a DIR taken from BASH_SOURCE in
    a job that never uses it)."""
    shell = script.shell
    declared = declared_names(shell, script.parsed.lines)
    if declared is None:
        return set()  # set -a / set -o allexport: every assignment is exported
    if shell.named("source", ".") or any("${!" in line for line in script.parsed.lines):
        return set()  # a sourced file, or an indirect ${!name}, may read it (not base.reads_unseen, whose eval
        # clause brought back round 481's judged-false `eval $finalScript` job: an eval of text the file builds
        # reads what that text names, and those reads are the file's own expansions)
    exported = {a.name for a in shell.assignments if a.exported}
    # what each holder flows into (`BASEDIR=${BASEDIR:-${FWDIR}}`: FWDIR into BASEDIR), and which names a command
    # other than echo or printf reads: a used name makes the names that flow into it used (round 481's FWDIR and
    # BASEDIR, never read; round 483's SCRIPT_PATH, only echoed: 4 findings judged false)
    flows: dict = {}
    used = set(exported) | set(declared)
    for e in expansions:
        if e.node is not None and e.name in targets and _submit_default(e.node):
            continue  # `${SLURM_SUBMIT_DIR:-${SCRIPT_DIR}/..}`: a fallback sbatch never takes (round 520's ParRay)
        into = _assigned_name(e.node) if e.node is not None else None
        if into is not None:
            if into != e.name:
                flows.setdefault(into, set()).add(e.name)
        elif e.node is None or enclosing_command_name(e.node) not in ("echo", "printf"):
            used.add(e.name)
    queue = list(used)
    while queue:
        for name in flows.pop(queue.pop(), ()):
            if name not in used:
                used.add(name)
                queue.append(name)
    return {name for name in targets if name not in used}


def _folder_unread(script, expansions, targets: set) -> set:
    """Holders of the script's own path (`THIS_SCRIPT=$(readlink -f "$0")`, not a folder already) whose folder is
    only put into names that nothing reads (`THIS_SCRIPT_DIR=$(dirname "$THIS_SCRIPT")`, then only echoed), and whose
    every other use reads the script's name or text as a whole word (`cp "$THIS_SCRIPT" $RESULTS/`, `basename`,
    `echo`): the same in the spool copy (round 505's collective_profiler jobs, 2 findings judged false). Not one cut
    into a sibling's name (`${THIS_SCRIPT%.sbatch}.yaml`) or edited (sed). All holders' folders are judged unread in
    one pass (linear)."""
    held: dict = {}  # name -> the $0 / BASH_SOURCE expansions assigned to it, found in one pass
    for e in expansions:
        if e.name in ("0", "BASH_SOURCE") and e.node is not None:
            name = _assigned_name(e.node)
            if name in targets:
                held.setdefault(name, []).append(e)
    paths = {name for name, found in held.items() if all(not _folder_taken(e.node) for e in found)}
    folders, plain = {}, set()
    for e in expansions:
        if e.name not in paths or e.node is None:
            continue
        if _folder_taken(e.node):
            folders.setdefault(e.name, set()).add(_assigned_name(e.node))
        elif not (enclosing_command_name(e.node) in _CONTENT | _NAMES_ONLY
                  and re.fullmatch(rb"\$\{?\w+\}?", e.node.text)
                  and not (enclosing_command_name(e.node) in ("echo", "printf") and _output_used(e.node))):
            plain.add(e.name)  # another use of the path: a sibling's name, an edit (`echo "$ME" | sed`), a test
    wanted = {name for names in folders.values() for name in names if name is not None}
    unread = _unread(script, expansions, wanted) if wanted else set()
    return {name for name, names in folders.items()
            if name not in plain and None not in names and names <= unread}


def _output_used(node) -> bool:
    """The command around the expansion feeds a pipe or a command substitution (`$(echo "$ME" | sed ...)`): what it
    prints becomes a value, not a line of the log."""
    up = node.parent
    while up is not None and up.type != "program":
        if up.type in ("pipeline", "command_substitution"):
            return True
        up = up.parent
    return False


# `scontrol show job $SLURM_JOB_ID` prints the path the job was submitted with as Command=
# (slurm_sprint_job_info() in src/api/job_info.c at slurm-22-05-0-1, _sprint_job_info() in
# src/scontrol/info_job.c at slurm-26-05-1-1: "Command=%s", job_ptr->command): a variable set from
# it names the repository's script, not the spool copy.
_SUBMITTED_PATH = re.compile(r"scontrol\s+show\s+job\b.*\bCommand\b", re.S)


def _command_fallback(shell, targets: set) -> set:
    """Holders of the script's folder that the script also sets from `scontrol show job`'s Command=
    (round sixty-two: alphafold3-tools' lis.sh tries BASH_SOURCE's folder, then the submitted path
    when the spool folder lacks the script): the path that is used inside a job is the real one."""
    return {name for name in targets if any(_SUBMITTED_PATH.search(a.raw) for a in shell.assigned(name))}


# Shells that never set BASH_SOURCE (bash's own variable, bash(1) "Shell Variables"): under `#!/bin/ksh`
# `$(dirname "${BASH_SOURCE[0]}")` is dirname of '' = '.', the job's working directory, not the spool folder
# (ksh 93u+m and zsh 5.9 here: '[] [.]'; round two hundred and seventy-six: NEMO's job.ksh). Not sh, which is
# bash on many systems; not dash, which refuses the array subscript ("Bad substitution"): another defect.
_WITHOUT_BASH_SOURCE = {"ksh", "ksh93", "mksh", "zsh"}


def check(target):
    script = target.script
    if not is_batch_script(script):
        return
    expansions = script.shell.expansions
    names = ("0",) if script.interpreter in _WITHOUT_BASH_SOURCE else ("0", "BASH_SOURCE")
    paths = [e for e in expansions if e.name in names and not _printed(e)]
    if paths and not target.strict:
        paths = _folder_uses(expansions, paths)
    if not paths:
        return
    submit, in_slurm = _mark(expansions, {_SUBMIT}), _mark(expansions, _IN_SLURM)
    targets = {_assigned_name(e.node) for e in paths if e.node is not None} - {None}
    # variables holding the script's path that an `if` reading SLURM_SUBMIT_DIR tests for the spool
    fallback = {e.name for e in expansions
                if e.name in targets and _spool_test(e.node)
                and (_guarded(e.node, submit, set()) or _listed_with_submit(e.node))}
    if not target.strict:
        fallback |= _derived_fallback(expansions, targets) | _unread(script, expansions, targets) \
            | _command_fallback(script.shell, targets) | _folder_unread(script, expansions, targets)
    for expansion in paths:
        if expansion.node is not None and (_guarded(expansion.node, submit, in_slurm) or _submit_default(expansion.node)
                                           or _after_submit_or(expansion.node)
                                           or _assigned_name(expansion.node) in fallback
                                           or not target.strict and _handed_over(expansion.node)):
            continue
        yield (script.display, expansion.line, expansion.col,
               f"${expansion.name} names Slurm's spool copy of the script, not the repository; "
               "use $SLURM_SUBMIT_DIR or a documented variable")
