"""set -x (xtrace) prints every expanded value into the job log: never where a secret is in scope.

Premise: set -x prints every command with its expanded values to stderr, the job log (bash(1)).
Holds for: every Slurm release (no Slurm behaviour involved).
What xtrace prints is the commands the shell runs while it is on, each after expansion: a secret
reaches the log only where a traced command assigns or expands it ("After expanding each simple
command, for command, case command, select command, or arithmetic for command, display the expanded
value of PS4, followed by the command and its expanded arguments or associated word list", bash(1),
set -x, bash 5.2.15). A program the shell starts inherits the variable but not the trace, unless the
script exports SHELLOPTS.
So, in the default profile, a `set -x` outside loops and functions is not reported where no command
from it to the next top-level `set +x` (or the end) assigns or expands a secret or a variable built
from one (`AUTH="Bearer $HF_TOKEN"`), and the script sources no file, runs no eval, exports no
SHELLOPTS, sets no trap that names one, and has no function that expands one (round one hundred and
forty-seven: `set -x` around one `time $SCRIPT ...` line, the token exported thirty lines before).
A `set +x` inside a branch, a function or a subshell ends no trace of the top level.
"""
import bisect
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


def _untraces(command) -> bool:
    """`set +x`, `set +ex`, `set +o xtrace`."""
    words = [a.value or "" for a in command.args]
    return any(re.fullmatch(r"\+\w*x\w*", w) for w in words) or "xtrace" in words and "+o" in words


class _Reach:
    """What the traces of one script may print, read once (a script of 10,000 `set -x` / `set +x` pairs
    stays linear): the lines of top-level `set +x`, and the lines where a secret, or a variable built from
    one, is assigned or expanded outside functions; `always` where the script gives the trace a way to a
    secret that no line range shows (a function, a trap, a sourced file, eval, an exported SHELLOPTS)."""

    def __init__(self, shell, secrets: set):
        tainted, grew = set(secrets), True
        while grew:  # AUTH="Bearer ${HF_TOKEN}", ARGS=(--token "$HF_TOKEN"): the value is the secret's
            grew = False
            for a in shell.assignments:
                if a.name not in tainted and _names(a.raw) & tainted:
                    tainted.add(a.name)
                    grew = True
        self.untrace = sorted(c.line for c in shell.named("set") if _untraces(c) and c.node is not None
                              and c.node.parent is not None and c.node.parent.type == "program")
        self.touched = sorted({a.line for a in shell.assignments if a.name in tainted}
                              | {e.line for e in shell.expansions if e.name in tainted})
        in_function = any(e.name in tainted and e.node is not None and enclosing(e.node, ("function_definition",))
                          for e in shell.expansions)
        trap = any(_names(" ".join(a.raw for a in c.args)) & tainted for c in shell.named("trap"))
        exported = any(a.name == "SHELLOPTS" and a.exported for a in shell.assignments)
        self.always = in_function or trap or exported or bool(shell.named("source", ".", "eval"))


def _names(text: str) -> set:
    return set(re.findall(r"\$\{?([A-Za-z_]\w*)", text))


def _secret_traced(shell, command, secrets: set) -> bool:
    """Whether a command the trace of this `set -x` covers may print a secret (_Reach)."""
    if command.node is None or enclosing(command.node, _LOOPS_AND_FUNCTIONS) is not None:
        return True
    reach = shell.once("xtrace reach", lambda: _Reach(shell, secrets))
    if reach.always:
        return True
    start = command.line
    after = bisect.bisect_right(reach.untrace, start)
    end = reach.untrace[after] if after < len(reach.untrace) else float("inf")
    first = bisect.bisect_left(reach.touched, start)
    return first < len(reach.touched) and reach.touched[first] <= end
