"""srun without --kill-on-bad-exit leaves the other tasks running (until the time limit) when one dies."""
from validator.rules.base import GOOD_BATCH, bad_batch, srun_option

ID = "launch-kill-on-bad-exit"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = 'srun without --kill-on-bad-exit leaves the other tasks running (until the time limit) when one dies.'
GOOD = {"run.sbatch": GOOD_BATCH}
BAD = bad_batch("srun --kill-on-bad-exit=1 ", "time srun ")


_TASK_COUNTS = ("nodes", "ntasks", "ntasks-per-node", "tasks-per-node", "ntasks-per-gpu")
# Programs whose tasks work together: when one dies, the others block in a collective.
_COUPLED = ("python", "torchrun", "accelerate", "deepspeed", "composer", "mpirun", "_perf", "torch.distributed",
            "megatron", "nemo", "train", "pretrain")


def _one_task(shell, parsed, command, strict) -> bool:
    """A step of one task (-n1, --ntasks=1, or a job that asks for no more than one node and task):
    there are no other tasks to leave running. Presets take the node count at submission, so the
    strict profile does not read a missing --nodes as one node."""
    count = srun_option(shell, command, "--ntasks", "-n")
    if count is not None:
        return count.value == "1"
    if srun_option(shell, command, "--ntasks-per-node", "--nodes", "-N") is not None:
        return False
    asked = {name: parsed.value(name) for name in _TASK_COUNTS if parsed.get(name)}
    if not asked:  # nothing asked: one node, one task
        return not strict
    return asked.get("nodes") == "1" and all(value == "1" for name, value in asked.items() if name != "nodes") \
        or asked.get("ntasks") == "1"


def _independent_checks(command) -> bool:
    """`srun bash -c '<per-node checks>'`: a literal payload that starts nothing whose tasks work
    together (no python, torchrun, MPI); each node's task finishes on its own."""
    for i, arg in enumerate(command.args):
        if (arg.value or "").rsplit("/", 1)[-1] in ("bash", "sh") and i + 1 < len(command.args):
            if command.args[i + 1].value != "-c" or i + 2 >= len(command.args):
                return False
            payload = command.args[i + 2]
            return payload.raw.startswith("'") and not any(word in payload.raw for word in _COUPLED) \
                and not command.has_flag("--mpi")
    return False


def check(target):
    shell = target.script.shell
    # SLURM_KILL_ON_BAD_EXIT=1 in the environment is srun's --kill-on-bad-exit=1 for every step
    if any(a.name == "SLURM_KILL_ON_BAD_EXIT" and a.value == "1" and a.exported for a in shell.assignments):
        return
    for command in shell.named("srun"):
        kill = srun_option(shell, command, "--kill-on-bad-exit", "-K")
        if (kill is None or kill.value == "0") and not _one_task(shell, target.script.parsed, command, target.strict) \
                and not _independent_checks(command):
            yield (target.script.display, command.line, command.col,
                   "srun without --kill-on-bad-exit=1: when one task dies the others wait until the time limit")
