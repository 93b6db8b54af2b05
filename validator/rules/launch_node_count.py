"""The node count must come from the submission: no #SBATCH --nodes in a preset, no literal torchrun --nnodes, no --ntasks beside torchrun."""
from validator.rules.base import GOOD_BATCH, bad_batch, is_decimal, launcher_commands
ID = "launch-node-count"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = 'The node count must come from the submission: no #SBATCH --nodes in a preset, no literal torchrun --nnodes, no --ntasks beside torchrun.'
GOOD = {"run.sbatch": GOOD_BATCH}
BAD = bad_batch('--nnodes="$SLURM_NNODES"', "--nnodes=2")


def check(target):
    script = target.script
    if script.in_preset:
        for option in script.parsed.get("nodes"):
            yield (script.display, option.line, option.col,
                   "#SBATCH --nodes hard-codes the node count; give it at submission (sbatch --nodes N)")
    launchers = list(launcher_commands(script.shell))
    for command in launchers:
        word = command.option("--nnodes")
        if word is not None and word.value is not None and is_decimal(word.value.replace(":", "")):
            yield (script.display, word.line, word.col,
                   f"--nnodes={word.value} is hard-coded; use $SLURM_NNODES")
    if launchers:
        for option in script.parsed.get("ntasks"):
            yield (script.display, option.line, option.col,
                   "--ntasks with torchrun fixes the task count; use --ntasks-per-node=1 and let torchrun fan out")
