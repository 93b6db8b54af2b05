"""A stray word, a missing value or a value given to a flag in an #SBATCH line."""
ID = "sbatch-bad-argument"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = "A stray word, a missing value or a value given to a flag in an #SBATCH line."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\n#SBATCH --no-requeue=yes 8\necho ok\n"}
PROBLEMS = ("stray", "missing-argument", "unexpected-argument")


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
