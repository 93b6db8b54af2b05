"""An option the selected Slurm release lacks, or a SPANK plugin's option the script does not declare."""
ID = "sbatch-option-unavailable"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = "An option the selected Slurm release lacks, or a SPANK plugin's option the script does not declare."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\n#SBATCH --power=level\necho ok\n"}  # gone since 24.05
PROBLEMS = ("unavailable", "spank")


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
