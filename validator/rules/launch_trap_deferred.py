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
Reported on the last foreground step or work program (srun, mpirun, python, torchrun, ...: base.WORK_PROGRAMS)
after the trap and after the script's last `wait`: the work running when the signal comes before the limit;
the usual fix, `srun ... &` then `wait`, leaves no such command.
A trap inside a function or a subshell, or a directive without B:, is left alone (without B: the signal
goes to the steps, not the shell).
Holds for: 22.05-26.05 (the B: flag and its text are the same in both).
"""
import re

from validator.rules.base import WORK_PROGRAMS, backgrounded, enclosing, in_function, is_batch_script

ID = "launch-trap-deferred"
SEVERITY = "warning"
SCOPE = "script"
DESCRIPTION = ("A trap for the signal --signal=B:SIG sends the batch shell, while the work runs in the foreground: "
               "bash runs the trap only when that command ends, at the time limit; start the step with '&' and 'wait'.")
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=01:00:00\n#SBATCH --signal=B:USR1@120\nset -euo pipefail\n"
                      "trap 'scontrol requeue \"$SLURM_JOB_ID\"' USR1\nsrun --kill-on-bad-exit=1 python3 train.py &\n"
                      "wait $!\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=01:00:00\n#SBATCH --signal=B:USR1@120\nset -euo pipefail\n"
                     "trap 'scontrol requeue \"$SLURM_JOB_ID\"' USR1\nsrun --kill-on-bad-exit=1 python3 train.py\n"}

# get_signal_opts(): an optional R, B, R (any case), an optional ':', the signal, an optional @time
_SIGNAL = re.compile(r"(?i)(r?)(b?)(r?):?([A-Za-z0-9+]+)(?:@.*)?")
# Signal numbers as Linux numbers them (signal(7), x86 and arm64), for `trap h 10` and `--signal=B:10`
_NUMBERS = {"1": "HUP", "2": "INT", "3": "QUIT", "10": "USR1", "12": "USR2", "15": "TERM", "18": "CONT"}


def _signal_name(word: str) -> str:
    word = word.upper()
    word = word[3:] if word.startswith("SIG") else word
    return _NUMBERS.get(word, word)


def _batch_signals(parsed) -> dict:
    """signal name -> the --signal directive that sends it to the batch shell (B:)."""
    found = {}
    for option in parsed.get("signal"):
        match = _SIGNAL.fullmatch((option.value or "").strip())
        if match and match.group(2):
            found[_signal_name(match.group(4))] = option
    return found


def _trapped(command) -> set:
    """The signals a `trap ACTION SIG...` sets a handler for (not `trap - SIG` or `trap '' SIG`, which reset
    or ignore, nor `trap -p`/`trap -l`)."""
    words = [a.value if a.value is not None else a.raw for a in command.args]
    if words and words[0] == "--":
        words = words[1:]
    if len(words) < 2 or words[0] in ("-", "-p", "-l", "", "''", '""'):
        return set()
    return {_signal_name(w) for w in words[1:]}


def _work(command) -> bool:
    return command.name == "srun" or command.name.rsplit("/", 1)[-1] in WORK_PROGRAMS


def check(target):
    script = target.script
    if not is_batch_script(script):
        return
    signals = _batch_signals(script.parsed)
    if not signals:
        return
    shell = script.shell
    traps = [(c, signals.keys() & _trapped(c)) for c in shell.named("trap")
             if not in_function(c.node) and enclosing(c.node, ("subshell", "command_substitution")) is None]
    traps = [(c, names) for c, names in traps if names]
    if not traps:
        return
    trap, names = min(traps, key=lambda item: item[0].node.start_byte)
    last_wait = max((c.node.start_byte for c in shell.named("wait")), default=-1)
    foreground = [c for c in shell.commands
                  if c.node.start_byte > max(trap.node.start_byte, last_wait) and _work(c) and not backgrounded(c)
                  and not in_function(c.node) and enclosing(c.node, ("command_substitution", "subshell")) is None]
    if not foreground:
        return  # the work is handed to wait: the shell is in `wait` when the signal comes
    command = foreground[-1]  # the last work of the job: what runs when the signal comes before the limit
    name = sorted(names)[0]
    option = signals[name]
    yield (script.display, command.line, command.col,
           f"--signal={option.value} (line {option.line}) signals only the batch shell, and bash runs its {name} "
           f"trap (line {trap.line}) only when this foreground {command.name} ends: the handler runs at the time "
           "limit, not before it; start the step with '&' and 'wait' for it")
