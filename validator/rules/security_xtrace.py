"""set -x (xtrace) prints every expanded value into the job log: never where a secret is in scope.

Premise: set -x prints every command with its expanded values to stderr, the job log (bash(1)).
Holds for: every Slurm release (no Slurm behaviour involved).
"""
from validator.rules.base import sourced_shells
from validator.secrets import is_secret
ID = "security-xtrace"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = 'set -x (xtrace) prints every expanded value into the job log: never where a secret is in scope.'
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\nWANDB_API_KEY=$(<\"$HOME/.key\")\nexport WANDB_API_KEY\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euxo pipefail\nWANDB_API_KEY=$(<\"$HOME/.key\")\nexport WANDB_API_KEY\n"}


def check(target):
    shell = target.script.shell
    secrets = set()
    for scope in (shell, *sourced_shells(target)):  # a sourced library's secrets are in scope too
        secrets |= {a.name for a in scope.assignments if is_secret(a.name)}
        secrets |= {e.name for e in scope.expansions if is_secret(e.name)}
    secrets = sorted(secrets)
    if not secrets:
        return
    for command in shell.commands:
        words = [a.value or "" for a in command.args]
        tracing = (command.name == "set" and (any(w.startswith("-") and "x" in w and not w.startswith("--") for w in words)
                                              or "xtrace" in words)) or \
                  (command.name in ("bash", "sh") and "-x" in words)
        if tracing:
            yield (target.script.display, command.line, command.col,
                   f"xtrace prints expanded values into the log while {secrets[0]} is in scope")
