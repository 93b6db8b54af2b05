"""Lines that look like directives but that Slurm treats as comments.

Premise: sbatch reads a directive only from a line whose first 7 characters are "#SBATCH"
(src/sbatch/opt.c, _opt_batch_script: xstrncmp(line, "#SBATCH", 7), at slurm-22-05-0-1,
slurm-24-05-0-1 and slurm-26-05-1-1); '#sbatch', an indented '#SBATCH' and '# SBATCH' are comments,
so the option silently does not apply ('#SBATCH--nodes=2', glued, is a directive; so is a line
starting '#SLURM', with an error asking for '#SBATCH': not modelled here).
Holds for: every release (22.05-26.05). Only before the script's first command, where a correct
'#SBATCH' would be read (_opt_batch_script() stops at the first line that is neither blank nor a
comment, "Stop parsing script if not a comment", src/sbatch/opt.c at slurm-22-05-0-1 and
slurm-26-05-1-1: after it even '#SBATCH' is a comment, which sbatch-directive-after-command reports),
and only with an option after it ('# SBATCH' alone heads a comment banner).
'# SBATCH' (or '##SBATCH') in a script that has live #SBATCH lines is the usual way to switch a
directive off on purpose: that is reported in the strict profile only (our presets delete what
they do not use); elsewhere only the forms that are no way of disabling anything. Nor, in the default
profile, a look-alike whose every option a live #SBATCH line sets to the same value (`#sbatch
--cpus-per-task=1` above `#SBATCH --cpus-per-task=1`, round 327): the live line applies, nothing the author
asked for is lost; nor one whose options a live line below it sets again, with any value (sbatch applies the
later one: round 501). With another value above it (`#SBATCH --nodes=1`, then `#sbatch -N 4`) the author may have
meant the look-alike's: reported; so is any look-alike of a heterogeneous job (its component is not told apart).
Nor a look-alike that asks only for what sbatch does without it (`#SBACTH --nodes=1`, round 469), under
sbatch-directive-after-command's conditions for an ignored line at the defaults (one node, one task, one CPU a
task; nothing else in the header asks for more; the script reads no variable only the option sets). Nor, there,
a look-alike none of whose options sbatch takes (`#sbatch --x11`, round 476): turned on, sbatch would refuse it.
"""
import re

from validator.rules.sbatch_directive_after_command import asks_for_default, header_options
from validator.rules.sbatch_unknown_option import site_name
from validator.sbatch import MAGIC, SAME_SETTING, SPANK_OPTIONS, parse_script

ID = "sbatch-lookalike"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = ("'#sbatch', an indented '#SBATCH', or '# SBATCH' where no line is a live directive: "
               "Slurm ignores the line (strict profile: also '# SBATCH' beside live directives).")
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\n#sbatch --gpus-per-task=8\nset -euo pipefail\necho ok\n"}

_DISABLED = re.compile(r"#+\s+SBATCH\s")  # '# SBATCH --x', '## SBATCH --x' at column 1
_SBATCH_WORD = re.compile(r"^\s*#\s*[a-z]{5,7}", re.I)  # `#sbatch`, `# SBATCH`, a misspelt `#SBACTH`


def _live_values(parsed) -> dict | None:
    """Each option the live #SBATCH lines set, by its canonical name, with the value the last one gives
    (what sbatch applies); None for a heterogeneous job, whose components this does not tell apart."""
    if any(option.component for option in parsed.options):
        return None
    return {SAME_SETTING.get(o.name, o.name): (o.value, o.line) for o in parsed.options if o.name is not None}


def _set_live(look, live: dict) -> bool:
    """Every option of the look-alike line, read as the live directive it looks like, is set to the same
    value by a live #SBATCH line too, or by a live line below it, which sbatch would apply over it anyway (sbatch
    reads the directives in order and a later value of an option replaces an earlier one: the option setters of
    src/common/slurm_opt.c free the old value; round 501's `#SBATCH  --qos=normal` look-alike above a live
    `--qos=deadline`). An option the table does not know counts as not set."""
    looks = parse_script(MAGIC + _SBATCH_WORD.sub("", look.text, count=1) + "\n").options
    return bool(looks) and all(o.name is not None and not o.problem and SAME_SETTING.get(o.name, o.name) in live
                               and (live[SAME_SETTING.get(o.name, o.name)][0] == o.value
                                    or live[SAME_SETTING.get(o.name, o.name)][1] > look.line
                                    and not _kept_with_later(o)) for o in looks)


def _kept_with_later(option) -> bool:
    """A value a later one does not replace: --kill-on-invalid-dep=yes sets a flag that a later =no leaves on
    (arg_set_kill_on_invalid_dep in src/common/slurm_opt.c ORs KILL_INV_DEP into job_flags, and
    handle_invalid_dependency tests it first); an =no above a live =yes changes nothing."""
    return option.name == "kill-on-invalid-dep" and (option.value or "").strip("\"'").lower() == "yes"


def check(target):
    parsed = target.script.parsed
    lookalikes = parsed.lookalikes
    inside = target.script.shell.text_lines() if lookalikes else set()  # written for another job
    switched_off = bool(parsed.directives) and not target.strict
    live = _live_values(parsed) if switched_off and lookalikes else None  # built once: linear in the lines
    elsewhere = header_options(parsed) if switched_off and lookalikes else {}
    read = frozenset(e.name for e in target.script.shell.expansions) if elsewhere else frozenset()
    for look in lookalikes:
        if look.line in inside or (switched_off and (_DISABLED.match(look.text)
                                                     or live is not None and _set_live(look, live)
                                                     or _asks_only_defaults(look, parsed, elsewhere, read)
                                                     or _no_sbatch_option(look))):
            continue
        yield (target.script.display, look.line, look.col, look.why)


_MAGIC = re.compile(r"^\s*#\s*[A-Za-z]+")


def _no_sbatch_option(look) -> bool:
    """`#sbatch --x11`, `#sbatch --startx` beside live directives (round 476's NeuroMorphoVis jobs): no option of the
    line is one sbatch takes (--x11 is salloc's and srun's; a plugin's name it does not know), so as `#SBATCH` it
    would make sbatch refuse the script: a line switched off, or a site plugin's that is not ours to judge."""
    looks = parse_script(MAGIC + _SBATCH_WORD.sub("", look.text, count=1) + "\n", tuple(sorted(SPANK_OPTIONS))).options
    # (an option written with an en dash, `––nodes=2`, an unknown short one, or a near miss of one of sbatch's
    # (`--cpus-per-tasks=16`, `--gpu=4`: sbatch-unknown-option's site_name) is a typo of sbatch's own: a look-alike)
    return bool(looks) and all(o.written.isascii() and (o.name is None or o.problem in ("unknown", "unavailable"))
                               and o.written.startswith("--") and site_name(o.written[2:].split("=", 1)[0])
                               for o in looks)


def _asks_only_defaults(look, parsed, elsewhere: dict, read: frozenset) -> bool:
    """`#SBACTH --nodes=1` (round 469's DAMASK jobs, two findings judged false): the line Slurm ignores asks only for
    what sbatch uses without it (one node, one task, one CPU a task), as an ignored line after the first command
    may (sbatch-directive-after-command's asks_for_default, the same conditions: nothing else in the header asks
    for more, and the script reads no variable only the option sets)."""
    return asks_for_default(_MAGIC.sub("#SBATCH", look.text, count=1), look.line, parsed, elsewhere, read)
