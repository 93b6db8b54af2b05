"""srun without --kill-on-bad-exit leaves the other tasks running (until the time limit) when one dies."""
from validator.rules.base import GOOD_BATCH, bad_batch

ID = "launch-kill-on-bad-exit"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = 'srun without --kill-on-bad-exit leaves the other tasks running (until the time limit) when one dies.'
GOOD = {"run.sbatch": GOOD_BATCH}
BAD = bad_batch("srun --kill-on-bad-exit=1 ", "srun ")


def check(target):
    for command in target.script.shell.named("srun"):
        kill = command.option("--kill-on-bad-exit", "-K")
        if kill is None or kill.value == "0":
            yield (target.script.display, command.line, command.col,
                   "srun without --kill-on-bad-exit=1: when one task dies the others wait until the time limit")
