"""A `set` that does not do what it says or that stops the job's work: `set -errexit` (meant as `set -o errexit`) changes nothing, `set -n` runs none of the rest, `set -t` exits after one command, `set -r` forbids running ./programs and cd.

Premise: bash 5.2's `set` as base.set_effect reads it (builtins/set.def and builtins/bashgetopt.c at the
bash-5.2 tag; every case of tests checked against bash 5.2.15): a letter it does not take makes it print
"invalid option" and change nothing (`set -errexit` is -e -r -r -e -x -i ...: refused at -i), unless an
`o` earlier in the word hid it from the first pass (`-nounset`): then the letters before it are set
(-n among them) and set stops there. `-n` (noexec) reads the rest of the script and runs none of it, so
the job ends COMPLETED having done nothing; `-t` (onecmd) exits after one more command; `-r` (restricted)
forbids commands named with a slash (./train.sh, /opt/.../python), cd, exec, output redirections and
changes to PATH (bash(1), RESTRICTED SHELL). The effect is reported where the `set` is a statement of the
batch script's top level (a subshell's `set -n`, a dry-run guard `[ -n "$DRY" ] && set -n` or a
function is left alone); a command bash refuses or stops in, anywhere. Only bash scripts: dash, zsh and
tcsh read `set` otherwise.
Holds for: every Slurm release (no Slurm behaviour involved).
"""
from validator.rules.base import SET_OPTIONS, always_runs, set_effect

ID = "launch-set-options"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = ("A `set` that does nothing or stops the job: `set -errexit` (not `set -o errexit`) changes no option, "
               "-n runs nothing after it, -t exits after one command, -r forbids ./programs and cd.")
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -o errexit -o nounset -o pipefail\n"
                      "srun --kill-on-bad-exit=1 python3 train.py\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -errexit -nounset -o pipefail\n"
                     "srun --kill-on-bad-exit=1 python3 train.py\n"}

_EFFECTS = {"n": "-n (noexec) reads the rest of the script and runs none of it: the job ends COMPLETED having done nothing",
            "t": "-t (onecmd) exits after one more command: the job's work after it never runs",
            "r": "-r (restricted) forbids commands named with a slash (./prog, /opt/.../python), cd, exec and output "
                 "redirections for the rest of the job"}


# What a `set` that bash stopped in leaves on, the gravest first (the set itself failed: with -e on the job
# ends there, a failed job)
_ON = {"e": "-e is already on, so the job ends there, failed", "n": "-n (noexec) is on: nothing after it runs",
       "t": "-t (onecmd) is on: the job ends after one more command", "r": "-r (restricted) is on: no ./program, cd or exec"}


def _meant(words) -> str:
    """A hint where a word is an -o name written as flags (`-errexit`, `-oerrexit`): `set -o errexit`."""
    names = [name for w in words if w[:1] == "-" for name in (w[1:], w[2:] if w[1:2] == "o" else "")
             if name in SET_OPTIONS]
    return f" (write `set -o {' -o '.join(names)}`)" if names else ""


def check(target):
    script = target.script
    if script.interpreter not in (None, "bash"):
        return
    for command in script.shell.named("set"):
        effect = set_effect(command)
        words = [a.value or a.raw for a in command.args]
        shown = "set " + " ".join(words)
        if effect.refused:
            yield (script.display, command.line, command.col,
                   f"{shown}: bash refuses {effect.refused} ('invalid option') and changes no option{_meant(words)}")
            continue
        effects = [_EFFECTS[letter] for letter in "ntr" if letter in effect.on]
        if effect.stopped:
            kind = "invalid option" if effect.stopped[:1] in "-+" else "invalid option name"
            on = [_ON[letter] for letter in "entr" if letter in effect.on]
            then = on[0] if on else "the options after it are not set"
            yield (script.display, command.line, command.col,
                   f"{shown}: bash stops at {effect.stopped} ('{kind}') with what came before set: {then}{_meant(words)}")
        elif effects and always_runs(command.node):
            yield (script.display, command.line, command.col, f"{shown}: {effects[0]}{_meant(words)}")
