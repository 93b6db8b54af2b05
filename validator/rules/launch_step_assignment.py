"""srun runs its first word after the options as the program: `srun VAR=value prog` asks for a program named 'VAR=value' and every task fails to start.

Premise: srun hands the words after its options to slurmstepd as the task's argv; slurmstepd looks
argv[0] up in the step's PATH (_build_path) and execve()s it, with no shell between them that would
read `VAR=value` as an assignment (src/slurmd/slurmstepd/task.c at slurm-22-05-0-1 and
slurm-26-05-1-1: `task->argv[0] = _build_path(task->argv[0], ...)`, then `execve(task->argv[0], ...)`
and `error("execve(): %s: %m", task->argv[0])` when it returns). 'LD_PRELOAD=/x/lib.so' is no file:
"execve(): LD_PRELOAD=/x/lib.so: No such file or directory" on every task. Holds for: 22.05-26.05.
Set the variable before srun (export VAR=value: srun passes the environment on), with
`--export=ALL,VAR=value`, or run `env VAR=value prog`.
"""
import re

from validator.rules.srun import srun_commands, step_program

ID = "launch-step-assignment"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = ("srun runs its first word after the options as the program: `srun VAR=value prog` makes every task "
               "fail to start (execve: No such file); export the variable before srun or use `env VAR=value prog`.")
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\nexport LD_PRELOAD=/opt/lib/libjemalloc.so\n"
                      "srun --kill-on-bad-exit=1 python3 train.py\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\n"
                     "srun --kill-on-bad-exit=1 LD_PRELOAD=/opt/lib/libjemalloc.so python3 train.py\n"}

_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def check(target):
    shell = target.script.shell
    for command in srun_commands(shell):
        program = step_program(command, shell)
        if program is None:
            continue
        word = program.value if program.value is not None else program.raw
        if _ASSIGNMENT.match(word):
            name = word.split("=", 1)[0]
            yield (target.script.display, program.line, program.col,
                   f"srun runs '{name}=...' as the program (slurmstepd execve()s it: No such file or directory); "
                   f"export {name} before srun, or run 'env {name}=... PROGRAM'")
