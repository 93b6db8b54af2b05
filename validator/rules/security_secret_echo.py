"""A secret (API key, token, password) printed with echo/printf lands in the job log.

Premise: what a job prints lands in its log, readable by the account and often the group. Holds for:
every Slurm release (no Slurm behaviour involved).
"""
from validator.rules.base import is_secret
ID = "security-secret-echo"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = 'A secret (API key, token, password) printed with echo/printf lands in the job log.'
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\necho \"wandb on: ${WANDB_API_KEY:+yes}\"\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\necho \"key: $WANDB_API_KEY\"\n"}


def check(target):
    import bisect

    secrets = sorted(((e.node.start_byte, i, e) for i, e in enumerate(target.script.shell.expansions)
                      if is_secret(e.name)), key=lambda t: t[:2])
    starts = [s for s, _, _ in secrets]
    for command in target.script.shell.named("echo", "printf"):
        start, end = command.node.start_byte, command.node.end_byte
        # only the secret expansions inside this command: a bisect, not a scan of every expansion
        for _, _, expansion in secrets[bisect.bisect_left(starts, start):bisect.bisect_left(starts, end)]:
            if ":+" in expansion.node.text.decode("utf-8", "replace"):  # ${KEY:+yes} says whether it is set
                continue
            yield (target.script.display, expansion.line, expansion.col,
                   f"{expansion.name} is printed into the log")
