"""An unescaped '#' ends an #SBATCH line; an unclosed quote swallows the rest.

Premise: in an #SBATCH line an unquoted '#' ends the arguments and quotes group blanks (get_argument
in src/sbatch/opt.c at slurm-22-05-0-1 and slurm-26-05-1-1). Holds for: 22.05-26.05.
A '#' glued to the value but followed by a blank starts a comment the author meant
(`--account=proj# billing`): sbatch keeps the value written, not reported.
Only the lines sbatch reads: _opt_batch_script() stops at the first line that is not a comment ("Stop
parsing script if not a comment", src/sbatch/opt.c at slurm-22-05-0-1 and slurm-26-05-1-1), so a
cut or an open quote in a #SBATCH line below it changes nothing (round one hundred and seventeen: the
`#SBATCH --time=${time}"` lines of a wrapper's shell string that builds a job); sbatch-directive-after-command
reports such lines where they are directives. A run of two or more '#' in a value (`--job-name=TCR_##_npt2`,
`--output=TCR_##-npt2.out`) is a generator's fill-in mark that its sed replaces before sbatch reads the
file: not reported (round one hundred and thirty). Nor is a note glued to a value, a word of letters
and more words after the '#' (`--time=0-72:00#time needed for the run`, round three hundred and one),
where the option's value is typed (a count, a time, a size; `--comment=see#issue 12` is cut). Nor a
shebang pasted after the value (`--time=100:00:00#!/bin/bash`, round three hundred and eighty): no value
goes on with `#!/bin/...`, and sbatch keeps the one meant.
"""
import re

from validator.sbatch import VALUE_TYPES

# A note glued to the value: a word of letters after the '#' and more words after it
# (`--time=0-72:00#time needed for the run`, round three hundred and one): the author wrote a comment
# and sbatch keeps the value before it, as meant. A value that goes on (`nvcr.io#nvidia/pytorch`,
# `run#2`) is one word, or no word of letters.
_NOTE = re.compile(r"[A-Za-z][A-Za-z']*[,:]?\s+\S")
# `#!/bin/bash`, `#!/usr/bin/env bash` glued after a value: a pasted first line, never part of a value
_SHEBANG = re.compile(r"!\s*/(?:usr/)?(?:local/)?bin/(?:env\s+)?[a-z]*sh(?=\s|$)")
# options whose value is a count, a size, a time or a name of the cluster's (not free text, a path or a
# list of settings): a '#' and words after such a value are a note. The counts, sizes and times are those
# whose grammar sbatch-bad-value checks (VALUE_TYPES); the rest are named here.
_TYPED = frozenset(VALUE_TYPES) | {"ntasks-per-socket", "ntasks-per-core", "ntasks-per-gpu", "cpus-per-gpu",
                                   "gpus-per-socket", "gres", "partition", "account", "qos", "array", "nice",
                                   "priority", "mail-type", "threads-per-core", "sockets-per-node",
                                   "cores-per-socket", "tmp", "licenses", "reservation", "constraint",
                                   "distribution", "exclusive", "mincpus"}

ID = "sbatch-value-cut"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = "A directive value cut by an unescaped '#' (write '\\#'), or a quote left open."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00  # comments after a space are fine\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\n#SBATCH --comment=image=nvcr.io#nvidia/pytorch\necho ok\n"}


def check(target):
    for directive in target.script.parsed.directives:  # what sbatch reads: above the first command
        if directive.unterminated_quote:
            yield (target.script.display, directive.line, 1, "quote left open in #SBATCH line")
        if directive.cut_at is None:
            continue
        before = directive.text[directive.cut_at - 2] if directive.cut_at >= 2 else " "
        after = directive.text[directive.cut_at] if directive.cut_at < len(directive.text) else " "
        # `--account=proj_17# billing account`: a comment glued to the value; the value sbatch keeps
        # is the one meant (round eighteen). `image=nvcr.io#nvidia/pytorch`: the value goes on.
        # A run of '#' is a generator's fill-in mark that its sed replaces before sbatch reads the file
        # (`--nodes=##Nodes##`, `--ntasks=#####_np`, round one hundred and thirty's `--job-name=TCR_##_npt2`),
        # not a value cut by mistake.
        if after == "#" or _note(target.script.parsed, directive) \
                or _SHEBANG.match(directive.text, directive.cut_at):
            continue
        if not before.isspace() and not after.isspace():
            yield (target.script.display, directive.line, directive.cut_at,
                   "unescaped '#' ends the directive here and drops the rest of the value; write '\\#'")


def _note(parsed, directive) -> bool:
    """The text after the '#' is a note in words, not the rest of a value: the option it follows
    has a typed value of its own (_TYPED; a job name, a comment, a path, an --export list may hold
    '#' and words: `--comment=see#issue 12` lost its issue number)."""
    cut = [o for o in parsed.options if o.line == directive.line and o.col < directive.cut_at]
    if not cut or not cut[-1].value or cut[-1].name not in _TYPED:
        return False
    return _NOTE.match(directive.text[directive.cut_at:]) is not None
