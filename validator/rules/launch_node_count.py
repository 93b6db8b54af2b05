"""The node count must come from the submission: no #SBATCH --nodes in a preset, no literal torchrun --nnodes, no --ntasks beside torchrun."""
import re

from validator.rules.base import GOOD_BATCH, as_int, bad_batch, is_decimal, launcher_commands, srun_option
ID = "launch-node-count"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = ('The node count must come from the submission: no #SBATCH --nodes in a preset, no literal torchrun --nnodes, '
               'no torchrun without --nnodes in a job of several nodes, no --ntasks beside torchrun.')
GOOD = {"run.sbatch": GOOD_BATCH}
BAD = bad_batch('--nnodes="$SLURM_NNODES"', "--nnodes=2")


_ONE_NODE_STEP = re.compile(r"(?:-N\s*1|--nodes[= ]1)(?![\d-])")


def _several_nodes(parsed) -> str | None:
    """The node count a job asks for when it is more than one (--nodes=4, --nodes=2-4)."""
    value = parsed.value("nodes") or ""
    low = as_int(value.split("-")[0])
    return value if low is not None and low > 1 else None


def check(target):
    script = target.script
    if script.in_preset:
        for option in script.parsed.get("nodes"):
            yield (script.display, option.line, option.col,
                   "#SBATCH --nodes hard-codes the node count; give it at submission (sbatch --nodes N)")
    launchers = list(launcher_commands(script.shell))
    several = _several_nodes(script.parsed)
    for command in launchers:
        word = command.option("--nnodes")
        passed = word or srun_option(script.shell, command, "--nnodes", "--nnodes")  # also through an array
        if passed is None and several and not _ONE_NODE_STEP.search(command.node.text.decode("utf-8", "replace")):
            yield (script.display, command.line, command.col,
                   f"torchrun without --nnodes in a job of {several} nodes: each node starts its own one-node job; "
                   "pass --nnodes=$SLURM_NNODES with a rendezvous endpoint")
        if word is not None and word.value is not None and is_decimal(word.value.replace(":", "")):
            yield (script.display, word.line, word.col,
                   f"--nnodes={word.value} is hard-coded; use $SLURM_NNODES")
    if launchers:
        for option in script.parsed.get("ntasks"):
            yield (script.display, option.line, option.col,
                   "--ntasks with torchrun fixes the task count; use --ntasks-per-node=1 and let torchrun fan out")
