"""The same option twice: the last silently wins.

Premise: getopt_long hands each occurrence to the option's setter in order (src/sbatch/opt.c,
src/common/slurm_opt.c at slurm-22-05-0-1 and slurm-26-05-1-1): the last one wins, silently.
Holds for: 22.05-26.05.
The same value twice (`-o x.out` ... `--output=x.out`) is not reported: the last one wins and it is the first.
"""
ID = "sbatch-duplicate-option"
SEVERITY = "warning"
SCOPE = "script"
DESCRIPTION = "An #SBATCH option given twice; sbatch keeps the last one without a word."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\n#SBATCH -t 00:10:00\necho ok\n"}
REPEATABLE = {"constraint", "gres", "licenses", "dependency"}


def check(target):
    seen = {}
    for option in target.script.parsed.options:
        if option.name is None or option.name in REPEATABLE:
            continue
        key = (option.component, option.name)  # each component of a heterogeneous job has its own
        if key in seen:
            first = seen[key]
            if option.value == first.value:
                continue  # the same value again: whichever wins, the job gets what was written
            yield (target.script.display, option.line, option.col,
                   f"--{option.name} is already set on line {first.line}; sbatch keeps only this one")
        else:
            seen[key] = option
