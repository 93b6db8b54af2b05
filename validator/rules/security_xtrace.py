"""set -x (xtrace) prints every expanded value into the job log: never where a secret is in scope.

Premise: set -x prints every command with its expanded values to stderr, the job log (bash(1)).
Holds for: every Slurm release (no Slurm behaviour involved).
What xtrace prints is the commands the shell runs while it is on, each after expansion: a secret
reaches the log only where a traced command assigns or expands it ("print a trace of simple commands,
for commands, case commands, select commands, and arithmetic for commands and their arguments or
associated word lists after they are expanded", bash(1), set -x, bash 5.2). A program the shell
starts inherits the variable but not the trace (SHELLOPTS is not exported unless the script does).
So, in the default profile, a `set -x` at the script's top level (not in a loop or a function) is
not reported where no command from it to the next `set +x` (or the end) assigns or expands a secret,
sources a file or runs eval, and no function of the script expands one (round one hundred and
forty-seven: `set -x` around one `time $SCRIPT ...` line, the token exported thirty lines before).
"""
import re

from validator.rules.base import enclosing, sourced_shells
from validator.secrets import is_secret
ID = "security-xtrace"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = 'set -x (xtrace) prints every expanded value into the job log: never where a secret is in scope.'
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\nWANDB_API_KEY=$(<\"$HOME/.key\")\nexport WANDB_API_KEY\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euxo pipefail\nWANDB_API_KEY=$(<\"$HOME/.key\")\nexport WANDB_API_KEY\n"}


def check(target):
    shell = target.script.shell
    secrets = set()
    for scope in (shell, *sourced_shells(target)):  # a sourced library's secrets are in scope too
        secrets |= {a.name for a in scope.assignments if is_secret(a.name)}
        secrets |= {e.name for e in scope.expansions if is_secret(e.name)}
    secrets = sorted(secrets)
    if not secrets:
        return
    for command in shell.commands:
        words = [a.value or "" for a in command.args]
        tracing = (command.name == "set" and (any(w.startswith("-") and "x" in w and not w.startswith("--") for w in words)
                                              or "xtrace" in words)) or \
                  (command.name in ("bash", "sh") and "-x" in words)
        if tracing and (target.strict or command.name != "set" or _secret_traced(shell, command, set(secrets))):
            yield (target.script.display, command.line, command.col,
                   f"xtrace prints expanded values into the log while {secrets[0]} is in scope")


_LOOPS_AND_FUNCTIONS = ("for_statement", "c_style_for_statement", "while_statement", "function_definition")


def _untrace_line(shell, after: int) -> int | None:
    """The line of the first `set +x` (`set +o xtrace`) after line `after`, else None."""
    lines = [c.line for c in shell.named("set") if c.line > after
             and any(re.fullmatch(r"\+\w*x\w*", a.value or "") or a.value == "xtrace" and "+o" in
                     [b.value for b in c.args] for a in c.args)]
    return min(lines) if lines else None


def _secret_traced(shell, command, secrets: set) -> bool:
    """Whether a command the trace of this `set -x` covers may print a secret: one from its line to the
    next `set +x` (or the end) assigns or expands one, sources a file or runs eval; or the trace is
    turned on inside a loop or a function (then its reach is not one stretch of lines); or a function
    of the script expands a secret (it may be called while tracing)."""
    if command.node is None or enclosing(command.node, _LOOPS_AND_FUNCTIONS) is not None:
        return True
    start, end = command.line, _untrace_line(shell, command.line)
    end = end if end is not None else float("inf")
    if any(start <= a.line <= end for a in shell.assignments if a.name in secrets):
        return True
    for e in shell.expansions:
        if e.name in secrets and (start <= e.line <= end or e.node is not None and enclosing(
                e.node, ("function_definition",)) is not None):
            return True
    return any(start <= c.line <= end for c in shell.named("source", ".", "eval"))
