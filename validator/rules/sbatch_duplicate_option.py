"""The same option twice: the last silently wins.

Premise: getopt_long hands each occurrence to the option's setter in order (src/sbatch/opt.c,
src/common/slurm_opt.c at slurm-22-05-0-1 and slurm-26-05-1-1): the last one wins, silently.
Holds for: 22.05-26.05.
The same value twice (`-o x.out` ... `--output=x.out`) is not reported: the last one wins and it is the first.
In a script nobody here wrote (the default profile), an option the job has one value of (its time
limit, partition, QOS, account, name, counts, array range, output and error files) given twice is an
override that the author stacked: the last line is the choice (`-t 10` then `--time=00:30:00`,
partition lines of which the last is the one meant, `--array=6-10` under `--array=0-10` for a rerun,
a per-task `%a` output pair under a single job's pair; rounds eighteen to twenty-four: 9 of 11 such
findings judged false). What is lost there is reported: options whose values add up, where a repeat
drops part of what was asked (--acctg-freq's parts, --exclude's nodes, --mail-type's events from
25.05; every round: 17 of 17 judged true). Our presets (the strict profile) keep every repeat reported.
--mail-type is the one option whose repeats added up before 25.05: arg_set_mail_type() OR-ed each
value into the job's mail types until SchedMD commit fac544cef5 (first in slurm-25-05-0-0rc1: "multiple
--mail-type arguments will not be merged") made it keep the last. Below 25.05 its repeats are not
reported.
"""
from validator.sbatch import before

MAIL_TYPE_LAST_WINS = "25.05"  # fac544cef5, src/common/slurm_opt.c
ID = "sbatch-duplicate-option"
SEVERITY = "warning"
SCOPE = "script"
DESCRIPTION = "An #SBATCH option given twice; sbatch keeps the last one without a word."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\n#SBATCH --mail-type=BEGIN\n#SBATCH --mail-type=END\n"
                     "echo ok\n"}
REPEATABLE = {"constraint", "gres", "licenses", "dependency"}
# Values that add up: a repeat drops part of what was asked (the default profile reports only these)
ADDS_UP = {"mail-type", "acctg-freq", "exclude"}


def check(target):
    seen = {}
    for option in target.script.parsed.options:
        if option.name is None or option.name in REPEATABLE or (option.name not in ADDS_UP and not target.strict):
            continue
        if option.name == "mail-type" and before(target.release, MAIL_TYPE_LAST_WINS):
            continue  # OR-ed together before 25.05: every line's events are mailed
        key = (option.component, option.name)  # each component of a heterogeneous job has its own
        if key in seen:
            first = seen[key]
            if option.value == first.value:
                continue  # the same value again: whichever wins, the job gets what was written
            yield (target.script.display, option.line, option.col,
                   f"--{option.name} is already set on line {first.line}; sbatch keeps only this one")
        else:
            seen[key] = option
