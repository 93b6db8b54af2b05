"""A batch script must run with set -euo pipefail before its first srun, or failures (also in srun | tee) go unnoticed."""
from validator.rules.base import GOOD_BATCH, bad_batch, is_batch_script
ID = "launch-strict-mode"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = 'A batch script must run with set -euo pipefail before its first srun, or failures (also in srun | tee) go unnoticed.'
GOOD = {"run.sbatch": GOOD_BATCH}
BAD = bad_batch("set -euo pipefail\n", "set -e\n")


def _flags(command):
    flags, options = set(), set()
    words = [a.value or "" for a in command.args]
    for i, word in enumerate(words):
        if word.startswith("-") and not word.startswith("--"):
            letters = word[1:]
            if "o" in letters and i + 1 < len(words):
                options.add(words[i + 1])
            flags.update(letters.replace("o", ""))
    return flags, options


def check(target):
    script = target.script
    if not is_batch_script(script):
        return
    shell = script.shell
    first_srun = min((c.line for c in shell.named("srun")), default=None)
    flags, options = set(), set()
    for command in shell.named("set"):
        if first_srun is None or command.line < first_srun:
            f, o = _flags(command)
            flags |= f
            options |= o
    missing = [name for name, ok in (("-e", "e" in flags or "errexit" in options),
                                     ("-u", "u" in flags or "nounset" in options),
                                     ("-o pipefail", "pipefail" in options)) if not ok]
    if missing:
        line = script.parsed.first_command_line or 1
        piped = [c for c in shell.named("srun") if c.in_pipeline]
        extra = " (srun in a pipeline: its failure is lost without pipefail)" if piped and "-o pipefail" in missing else ""
        yield (script.display, line, 1, f"missing {', '.join(missing)}: add 'set -euo pipefail' before the first srun{extra}")
