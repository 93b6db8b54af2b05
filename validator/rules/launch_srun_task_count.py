"""srun's task count must be a whole number: `srun -np 4` (mpirun's spelling) is -n with the value "p", and srun stops before any task starts.

Premise: srun reads -n/--ntasks with parse_int("--ntasks", arg, true): strtol over the whole value,
which must be a number above zero, else "Invalid numeric value "p" for --ntasks." and exit(1)
(arg_set_ntasks() in src/common/slurm_opt.c, parse_int() in src/common/proc_args.c, the same at
slurm-22-05-0-1 and slurm-26-05-1-1). getopt reads `-np` as -n with the attached value "p" (srun has
no -np; mpirun and mpiexec do). Only srun's own options are read (the words before the program it
runs: `srun -N1 mpirun -np 4 prog` passes -np to mpirun; `srun -J -np` names the job "-np"), only
literal values that are no template's token (`{ntasks}`, `@NTASKS@`, `__NTASKS__`; a bare `NP` is
reported: a forgotten `$`), and only where the
srun command parses whole (a template's `-n $((~~NODES~~ * ~~PPN~~))` does not).
Holds for: 22.05-26.05.
Also a step that asks more nodes than the job has: srun's own literal --nodes/-N above the job's literal --nodes
stops with "Only allocated N nodes asked for M" before any task starts (_job_create_structure in
src/srun/libsrun/srun_job.c at slurm-22-05-0-1, src/srun/srun_job.c at slurm-26-05-1-1; round 546's
`srun --nodes=8` in a job of `--nodes 2`, a step judged unable to start). Not where srun names another job or
component (--jobid, --het-group), the job's count is a range or an expansion, or the job is heterogeneous
(srun.exceeds_job_nodes), nor a step that does not run wherever the script goes (inside an `if`, a `case` arm, a
loop or a function: a test of SLURM_JOB_NUM_NODES may guard it for jobs that sbatch's -N made larger). sbatch's
command line may raise --nodes over the directive; a script that says 2 and always runs a step of 8 is wrong as
written.
"""
from validator.rules.base import always_runs, statement_of
from validator.rules.srun import exceeds_job_nodes, own_options, refused_task_count, srun_commands

ID = "launch-srun-task-count"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = ("srun's -n/--ntasks must be a whole number above zero: `srun -np 4` (mpirun's spelling) is -n with "
               "the value 'p', and srun exits with 'Invalid numeric value' before any task starts.")
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\n"
                      "srun --kill-on-bad-exit=1 -n 4 python3 decompose.py\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\n"
                     "srun --kill-on-bad-exit=1 -np 4 python3 decompose.py\n"}


def check(target):
    shell = target.script.shell
    for command in srun_commands(shell):
        refused = refused_task_count(command, shell, bool(target.script.parsed.template_lines))
        if refused is None:
            asked = exceeds_job_nodes(own_options(command, shell), target.script.parsed, shell)
            # only a step that runs wherever the script goes (not under `if [ $SLURM_JOB_NUM_NODES -ge 4 ]`, which
            # runs it where sbatch's -N raised the count)
            statement = statement_of(command.node) if command.node is not None else None
            if asked is not None and always_runs(statement) and statement.type != "list":
                nodes = int(target.script.parsed.value("nodes"))
                yield (target.script.display, command.line, command.col,
                       f"srun asks {asked} nodes in a job of --nodes={nodes}: srun stops with 'Only allocated "
                       f"{nodes} nodes asked for {asked}' before any task starts")
            continue
        option, value = refused
        hint = " (srun has no -np: that is mpirun's; write -n N)" if option == "-n" and value.startswith("p") else ""
        yield (target.script.display, command.line, command.col,
               f"srun {option} {value!r}: no task count srun takes (a whole number above zero); srun exits "
               f"before any task starts{hint}")

