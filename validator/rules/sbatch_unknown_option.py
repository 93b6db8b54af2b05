"""An #SBATCH option that no Slurm release knows: sbatch rejects the script.

Premise: sbatch hands #SBATCH arguments to getopt_long (_set_options in src/sbatch/opt.c at
slurm-22-05-0-1 and slurm-26-05-1-1) and stops at an option it does not know. Holds for: the release
selected (the option table, validator/data/sbatch_options.json, is derived from
src/common/slurm_opt.c of each release 22.05-26.05).
A site adds options of its own through SPANK plugins (spank_option_register(), spank.8 at
slurm-26-05-3-1), and the site's sbatch accepts them. In a script nobody here wrote (the default
profile) an unknown option is reported where it is close to a known one (a typo: --jobname for
--job-name) or an option no longer in the release (--share); one that resembles nothing of Slurm's
(--rsc, a university's own resource option) is a site plugin's and is reported only by the strict
profile, where a script declares its plugins. So is a near-miss (--ear-verbose, close to --verbose) whose first
word is that of such an option in the same script (--ear=on, --ear-policy: EAR's SPANK plugin, round 459).
Slurm's own option with ':' where '=' belongs (`--gres:gpu`: getopt_long reads the whole word as the option's
name, finds none and sbatch stops: "sbatch: unrecognized option '--gres:gpu'", exit 255, from Debian's sbatch 22.05.8
here; round 557) is a slip, reported in both profiles however unlike the name looks.
"""
import difflib
import re
from functools import lru_cache

from validator.rules.base import REMOVED_OPTIONS, option_check
from validator.sbatch import known_options, option_table

ID = "sbatch-unknown-option"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = ("An #SBATCH option that no Slurm release knows: sbatch rejects the script (the default profile: a "
               "near-miss of a known option; one unlike any is a site plugin's).")
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\n#SBATCH --gpus-per-tsk=8\necho ok\n"}
_everywhere = option_check(("unknown",))


def _site_option(option) -> bool:
    """Unlike every option of every release and of the known plugins: a site's own SPANK option."""
    if not option.written.startswith("--"):
        return False  # an unknown short option is a typo: plugins register long options (spank.8)
    name = option.written[2:].split("=", 1)[0]
    head = name.split(":", 1)[0]
    if head != name and (head in option_table()["options"] or head in REMOVED_OPTIONS):
        return False  # `--gres:gpu`: Slurm's option with ':' for '=' (getopt_long takes the whole word as its name)
    return site_name(name)


@lru_cache(maxsize=4096)
def site_name(name: str) -> bool:
    """A long option's name unlike every option of every release and of the known plugins (difflib ratio under
    0.75): a site's, not a slip of Slurm's. Read once per name (a script of 11,000 plugin directives repeats a few
    names); sbatch-lookalike asks it too."""
    if name in REMOVED_OPTIONS:  # Slurm's own, removed: never a site's
        return False
    names = list(option_table()["options"]) + list(known_options(("pyxis",), None))
    return not difflib.get_close_matches(name, names, n=1, cutoff=0.75)


def _name(option) -> str:
    return option.written[2:].split("=", 1)[0] if option.written.startswith("--") else ""


def _family(name: str) -> str:
    """A plugin's options share their first word (`--ear`, `--ear-policy`, `--ear-verbose`: EAR's SPANK plugin)."""
    return re.split(r"[-_]", name, maxsplit=1)[0]


@lru_cache(maxsize=1)
def _slurm_families() -> frozenset:
    """The first words of Slurm's own option names (gpu, mem, mail, cpu, ...): a site option that starts with one of
    them (`--gpu-type`, `--mem-bw`) does not make `--gpu-frq` or `--mail-tpye` a plugin's."""
    return frozenset(_family(name) for name in option_table()["options"])


def check(target):
    if target.strict:
        yield from _everywhere(target)
        return
    found = []
    for finding in _everywhere(target):
        option = next((o for o in target.script.parsed.options if o.line == finding[1] and o.col == finding[2]), None)
        found.append((finding, option))
    # a near-miss of Slurm's own name (`--ear-verbose`, close to --verbose) beside a site option of its family
    # (`--ear=on`, `--ear-policy=monitoring`) is that plugin's option too (round 459's EAR jobs)
    families = {_family(_name(o)) for _, o in found if o is not None and _site_option(o)} - _slurm_families()
    for finding, option in found:
        if option is None or not _site_option(option) and not (_name(option) and _family(_name(option)) in families
                                                                 and _name(option) not in REMOVED_OPTIONS):
            yield finding
