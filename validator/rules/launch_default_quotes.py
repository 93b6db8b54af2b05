"""Quotes inside a default of a double-quoted expansion ("${1:-'x'}") are kept: the value is 'x' with its quotes.

Premise: inside a double-quoted ${X:-'d'} bash keeps the single quotes in the value (bash(1),
Parameter Expansion). Holds for: every Slurm release (no Slurm behaviour involved). Where the
expansion only assigns (`: "${NAME:='unknown'}"`, the `:` builtin does nothing else), the quotes
matter only if NAME is read or exported afterwards: a default nobody reads is no defect.
"""
import re

ID = "launch-default-quotes"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = ("Single quotes inside the default of a double-quoted expansion (\"${1:-'x'}\") are part of the "
               "value: the job gets 'x' with its quotes.")
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\nmodel=\"${1:-llama 8b}\"\necho \"$model\"\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\nmodel=\"${1:-'llama 8b'}\"\necho \"$model\"\n"}

_QUOTED_DEFAULT = re.compile(r"^\$\{\w+:?[-=]'[^']*'\}$")
_ASSIGNING = re.compile(r"^\$\{(\w+):?=")


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
    read = any(e.name == name and e.node is not expansion.node for e in shell.expansions)
    exported = any(a.name == name and a.exported for a in shell.assignments) or any(
        c.name == "export" and any((w.value or w.raw).split("=", 1)[0] == name for w in c.args)
        for c in shell.named("export"))
    return not read and not exported


def check(target):
    for expansion in target.script.shell.expansions:
        node = expansion.node
        if node.type != "expansion" or node.parent is None or node.parent.type != "string":
            continue
        text = node.text.decode("utf-8", "replace")
        if _QUOTED_DEFAULT.match(text) and not _only_assigns_unread(expansion, target.script.shell):
            yield (target.script.display, expansion.line, expansion.col,
                   f"{text} inside double quotes keeps the single quotes in the value; drop them: "
                   f"{text.replace(chr(39), '')}")
