"""Quotes inside a default of a double-quoted expansion ("${1:-'x'}") are kept: the value is 'x' with its quotes.

Premise: inside a double-quoted ${X:-'d'} bash keeps the single quotes in the value (bash(1),
Parameter Expansion). Holds for: every Slurm release (no Slurm behaviour involved).
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


def check(target):
    for expansion in target.script.shell.expansions:
        node = expansion.node
        if node.type != "expansion" or node.parent is None or node.parent.type != "string":
            continue
        text = node.text.decode("utf-8", "replace")
        if _QUOTED_DEFAULT.match(text):
            yield (target.script.display, expansion.line, expansion.col,
                   f"{text} inside double quotes keeps the single quotes in the value; drop them: "
                   f"{text.replace(chr(39), '')}")
