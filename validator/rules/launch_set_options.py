"""A `set` whose flags stop the job's work: -n runs none of the rest, -t exits after one command, -r forbids cd and redirections, and a letter `set` does not know makes bash refuse the command (`set -errexit` sets nothing, not even -e).

Premise (bash(1) 5.2, SHELL BUILTIN COMMANDS, set; tried with bash 5.2.15): `-n` "Read commands but do not
execute them" (the batch script then ends with status 0: the job is COMPLETED having done nothing), `-t`
"Exit after reading and executing one command" (the job ends at once, status 0); `-r` (restricted mode,
accepted though its usage line omits it) forbids `cd`, output redirections and changes to PATH for the
rest of the job. The letters `set` takes are abefhkmnprtuvxBCEHPT and `o`, whose option name is the next
word (the rest of the bundle stays flags: `-nounset` is -n, -o, -u, -n, -s, ...); for any other letter bash
prints "set: -s: invalid option" and its usage and returns 2, and the command does not set what it says:
`set -ex -s` turns on neither -e nor -x, while `set -errext -nounset -o pipefail` (an HPC centre's
documented example, read round two hundred and twenty-five) leaves noexec and onecmd on and the job runs
nothing after it. A job written with `set -errexit` (meant as `set -o errexit`) runs without the strict
mode its author asked for. Only literal words up to `--` are read (`set -- "$@"` sets
the positional parameters); `+n`, `+t` turn the options off and are no finding.
Holds for: every Slurm release (no Slurm behaviour involved).
"""
ID = "launch-set-options"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = ("A `set` that stops the job's work: -n runs nothing after it, -t exits after one command, -r forbids cd and "
               "redirections, and a letter set does not know (`set -errexit`) makes bash refuse the command.")
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -o errexit -o nounset -o pipefail\n"
                      "srun --kill-on-bad-exit=1 python3 train.py\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -errexit -nounset -o pipefail\n"
                     "srun --kill-on-bad-exit=1 python3 train.py\n"}

# The single-letter flags of bash's `set` (its usage line, and -r: tried with bash 5.2.15), and `o`
_FLAGS = set("abefhkmnprtuvxBCEHPT")


def _read(words) -> tuple[list[str], set[str]]:
    """(letters `set` refuses, letters it turns on) of the literal flag words, up to `--` or `-`."""
    refused, on, skip = [], set(), False
    for word in words:
        text = word.value
        if skip:  # the option name after -o
            skip = False
            continue
        if text is None or text in ("--", "-") or len(text) < 2 or text[0] not in "-+":
            break
        for letter in text[1:]:
            if letter == "o":
                skip = True
            elif letter not in _FLAGS:
                refused.append(letter)
            elif text[0] == "-":
                on.add(letter)
    return refused, on


def check(target):
    for command in target.script.shell.named("set"):
        refused, on = _read(command.args)
        words = " ".join(a.raw for a in command.args)
        if refused:
            yield (target.script.display, command.line, command.col,
                   f"set {words}: -{refused[0]} is no option of set; bash answers 'invalid option' and the command "
                   "does not set what it says (write `set -o errexit`, not `set -errexit`)")
        elif "n" in on:
            yield (target.script.display, command.line, command.col,
                   f"set {words}: -n (noexec) reads the rest of the script and runs none of it; the job ends "
                   "COMPLETED having done nothing")
        elif "t" in on:
            yield (target.script.display, command.line, command.col,
                   f"set {words}: -t (onecmd) exits after one command; the job's work after it never runs")
        elif "r" in on:
            yield (target.script.display, command.line, command.col,
                   f"set {words}: -r (restricted) forbids cd, output redirections and changes to PATH for the rest "
                   "of the job")
