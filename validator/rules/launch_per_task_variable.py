"""Per-task variables (SLURM_NODEID, SLURM_PROCID, SLURM_LOCALID, SLURM_GPUS_ON_NODE) expanded in the batch shell, where they describe node 0 only.

Premise: SLURM_NODEID, SLURM_PROCID and SLURM_LOCALID are set per task by slurmstepd (setup_env in
src/common/env.c at slurm-22-05-0-1 and slurm-26-05-1-1), SLURM_GPUS_ON_NODE per node
(gres_common.c); in the batch shell they are node 0's, task 0's. Holds for: 22.05-26.05.
"""
from validator.rules.base import GOOD_BATCH, bad_batch, is_batch_script
ID = "launch-per-task-variable"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = 'Per-task variables (SLURM_NODEID, SLURM_PROCID, SLURM_LOCALID, SLURM_GPUS_ON_NODE) expanded in the batch shell, where they describe node 0 only.'
GOOD = {"run.sbatch": GOOD_BATCH}
BAD = bad_batch("srun --kill-on-bad-exit=1", 'echo "node $SLURM_NODEID"\nsrun --kill-on-bad-exit=1')


PER_TASK = {"SLURM_NODEID", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_GPUS_ON_NODE"}


def _same_on_every_node(parsed) -> bool:
    """Every node gets the same GPU request (--gpus-per-node, --gres=gpu:N, one task per node, or
    --gpus-per-task with --ntasks-per-node): node 0's SLURM_GPUS_ON_NODE is every node's."""
    if parsed.get("gpus-per-node") or any("gpu" in (o.value or "") for o in parsed.get("gres")):
        return True
    return parsed.value("ntasks-per-node") == "1" or (bool(parsed.get("gpus-per-task"))
                                                     and bool(parsed.get("ntasks-per-node")))


def check(target):
    script = target.script
    if not is_batch_script(script):
        return
    uniform = _same_on_every_node(script.parsed)
    for expansion in script.shell.expansions:
        if expansion.name == "SLURM_GPUS_ON_NODE" and uniform:
            continue
        if expansion.name in PER_TASK:
            yield (script.display, expansion.line, expansion.col,
                   f"${expansion.name} is expanded by the batch shell (node 0's value for every node); "
                   "expand it inside the step: single quotes, \\$, or a script the step runs")
