"""A batch-shell trap for the signal of a `--signal` without B: Slurm sends that signal only to the job's steps, never
to the batch shell, so the trap never runs.

Premise: send_job_warn_signal() in src/slurmctld/job_mgr.c ("If --signal B option was not specified, signal only the
steps but not the batch step": KILL_STEPS_ONLY, at slurm-22-05-0-1 and slurm-26-05-3-1), and slurmd's
_rpc_signal_tasks hands KILL_STEPS_ONLY to _kill_all_active_steps with the batch step left out (src/slurmd/slurmd/
req.c at slurm-22-05-0-1). sbatch.1 says the same: "By default all job steps will be signaled, but not the batch
shell itself". Measured on the local cluster (Slurm 22.05.8, `--time=2 --signal=USR1@100`): a batch-shell USR1 trap
beside `sleep 170 & wait` and a python handler run in the batch shell got nothing until the limit; the same python
under srun got USR1 within a minute; with --signal=B:USR1@100 the trap ran. So a requeue or checkpoint handler set
with `trap` in the batch script never runs, and the job meets its limit unsaved.
Reported on the first top-level trap that sets a handler for the signal (not one in a function or a subshell, which
are not the batch shell's own, nor one that only prints: nothing is lost), where no --signal directive carries B
(launch-trap-deferred covers B) and the script does not send the signal itself (`kill -USR1 $$`, `scancel --signal`:
then the trap has a sender).
Holds for: 22.05-26.05 (the same code and text at both tags).
"""
from validator.rules.base import enclosing, in_function, is_batch_script, kill_signals, scancel_signals_only
from validator.rules.launch_trap_deferred import OWN_SHELL, handler, job_signal, prints_only

ID = "launch-trap-steps-only"
SEVERITY = "warning"
SCOPE = "script"
DESCRIPTION = ("A batch-shell trap for the signal of a --signal without B: Slurm signals only the job's steps, never "
               "the batch shell, so the trap never runs; write --signal=B:SIG@T.")
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=01:00:00\n#SBATCH --signal=B:USR1@120\nset -euo pipefail\n"
                      "trap 'scontrol requeue \"$SLURM_JOB_ID\"' USR1\nsrun --kill-on-bad-exit=1 python3 train.py &\n"
                      "wait $!\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=01:00:00\n#SBATCH --signal=USR1@120\nset -euo pipefail\n"
                     "trap 'scontrol requeue \"$SLURM_JOB_ID\"' USR1\nsrun --kill-on-bad-exit=1 python3 train.py &\n"
                     "wait $!\n"}


def _sends_itself(shell, signal: str) -> bool:
    """The script sends the signal itself: `kill -USR1 $$`, `kill -s USR1 PID`, `kill -10 ...`, `pkill -USR1`, or
    scancel with --signal/-s (which reaches the batch shell with --batch or --full)."""
    for command in shell.named("kill", "pkill", "killall", "scancel"):
        if scancel_signals_only(command) if command.name == "scancel" else signal in kill_signals(command):
            return True
    return False


def check(target):
    script = target.script
    if not is_batch_script(script):
        return
    found = job_signal(script.parsed)
    if found is None or found[2]:
        return  # no --signal, or one that reaches the batch shell (launch-trap-deferred's)
    signal, option, _ = found
    shell = script.shell
    if _sends_itself(shell, signal):
        return
    for command in sorted(shell.named("trap"), key=lambda c: c.node.start_byte):
        if in_function(command.node) or enclosing(command.node, OWN_SHELL) is not None:
            continue
        action = handler(command, signal)
        if action and not prints_only(shell, action):
            flags, _, rest = option.value.rpartition(":")  # `R:USR1@60` keeps its R: `RB:USR1@60`
            yield (script.display, command.line, command.col,
                   f"--signal={option.value} (line {option.line}) has no B:, so Slurm sends {signal} only to the "
                   f"job's steps, never to the batch shell: this trap never runs; write --signal={flags}B:{rest}")
            return
