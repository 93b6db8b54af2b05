"""Quotes inside a default of a double-quoted expansion ("${1:-'x'}") are kept: the value is 'x' with its quotes.

Premise: inside a double-quoted ${X:-'d'} bash keeps the single quotes in the value (bash(1),
Parameter Expansion). Holds for: every Slurm release (no Slurm behaviour involved). Where the
expansion only assigns (`: "${NAME:='unknown'}"`, the `:` builtin does nothing else), the quotes
matter only if NAME is read or exported afterwards: a default nobody reads is no defect; nor is a
blank default (' ') whose every use sits in an `if` that first tests a file under a blank default of the
script (-f, -x, ...; its own, or a sibling's: MLPerf's run.sub reads POWERLOGDIR only where `[ -f
"$POWERCMDDIR/power_monitor.sh" ]` holds, both defaulting to ' ', round two hundred and fifteen),
nor a default of a variable Slurm sets for every batch job (SLURM_JOB_ID: the default is never taken;
round twenty-eight, 2 of 2 judged false).
"""
import re

from validator.sbatch import ALWAYS_SET_IN_BATCH_JOB

ID = "launch-default-quotes"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = ("Single quotes inside the default of a double-quoted expansion (\"${1:-'x'}\") are part of the "
               "value: the job gets 'x' with its quotes.")
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\nmodel=\"${1:-llama 8b}\"\necho \"$model\"\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\nmodel=\"${1:-'llama 8b'}\"\necho \"$model\"\n"}

_QUOTED_DEFAULT = re.compile(r"^\$\{\w+:?[-=]'[^']*'\}$")
_ASSIGNING = re.compile(r"^\$\{(\w+):?=")


_BLANK_DEFAULT = re.compile(r"^\$\{(\w+):?=' *'\}$")


def _blank_path_guard(expansion, shell, strict: bool) -> bool:
    """`: "${POWERCMDDIR:=' '}"` then `if [ -f "$POWERCMDDIR/power_monitor.sh" ]; then ... fi`
    (MLPerf's run.sub): a blank default that every use reads in the `then` part of an `if` whose
    condition tests, without negation, a file under the same name: with the quotes or without them the
    file is absent alike, so the branch is skipped as meant. In the default profile also a test on
    another blank default of the script (POWERLOGDIR read only where POWERCMDDIR's file exists): as
    published, with both unset, the branch does not run; a user who sets only the guard's variable gets
    the quoted value, so the strict profile still reports it."""
    match = _BLANK_DEFAULT.match(expansion.node.text.decode("utf-8", "replace"))
    if match is None:
        return False
    name = match.group(1)
    test = _file_test([name]) if strict else _blank_file_test(shell)  # a test on its own name, or on any blank default
    uses = [e for e in shell.expansions if e.name == name and e.node is not expansion.node]
    own = _file_test([name])
    return bool(uses) and all(_guarded(use.node, test, own) for use in uses)


def _guarded(node, test, own) -> bool:
    """The node is in the condition of an enclosing `if` that tests a file under it (`own`: absent with the
    quotes or without them, negated or not), or lies in
    the `then` part of an enclosing `if` whose condition passes `test` and negates
    nothing and offers no other way in (`[ ! -f ... ]`, `! test -x ...`, `[ -f ... ] || ...`: there the
    branch runs when the file is absent)."""
    child, parent = node, node.parent
    while parent is not None:
        if parent.type == "if_statement":
            condition = parent.child_by_field_name("condition")
            text = (condition if condition is not None else parent).text[:400].decode("utf-8", "replace")
            if condition is not None and condition.start_byte <= node.start_byte < condition.end_byte:
                return bool(own.search(text))
            in_then = condition is not None and child.type not in ("elif_clause", "else_clause") \
                and child.start_byte >= condition.end_byte
            if in_then and "!" not in text and "||" not in text and test.search(text):
                return True
        child, parent = parent, parent.parent
    return False


def _file_test(names):
    """A file test on one of `names` (`-f "$NAME/..."`)."""
    alternatives = "|".join(sorted(map(re.escape, names))) or r"(?!)"
    return re.compile(r'-[fexdrs]\s+"?\$\{?(?:' + alternatives + r")\b")


def _blank_file_test(shell):
    """A file test on any name the script gives a blank default, built once per script."""
    def build():
        names = set()
        for e in shell.expansions:
            if e.node.type == "expansion":
                match = _BLANK_DEFAULT.match(e.node.text.decode("utf-8", "replace"))
                if match:
                    names.add(match.group(1))
        return _file_test(names)
    return shell.once("blank-default file test", build)


def _only_assigns_unread(expansion, shell) -> bool:
    """`: "${NAME:='x'}"` where NAME is never read nor exported elsewhere in the script."""
    match = _ASSIGNING.match(expansion.node.text.decode("utf-8", "replace"))
    command = expansion.node.parent.parent if expansion.node.parent is not None else None
    if match is None or command is None or command.type != "command":
        return False
    name_node = command.child_by_field_name("name")
    if name_node is None or name_node.text != b":":
        return False
    name = match.group(1)
    reads, exported = _reads_and_exports(shell)
    return reads.get(name, 0) <= 1 and name not in exported  # its own expansion is one read


def _reads_and_exports(shell) -> tuple[dict, set]:
    """How often each name is expanded, and the names exported: once per script (linear)."""
    def build():
        reads: dict = {}
        for e in shell.expansions:
            reads[e.name] = reads.get(e.name, 0) + 1
        exported = {a.name for a in shell.assignments if a.exported}
        exported |= {(w.value or w.raw).split("=", 1)[0] for c in shell.named("export") for w in c.args}
        return reads, exported
    return shell.once("reads and exports", build)


def check(target):
    for expansion in target.script.shell.expansions:
        node = expansion.node
        if node.type != "expansion" or node.parent is None or node.parent.type != "string":
            continue
        text = node.text.decode("utf-8", "replace")
        if expansion.name in ALWAYS_SET_IN_BATCH_JOB:
            continue  # "${SLURM_JOB_ID:-'none'}": Slurm sets it for every batch job, the default is never taken
        if _QUOTED_DEFAULT.match(text) and not _only_assigns_unread(expansion, target.script.shell) \
                and not _blank_path_guard(expansion, target.script.shell, target.strict):
            yield (target.script.display, expansion.line, expansion.col,
                   f"{text} inside double quotes keeps the single quotes in the value; drop them: "
                   f"{text.replace(chr(39), '')}")
