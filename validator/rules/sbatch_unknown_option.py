"""An #SBATCH option that no Slurm release knows: sbatch rejects the script."""
ID = "sbatch-unknown-option"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = "An #SBATCH option that no Slurm release knows: sbatch rejects the script."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\n#SBATCH --gpus-per-tsk=8\necho ok\n"}
PROBLEMS = ("unknown",)


def check(target):
    for option in target.script.parsed.options:
        if option.problem in PROBLEMS:
            yield (target.script.display, option.line, option.col, option.detail + _hint(option))


def _hint(option):
    if option.problem != "unknown" or not option.written.startswith("--"):
        return ""
    import difflib

    from validator.sbatch import known_options
    name = option.written[2:].split("=")[0]
    close = difflib.get_close_matches(name, list(known_options(("pyxis",), None)), n=1)
    return f"; did you mean '--{close[0]}'?" if close else ""
