"""Lines that look like directives but that Slurm treats as comments."""
ID = "sbatch-lookalike"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = "'# SBATCH', '#sbatch', an indented '#SBATCH' or '#SBATCHx': Slurm ignores the line."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\n# SBATCH --gpus-per-task=8\nset -euo pipefail\necho ok\n"}


def check(target):
    lookalikes = target.script.parsed.lookalikes
    inside = target.script.shell.heredoc_lines() if lookalikes else set()
    for look in lookalikes:
        if look.line in inside:
            continue
        yield (target.script.display, look.line, look.col, look.why)
