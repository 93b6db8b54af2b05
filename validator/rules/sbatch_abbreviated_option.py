"""An abbreviated long option: getopt_long accepts a unique prefix; a release where it is not unique rejects it.

Premise: getopt_long accepts a unique prefix of a long option (_set_options in src/sbatch/opt.c at
slurm-22-05-0-1 and slurm-26-05-1-1); a release whose options make the prefix ambiguous, or lack the
option, rejects it. The option table (validator/data/sbatch_options.json: every release 22.05-26.05)
says which: the default profile reports an abbreviation only where some release of that range
resolves it otherwise (ambiguous, another option, or none); one that means the same option in every
release works as written. Spelling options out in full is the strict profile's policy (a future
release may add an option with the same prefix). Holds for: 22.05-26.05, per release in the table.
"""
from validator.rules.base import option_check
from validator.sbatch import option_table, releases

ID = "sbatch-abbreviated-option"
SEVERITY = "warning"
SCOPE = "script"
DESCRIPTION = ("An abbreviated long option that some Slurm release from 22.05 on resolves otherwise (the strict "
               "profile: any abbreviation; a new option with the same prefix breaks it).")
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
# A site on Slurm 24.05 (the repository's .validator.toml says so): --spread is --spread-job there,
# and ambiguous from 25.11 on (--spread-segments).
BAD = {".validator.toml": 'slurm-version = "24.05"\n',
       "run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\n#SBATCH --spread\nset -euo pipefail\necho ok\n"}
_everywhere = option_check(("abbreviated",))


def elsewhere(prefix: str, meant: str) -> str | None:
    """The first release where `--prefix` does not mean `--meant`, with what it means there, or None."""
    table = option_table()["options"]
    for release in releases():
        if release not in table.get(meant, {}).get("releases", ()):
            continue  # the option itself is missing there: sbatch-unknown-option's matter, not the prefix's
        names = sorted(n for n, info in table.items() if release in info["releases"] and n.startswith(prefix))
        if names == [meant]:
            continue
        if prefix in names:
            return f"in Slurm {release} it is the option --{prefix} itself"
        if len(names) > 1:
            return f"in Slurm {release} it is ambiguous ({', '.join('--' + n for n in names[:4])}) and sbatch rejects it"
        return f"in Slurm {release} it means --{names[0]}"
    return None


def confusable(prefix: str, meant: str) -> str | None:
    """`--tasks=48` reads as --ntasks=48, and getopt_long takes it as --tasks-per-node=48: a prefix
    that is another option's name without its leading 'n' (round six: 48 tasks on each node)."""
    table = option_table()["options"]
    other = "n" + prefix
    if other in table and other != meant:
        return f"it reads as --{other}, but sbatch takes it as --{meant}"
    return None


def _one_task(parsed, option) -> bool:
    """`--tasks=1` with no node count, or one: --ntasks-per-node=1 there is the one task --ntasks=1
    asks (a job has one node unless -N or its resources ask for more: sbatch.1, -N, at slurm-22-05-0-1
    and slurm-26-05-1-1). More tasks differ: --ntasks=48 may spread over nodes, 48 a node may not fit
    (round six, judged true)."""
    return option.name == "tasks-per-node" and option.value == "1" and parsed.value("nodes") in (None, "1", "1-1")


def check(target):
    if target.strict:
        yield from _everywhere(target)
        return
    parsed = target.script.parsed
    for option in parsed.options:
        if option.problem != "abbreviated" or option.name is None:
            continue
        prefix = option.written.lstrip("-").split("=", 1)[0]
        # `--tasks=1` on one node: both readings give the same allocation (round one hundred and three)
        misread = None if _one_task(parsed, option) else confusable(prefix, option.name)
        where = misread or elsewhere(prefix, option.name)
        if where is not None:
            yield (target.script.display, option.line, option.col, f"{option.detail}; {where}: write it out")
