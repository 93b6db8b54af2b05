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
from it to the trace's end assigns or expands a secret or a variable built from one (`AUTH="Bearer
$HF_TOKEN"`), sources a file or runs eval, and the script exports no SHELLOPTS, sets no trap that names
one, and has no function (its own, or one of a sourced repository file) that expands one (round one
hundred and forty-seven: `set -x` around one `time $SCRIPT ...` line, the token exported thirty lines
before). The trace ends at the first later `set +x` that surely runs with it: in the same block or
one around it, also as `{ set +x; } 2>/dev/null` or `set +x || true`; not one in another branch, a
function or a subshell. A file sourced before the trace that the repository does not hold
(`source ~/miniconda3/bin/activate`) is not read: a function of it that expands the token would be missed.
"Holds a secret" is read as security-secret-echo reads it (validator.secrets): a secret-named variable the
script does not build only from public names nor set only to a key for a server that checks none
(`OPENAI_API_KEY="dummy"` for the job's own vLLM server, round four hundred and six; a placeholder that asks for
the real key, `WANDB_API_KEY=... # your key`, is a secret), and every copy of one.
"""
import bisect
import re

from validator.rules.base import LOOPS, enclosing, node_key, set_effect, sourced
from validator.secrets import built_from_public, copies, is_secret, placeholder_only
ID = "security-xtrace"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = 'set -x (xtrace) prints every expanded value into the job log: never where a secret is in scope.'
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\nWANDB_API_KEY=$(<\"$HOME/.key\")\nexport WANDB_API_KEY\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euxo pipefail\nWANDB_API_KEY=$(<\"$HOME/.key\")\nexport WANDB_API_KEY\n"}


def check(target):
    shell = target.script.shell
    secrets, brought_in = set(), sourced(target).shells
    for scope in (shell, *brought_in):  # a sourced library's secrets are in scope too
        secrets |= {a.name for a in scope.assignments if is_secret(a.name)}
        secrets |= {e.name for e in scope.expansions if is_secret(e.name)}
    seen: dict = {}  # a token the script builds only from public names (${USER}_${port}) is none
    secrets = sorted(name for name in secrets if not built_from_public(shell, name, seen)
                     and not placeholder_only(shell, name))
    if not secrets:
        return
    for command in shell.commands:
        words = [a.value or "" for a in command.args]
        tracing = (command.name == "set" and "x" in set_effect(command).on) or \
                  (command.name in ("bash", "sh") and "-x" in words)
        if tracing and (target.strict or command.name != "set" or _secret_traced(shell, command, set(secrets), brought_in)):
            yield (target.script.display, command.line, command.col,
                   f"xtrace prints expanded values into the log while {secrets[0]} is in scope")


_LOOPS_AND_FUNCTIONS = LOOPS + ("function_definition",)


def _untraces(command) -> bool:
    """`set +x`, `set +ex`, `set +o xtrace`."""
    return "x" in set_effect(command).off


# Nodes a statement sits in that run it whenever they run, in the current shell: a redirection
# (`set +x 2>/dev/null`), a brace group (`{ set +x; } 2>/dev/null`), the first command of a list (`set +x || true`)
_THROUGH = ("redirected_statement", "compound_statement")


def _block(node):
    """The statement list a command runs as part of: its node's parent, past the wrappers that always
    run it (_THROUGH, the first command of a list; a brace group that is a function's body is no wrapper)."""
    child, parent = node, node.parent
    while parent is not None:
        if parent.type == "list" and parent.children and parent.children[0] == child \
                or parent.type in _THROUGH and not (parent.type == "compound_statement" and parent.parent is not None
                                                    and parent.parent.type == "function_definition"):
            child, parent = parent, parent.parent
            continue
        return parent
    return child



class _Reach:
    """What the traces of one script may print, read once (a script of 10,000 `set -x` / `set +x` pairs
    stays linear): the lines of each block's `set +x`, and the lines where a secret, or a variable built
    from one, is assigned or expanded; `always` where the script gives the trace a way to a secret that
    no line range shows (a function, a trap that names one, an exported SHELLOPTS, a sourced file of
    the repository whose functions expand one)."""

    def __init__(self, shell, secrets: set, brought_in):
        # AUTH="Bearer ${HF_TOKEN}", ARGS=(--token "$HF_TOKEN"): the value is the secret's (secrets.copies)
        tainted = copies(shell, secrets)
        self.untrace: dict[tuple, list[int]] = {}  # block -> lines of its set +x, in order
        for c in shell.named("set"):
            if _untraces(c) and c.node is not None:
                self.untrace.setdefault(node_key(_block(c.node)), []).append(c.line)
        for lines in self.untrace.values():
            lines.sort()
        self.touched = sorted({a.line for a in shell.assignments if a.name in tainted}
                              | {e.line for e in shell.expansions if e.name in tainted})
        self.reads = sorted(c.line for c in shell.named("source", ".", "eval"))
        in_function = any(e.name in tainted and e.node is not None and enclosing(e.node, ("function_definition",))
                          for e in shell.expansions)
        trap = any(_names(" ".join(a.raw for a in c.args)) & tainted for c in shell.named("trap"))
        exported = any(a.name == "SHELLOPTS" and a.exported for a in shell.assignments)
        library = any(e.name in tainted and e.node is not None and enclosing(e.node, ("function_definition",))
                      for other in brought_in for e in other.expansions)
        self.always = in_function or trap or exported or library

    def end(self, node, start: int) -> float:
        """The line of the first `set +x` after `start` that surely runs when this trace's block goes on:
        one in the block of the `set -x` or in a block around it (not one in another branch, a function
        or a subshell)."""
        best = float("inf")
        while node is not None:
            lines = self.untrace.get(node_key(node))
            if lines:
                at = bisect.bisect_right(lines, start)
                if at < len(lines):
                    best = min(best, lines[at])
            if node.type in ("subshell", "function_definition", "program"):
                break
            node = node.parent
        return best


def _names(text: str) -> set:
    return set(re.findall(r"\$\{?([A-Za-z_]\w*)", text))


def _secret_traced(shell, command, secrets: set, brought_in=()) -> bool:
    """Whether a command the trace of this `set -x` covers may print a secret (_Reach): one from its line
    to the trace's end assigns or expands a secret or a copy of one, or sources a file or runs eval
    there (a file sourced before the trace is read when the repository holds it: `brought_in`)."""
    if command.node is None or enclosing(command.node, _LOOPS_AND_FUNCTIONS) is not None:
        return True
    reach = shell.once("xtrace reach", lambda: _Reach(shell, secrets, brought_in))
    if reach.always:
        return True
    start = command.line
    end = reach.end(_block(command.node), start)
    first = bisect.bisect_left(reach.touched, start)
    if first < len(reach.touched) and reach.touched[first] <= end:
        return True
    first = bisect.bisect_left(reach.reads, start)
    return first < len(reach.reads) and reach.reads[first] <= end
