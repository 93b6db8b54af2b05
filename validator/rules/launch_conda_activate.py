"""`conda activate` in a batch shell that never loaded conda's shell hook activates nothing: the job runs with the submitting shell's python.

Premise: `conda activate` works only through the shell function that conda's hook defines (`conda()` in
conda/shell/etc/profile.d/conda.sh at conda 26.1.1, never exported). A batch script's bash is neither
interactive nor a login shell, so it reads neither ~/.bashrc nor ~/.bash_profile, where `conda init` put the hook
(bash(1), INVOCATION), and a function reaches it through the environment only when exported (`export -f`). So
`conda` is the executable, whose `activate` refuses and activates nothing, exit status 1: CondaError "Run 'conda
init' before 'conda activate'" (conda/cli/main_mock_activate.py at conda 24.1.0 and 26.1.1), "Your shell has not
been properly configured to use 'conda activate'" before (conda/exceptions.py at 4.6.0). Without set -e the job
goes on with whatever python the submitting shell's PATH held; with it, the job ends there, failed. Judges of
read rounds noted this as a missed defect many times (rounds 409, 419, 421 and 425 among them; round 425's
repository committed the logs that show the CondaError).
Not reported where something may have defined the function first: any `source` or `.` in the script (~/.bashrc,
conda.sh, a site's setup file), any `eval` (`eval "$(conda shell.bash hook)"`), a `module load` of a Python, conda
or framework module (NERSC's `python`, Princeton's `anaconda3`), `conda init`, a login shell (`#!/bin/bash -l`),
BASH_ENV set in the script, sbatch's --get-user-env, or a `conda` function or alias of the script's own; nor where
the script handles the failure (`conda activate x || source activate x`, an `if` condition); nor a `conda activate`
that a step or a payload runs (`srun bash -lc "conda activate ..."`), or any shell but bash and sh.
Holds for: every Slurm release (bash's and conda's behaviour, conda 4.6 and later).
"""
import re

from validator.rules.base import GOOD_BATCH, is_batch_script, set_effect

ID = "launch-conda-activate"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = ("`conda activate` in a batch shell that never loaded conda's shell hook (no ~/.bashrc is read there) "
               "activates nothing: load the hook first.")
GOOD = {"run.sbatch": GOOD_BATCH.replace("set -euo pipefail\n",
                                         "set -euo pipefail\neval \"$(conda shell.bash hook)\"\nconda activate train\n", 1)}
BAD = {"run.sbatch": GOOD_BATCH.replace("set -euo pipefail\n", "set -euo pipefail\nconda activate train\n", 1)}

# modules whose load may define conda's function: a Python, a conda or a framework built on one
_SETUP_MODULE = re.compile(r"(?i)conda|mamba|forge|python|pytorch|torch|tensorflow|jax|\bai\b|machine.?learning"
                           r"|deep.?learning|\bml\b|\bdl\b|ngc")


def _sets_up_conda(shell, parsed) -> bool:
    """Anything in the script that may have defined conda's shell function (see the premise)."""
    if shell.named("source", ".", "eval", "alias") or parsed.get("get-user-env"):
        return True
    if any(a.name == "BASH_ENV" for a in shell.assignments):
        return True
    if any(c.args and c.args[0].value == "init" for c in shell.named("conda")):
        return True
    for command in shell.named("module", "ml"):
        if any(_SETUP_MODULE.search(a.value or a.raw) for a in command.args):
            return True
    root = shell.root
    return root is not None and re.search(rb"(?m)^\s*(?:function\s+)?conda\s*\(\s*\)|^\s*function\s+conda\b",
                                          root.text) is not None


def _own_statement(command) -> bool:
    """The command is the batch shell's own `conda ...` (not the program of `srun conda ...`)."""
    node = command.node
    name = node.child_by_field_name("name") if node is not None and node.type == "command" else None
    return name is not None and name.text.rsplit(b"/", 1)[-1] == b"conda"


def _handled(node) -> bool:
    """Its failure is the script's to deal with: the left side of `||`, or an if/while condition."""
    while node.parent is not None and node.parent.type in ("redirected_statement", "negated_command"):
        node = node.parent
    parent = node.parent
    if parent is None:
        return False
    if parent.type == "list":
        following = node.next_sibling
        return following is not None and following.type == "||"
    if parent.type in ("if_statement", "elif_clause", "while_statement"):
        for child in parent.children:
            if child.type in ("then", "do"):
                return False
            if child == node:
                return True
    return False


def check(target):
    script = target.script
    if not is_batch_script(script) or script.interpreter not in (None, "bash", "sh"):
        return
    if "l" in script.interpreter_flags or "--login" in (script.shebang or ""):
        return  # a login shell reads ~/.bash_profile, which commonly reads ~/.bashrc
    shell = script.shell
    activates = [c for c in shell.named("conda") if c.args and c.args[0].value == "activate" and _own_statement(c)]
    if not activates or _sets_up_conda(shell, script.parsed):
        return
    errexit = "e" in script.interpreter_flags or any(
        "e" in set_effect(c).on and c.line < activates[0].line for c in shell.named("set"))
    outcome = "the job ends there, failed" if errexit else "the job goes on with the submitting shell's python"
    for command in activates:
        if _handled(command.node):
            continue
        yield (script.display, command.line, command.col,
               "conda activate in a batch shell that never loaded conda's shell hook (bash reads no ~/.bashrc "
               f"here): the conda executable refuses ('Run conda init before conda activate') and {outcome}; add "
               "'eval \"$(conda shell.bash hook)\"' before it")
