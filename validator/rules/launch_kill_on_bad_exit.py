"""srun without --kill-on-bad-exit leaves the other tasks running (until the time limit) when one dies."""
from validator.rules.base import GOOD_BATCH, bad_batch, srun_option

ID = "launch-kill-on-bad-exit"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = 'srun without --kill-on-bad-exit leaves the other tasks running (until the time limit) when one dies.'
GOOD = {"run.sbatch": GOOD_BATCH}
BAD = bad_batch("srun --kill-on-bad-exit=1 ", "time srun ")


def _one_task(shell, command) -> bool:
    """A step of one task (-n1, --ntasks=1): there are no other tasks to leave running."""
    count = srun_option(shell, command, "--ntasks", "-n")
    return count is not None and count.value == "1"


def check(target):
    shell = target.script.shell
    # SLURM_KILL_ON_BAD_EXIT=1 in the environment is srun's --kill-on-bad-exit=1 for every step
    if any(a.name == "SLURM_KILL_ON_BAD_EXIT" and a.value == "1" and a.exported for a in shell.assignments):
        return
    for command in shell.named("srun"):
        kill = srun_option(shell, command, "--kill-on-bad-exit", "-K")
        if (kill is None or kill.value == "0") and not _one_task(shell, command):
            yield (target.script.display, command.line, command.col,
                   "srun without --kill-on-bad-exit=1: when one task dies the others wait until the time limit")
