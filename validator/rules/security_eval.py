"""eval runs text as code: with values from manifests or the environment that is an injection; use arrays."""

ID = "security-eval"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = 'eval runs text as code: with values from manifests or the environment that is an injection; use arrays.'
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\nargs=(--time 5)\necho \"${args[@]}\"\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\neval \"echo $ARGS\"\n"}


def check(target):
    for command in target.script.shell.named("eval"):
        yield (target.script.display, command.line, command.col, "eval runs text as code; build an argument array instead")
