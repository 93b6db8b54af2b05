"""A secret (API key, token, password) printed with echo/printf lands in the job log."""
from validator.rules.base import is_secret
ID = "security-secret-echo"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = 'A secret (API key, token, password) printed with echo/printf lands in the job log.'
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\necho \"wandb on: ${WANDB_API_KEY:+yes}\"\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\necho \"key: $WANDB_API_KEY\"\n"}


def check(target):
    for command in target.script.shell.named("echo", "printf"):
        start, end = command.node.start_byte, command.node.end_byte
        for expansion in target.script.shell.expansions:
            node = expansion.node
            if not (start <= node.start_byte < end) or not is_secret(expansion.name):
                continue
            if ":+" in node.text.decode():  # ${KEY:+yes} prints whether it is set, not the value
                continue
            yield (target.script.display, expansion.line, expansion.col,
                   f"{expansion.name} is printed into the log")
