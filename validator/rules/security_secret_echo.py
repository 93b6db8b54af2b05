"""A secret (API key, token, password) printed with echo/printf lands in the job log.

Premise: what a job prints lands in its log, readable by the account and often the group. Holds for:
every Slurm release (no Slurm behaviour involved). Only what reaches the job's stdout/stderr counts
(bash(1), Pipelines, Redirections, Command Substitution): an echo piped into another command
(`echo "$TOKEN" | docker login --password-stdin`), redirected to a file, captured by `$( )`, or
inside a function whose every call is captured by `$( )` (a function returning the token) prints
nothing into the log. A pipe into tee, or a redirection to the terminal's streams, still does.
A "token" the script builds only from what is no secret (`jupyter_token=${USER}_${jupyter_port}`:
the user's name and a port the same echo prints) guards nothing and is not reported (round one hundred
and twenty-one: three Jupyter launchers that print their URL for the user to open).
"""
import re

from validator.secrets import is_secret
ID = "security-secret-echo"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = 'A secret (API key, token, password) printed with echo/printf lands in the job log.'
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\necho \"wandb on: ${WANDB_API_KEY:+yes}\"\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\necho \"key: $WANDB_API_KEY\"\n"}


_LOG_STREAMS = ("/dev/stdout", "/dev/stderr", "/dev/tty", "&1", "&2")


def _redirected_away(statement) -> bool:
    """`echo ... > file` or `>> file`: stdout goes to a file, not the log. `>&2` still logs."""
    for child in statement.children:
        if child.type != "file_redirect":
            continue
        text = child.text.decode("utf-8", "replace").replace(" ", "")
        if text.startswith(("2>", "2>>")):
            continue
        target = text.lstrip("0123456789").lstrip(">&|")
        if not target.startswith(_LOG_STREAMS) and not text.endswith(_LOG_STREAMS):
            return True
    return False


def _captured(node, shell, depth: int = 0) -> bool:
    """The output of this echo never reaches the job's log: piped on (not into tee), redirected to a
    file, captured by $( ), or inside a function that is only ever called inside $( )."""
    child, parent = node, node.parent
    while parent is not None:
        if parent.type in ("command_substitution", "process_substitution"):
            return True
        if parent.type == "pipeline" and parent.children[-1] is not child:
            # piped on: logged only where a later command in the pipe prints it again (tee)
            later = [c for c in parent.children if c.start_byte > child.end_byte and c.type == "command"]
            if not any(c.text.decode("utf-8", "replace").split()[:1] in (["tee"], ["cat"]) for c in later):
                return True
        if parent.type == "redirected_statement" and _redirected_away(parent):
            return True
        if parent.type == "function_definition" and depth < 3:
            name = parent.child_by_field_name("name")
            if name is None:
                return False
            key = (name.text, depth)
            cache = shell.once("captured functions", dict)  # once per function: linear
            if key not in cache:
                calls = shell.named(name.text.decode("utf-8", "replace"))
                cache[key] = bool(calls) and all(_captured(c.node, shell, depth + 1) for c in calls)
            return cache[key]
        child, parent = parent, parent.parent
    return False


_PUBLIC = {"USER", "LOGNAME", "HOSTNAME", "HOME", "RANDOM", "PWD"}
_EXPANDED = re.compile(r"\$\{?(\w+)")


def _built_from_public(shell, name: str, seen: dict, depth: int = 0) -> bool:
    """Every value the script gives NAME is made of expansions of public names and literal glue, with
    at least one expansion and no command substitution (`$(openssl rand ...)` makes a secret). A
    public name is the user's, a SLURM_ value, or a variable of the script's own whose every value is
    itself public or a plain literal with no command substitution (`port=$((RANDOM % 1000 + 50000))`),
    followed through other variables (`rand=$(openssl rand -hex 24)`, `token=${rand}` stays secret).
    Memoised per name (`seen`): linear in the script."""
    if name in seen:
        return seen[name]
    seen[name] = False  # a cycle, or too deep: not shown public
    assignments = shell.assigned(name)
    ok = bool(assignments) and depth < 8
    for assignment in assignments if ok else ():
        raw = assignment.raw.split("=", 1)[-1]
        names = _EXPANDED.findall(raw)
        if not names or "$(" in raw.replace("$((", "") or "`" in raw:
            ok = False
            break
        for used in names:
            if used.isdigit() or is_secret(used):
                ok = False
            elif used not in _PUBLIC and not used.startswith("SLURM_"):
                ok = _plain_or_public(shell, used, seen, depth + 1)
            if not ok:
                break
        if not ok:
            break
    seen[name] = ok
    return ok


def _plain_or_public(shell, name: str, seen: dict, depth: int) -> bool:
    """A variable of the script's own that holds nothing secret: every value a literal or arithmetic
    without command substitution, or itself built from public names."""
    assignments = shell.assigned(name)
    if assignments and all("$" not in a.raw.split("=", 1)[-1].replace("$((", "", 1) and "`" not in a.raw
                           for a in assignments):
        return True
    return _built_from_public(shell, name, seen, depth)


def check(target):
    import bisect

    shell = target.script.shell
    seen: dict = {}
    secrets = sorted(((e.node.start_byte, i, e) for i, e in enumerate(shell.expansions)
                      if is_secret(e.name) and not _built_from_public(shell, e.name, seen)), key=lambda t: t[:2])
    starts = [s for s, _, _ in secrets]
    for command in target.script.shell.named("echo", "printf"):
        start, end = command.node.start_byte, command.node.end_byte
        if _captured(command.node, target.script.shell):
            continue
        # only the secret expansions inside this command: a bisect, not a scan of every expansion
        for _, _, expansion in secrets[bisect.bisect_left(starts, start):bisect.bisect_left(starts, end)]:
            if ":+" in expansion.node.text.decode("utf-8", "replace"):  # ${KEY:+yes} says whether it is set
                continue
            yield (target.script.display, expansion.line, expansion.col,
                   f"{expansion.name} is printed into the log")
