"""A trap for the signal `--signal=B:SIG@T` sends the batch shell, while the job's work runs in the foreground: the shell runs the trap only when that command ends, so the handler meant to run T seconds before the limit runs at the end, if at all.

Premise: `--signal=B:SIG@T` signals only the batch shell ("Use the "B:" option to signal only the batch
shell, none of the other processes will be signaled", sbatch.1 at slurm-22-05-8-1 and slurm-26-05-3-1;
get_signal_opts() in src/common/proc_args.c reads R, B, R and ':' before the signal's name). bash(1),
SIGNALS: "If bash is waiting for a command to complete and receives a signal for which a trap has been
set, the trap will not be executed until the command completes. When bash is waiting for an asynchronous
command via the wait builtin, the reception of a signal for which a trap has been set will cause the wait
builtin to return immediately" (POSIX says the same of every sh). Checked here: bash 5.2 runs a USR1 trap
only when a foreground `sleep 4` ends, and at once during `wait`; on the real Slurm 22.05.8 of the local
cluster, `scancel --batch --signal=USR1` (the batch-shell delivery --signal=B: uses) 6 s into a job ran
the trap at 20 s, when its foreground `srun sleep 20` ended, and at 3 s in the same job with `srun sleep
20 &` and `wait $!`. So a checkpoint or requeue handler for that signal runs when the step has ended,
at the time limit (when Slurm kills the step) rather than T seconds before it.
Reported, conservatively, on the last foreground step or work program (srun, mpirun, python, torchrun, ...:
base.WORK_PROGRAMS, not inside `$( )`) after the trap, only where the script has no `wait` at all, no
`exec` after the trap (it replaces the shell, and srun forwards the signal to its tasks: launch_fwd_signal()
in src/srun/signals.c), no function that starts work (what runs last is then hard to tell), and the handler
does more than print (`trap 'echo got USR1' USR1` loses nothing by running late). The signal is the last
--signal directive's, sent to the batch shell when any of them carried B (get_signal_opts() keeps the B flag
and replaces the signal); the trap is the last `trap` for it before the work, so `trap - USR1` resets it.
A trap inside a function or a subshell, or a directive without B, is left alone (without B the signal goes
to the steps, not the shell).
Holds for: 22.05-26.05 (the B: flag and its text are the same in both).
"""
import re

from validator.rules.base import (backgrounded, enclosing, function_definitions, in_function, is_batch_script, job_work,
                                  signal_name, trap_words)
from validator.shell import parse_shell

ID = "launch-trap-deferred"
SEVERITY = "warning"
SCOPE = "script"
DESCRIPTION = ("A trap for the signal that --signal=B:SIG sends the batch shell, while the work runs in the foreground: "
               "the shell runs the trap only when that command ends; start the work with '&' and 'wait' for it.")
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=01:00:00\n#SBATCH --signal=B:USR1@120\nset -euo pipefail\n"
                      "trap 'scontrol requeue \"$SLURM_JOB_ID\"' USR1\nsrun --kill-on-bad-exit=1 python3 train.py &\n"
                      "wait $!\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=01:00:00\n#SBATCH --signal=B:USR1@120\nset -euo pipefail\n"
                     "trap 'scontrol requeue \"$SLURM_JOB_ID\"' USR1\nsrun --kill-on-bad-exit=1 python3 train.py\n"}

# get_signal_opts(): an optional R, B, R (any case), an optional ':', the signal, an optional @time
_SIGNAL = re.compile(r"(?i)(r?)(b?)(r?):?([A-Za-z0-9+]+)(?:@.*)?")
# A handler that only prints loses nothing by running late
_PRINT_ONLY = {"echo", "printf", ":", "true", "date", "logger"}


def job_signal(parsed):
    """(signal name, the directive that set it, whether it goes to the batch shell) of the job's --signal, else
    None: the last directive's signal, with B from any of them (get_signal_opts() sets KILL_JOB_BATCH in the
    flags it keeps, and each directive replaces the signal and its time). Read by launch-trap-steps-only too."""
    batch, last = False, None
    for option in parsed.get("signal"):
        match = _SIGNAL.fullmatch((option.value or "").strip())
        if match:
            batch |= bool(match.group(2))
            last = (signal_name(match.group(4)), option)
    return (*last, batch) if last else None


def _batch_signal(parsed):
    """(signal name, the directive that set it) when the job's --signal goes to the batch shell, else None."""
    found = job_signal(parsed)
    return found[:2] if found and found[2] else None


def handler(command, signal: str):
    """What this `trap` does to `signal`: None when it does not name it; "" when it resets or ignores it
    (`trap - SIG`, `trap '' SIG`, `trap SIG`); else the action's text."""
    words = trap_words(command)
    if not words or words[0] in ("-p", "-l"):
        return None
    if len(words) == 1:  # `trap USR1`: resets USR1 (bash(1), trap)
        return "" if signal_name(words[0]) == signal else None
    if signal not in {signal_name(w) for w in words[1:]}:
        return None
    action = words[0].strip("'\"")
    return "" if action == "-" else action


def prints_only(shell, action: str) -> bool:
    """The handler runs only printing commands, also through the script's own functions it calls."""
    bodies = dict(function_definitions(shell))
    names = []
    for command in parse_shell(action).commands:
        if command.name in bodies:
            names += [c.name for c in shell.commands if enclosing(c.node, ("function_definition",)) == bodies[command.name]]
        else:
            names.append(command.name)
    return bool(names) and all(name in _PRINT_ONLY for name in names)


def _work(command) -> bool:
    return command.name == "srun" or job_work(command)


def check(target):
    script = target.script
    if not is_batch_script(script):
        return
    found = _batch_signal(script.parsed)
    if found is None:
        return
    signal, option = found
    shell = script.shell
    if shell.named("wait") or any(_work(c) and in_function(c.node) for c in shell.commands):
        return  # work handed to wait somewhere, or started in a function: what runs last is not plain
    state, trap = "", None  # the signal's handler as the batch shell has it, statement by statement
    last = None
    for command in sorted(shell.commands, key=lambda c: c.node.start_byte):
        if in_function(command.node) or enclosing(command.node, OWN_SHELL) is not None:
            continue
        if command.name == "trap":
            action = handler(command, signal)
            if action is not None:
                state, trap = action, command
        elif command.name == "exec" and command.args and state:
            return  # the shell is replaced: no trap any more, and srun forwards the signal to its tasks
        elif _work(command) and not backgrounded(command):
            last = (command, trap, state)  # the handler the shell has while this work runs
    if last is None or not last[2] or prints_only(shell, last[2]):
        return
    command, trap, action = last
    yield (script.display, command.line, command.col,
           f"--signal={option.value} (line {option.line}) signals only the batch shell, which runs its {signal} trap "
           f"(line {trap.line}) only when this foreground {command.name} ends: at the time limit, if the limit's "
           "TERM leaves it time, not before it; start the work with '&' and 'wait' for it")


# A subshell or `$( )` has its own traps and does not hold the batch shell's
OWN_SHELL = ("subshell", "command_substitution")
