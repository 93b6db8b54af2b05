"""--export=NONE,VAR=x is a variable list in which NONE is a variable name, not "NONE plus VAR".

Premise: sbatch compares the whole --export value with ALL, NIL and NONE; anything else is a list of
variables filtered from the submit environment (env_merge_filter), NONE then being one more name,
and sets SLURM_GET_USER_ENV=1 for it as for NONE (src/sbatch/sbatch.c at slurm-22-05-0-1 and
slurm-26-05-1-1). Holds for: 22.05-26.05. A policy of our presets' form, not a defect elsewhere:
strict profile only.
"""
from validator.rules.base import GOOD_BATCH, bad_batch

ID = "launch-export-form"
SEVERITY = "warning"
SCOPE = "script"
PROFILE = "strict"  # our presets' bar, not a defect in somebody else's job
DESCRIPTION = ("--export=NONE,VAR=x (or NIL,...) is read as a list of variables in which NONE is a variable name "
               "(src/sbatch/sbatch.c); it still rebuilds the login environment (--get-user-env, sbatch.1). "
               "Write --export=NONE alone and pass settings as arguments, or list the variables alone.")
GOOD = {"run.sbatch": GOOD_BATCH}
BAD = bad_batch("#SBATCH --export=NONE\n", "#SBATCH --export=NONE,NCCL_DEBUG=INFO\n")

KEYWORDS = ("NONE", "NIL")


def problem(value: str) -> str | None:
    parts = [p for p in value.split(",") if p]
    if len(parts) > 1 and any(p.upper() in KEYWORDS for p in parts):
        word = next(p for p in parts if p.upper() in KEYWORDS)
        return (f"--export={value}: sbatch reads a list in which {word} is a variable name, and the login "
                "environment is still rebuilt on the node; use --export=NONE alone and pass settings as "
                "KEY=VALUE arguments (or list the variables without NONE)")
    return None


def check(target):
    script = target.script
    for option in script.parsed.get("export") or []:
        message = problem(option.value or "")
        if message:
            yield (script.display, option.line, option.col, message)
    for command in script.shell.named("sbatch"):
        word = command.option("--export")
        if word is not None and word.value and problem(word.value):
            yield (script.display, word.line, word.col, problem(word.value))
