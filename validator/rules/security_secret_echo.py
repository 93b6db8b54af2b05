"""A secret (API key, token, password) printed with echo/printf lands in the job log.

Premise: what a job prints lands in its log, readable by the account and often the group. Holds for:
every Slurm release (no Slurm behaviour involved). Only what reaches the job's stdout/stderr counts
(bash(1), Pipelines, Redirections, Command Substitution): an echo piped into another command
(`echo "$TOKEN" | docker login --password-stdin`), redirected to a file, captured by `$( )`, or
inside a function whose every call is captured by `$( )` (a function returning the token) prints
nothing into the log. A pipe into tee, or a redirection to the terminal's streams, still does.
What holds a secret is validator.secrets.secret_holders, shared with security-xtrace: a secret-named
variable, but not a "token" the script builds only from what is no secret (`jupyter_token=${USER}_${jupyter_port}`:
the user's name and a port the same echo prints; round one hundred and twenty-one: three Jupyter
launchers that print their URL for the user to open), nor one the script sets only to a key for a server
that checks none (`OPENAI_API_KEY="dummy"`, `api_key=EMPTY` for the job's own vLLM server: round four hundred
and six), and every variable whose value the script builds from one (`AUTH="Bearer $HF_TOKEN"`).
"""
import re

from validator.secrets import secret_holders
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


# A test prints nothing: an expansion that a test inside the echo's $( ) reads is not printed (round three
# hundred and forty-eight: `echo "HF Token: $([ -n "${HF_TOKEN:-}" ] && echo SET || echo NOT SET)"`). Whatever
# else runs in the $( ) may print it into the echo's words (`$(echo "$KEY")`, `$(cat <<< "$KEY")`): still
# reported.
_TESTS = ("[", "test")
_ARITHMETIC_TEST = re.compile(r"\s-(eq|ne|lt|le|gt|ge)\s")


def _printed_by(node, echo) -> bool:
    """The expansion may reach the echo's output: it is not read only by a test ([ ], [[ ]], test) inside a
    $( ) of the echo."""
    parent = node.parent
    while parent is not None and parent is not echo and parent.start_byte >= echo.start_byte:
        if parent.type == "test_command":
            # an arithmetic test prints a value that is no number into its error (`[: abc: integer expression
            # expected`, bash(1)): only a string test reads it silently
            return _ARITHMETIC_TEST.search(parent.text.decode("utf-8", "replace")) is not None
        if parent.type == "command":
            name = parent.child_by_field_name("name")
            return name is None or name.text.decode("utf-8", "replace") not in _TESTS \
                or _ARITHMETIC_TEST.search(parent.text.decode("utf-8", "replace")) is not None
        parent = parent.parent
    return True


def check(target):
    import bisect

    shell = target.script.shell
    holders = secret_holders(shell)
    secrets = sorted(((e.node.start_byte, i, e) for i, e in enumerate(shell.expansions)
                      if e.name in holders), key=lambda t: t[:2])
    starts = [s for s, _, _ in secrets]
    for command in target.script.shell.named("echo", "printf"):
        start, end = command.node.start_byte, command.node.end_byte
        if _captured(command.node, target.script.shell):
            continue
        # only the secret expansions inside this command: a bisect, not a scan of every expansion
        for _, _, expansion in secrets[bisect.bisect_left(starts, start):bisect.bisect_left(starts, end)]:
            if ":+" in expansion.node.text.decode("utf-8", "replace"):  # ${KEY:+yes} says whether it is set
                continue
            if not _printed_by(expansion.node, command.node):
                continue
            if expansion.node.text.startswith(b"${#"):  # ${#KEY} is its length, no secret
                continue
            yield (target.script.display, expansion.line, expansion.col,
                   f"{expansion.name} is printed into the log")
