"""How srun reads its command line, shared by the launch rules: which words are srun's own options (and
their values) and which word is the program it runs.

srun's getopt takes a short option's value from the rest of its word or the next word (SHORT_WITH_VALUE,
srun.1), a long option's after '=' or in the next word where the option requires one (sbatch's and
srun's option tables, validator/data; SPANK plugins'); the first word that is no option is the program,
and everything after it is the program's (`srun -N1 mpirun -np 4 prog`: -np is mpirun's).
"""
from __future__ import annotations

import re

from validator.sbatch import SPANK_OPTIONS, VALUE_TOKEN, filled_in_later, option_table
from validator.shell import Word

# srun's short options that take a value in the next word (srun.1), and its long ones beyond sbatch's
# srun's own options that start more than the job's default task (srun.1: "-n ... The default is one
# task per node, but note that the --cpus-per-task option will change this default")
TASK_OPTIONS = ("--ntasks", "-n", "--ntasks-per-node", "--tasks-per-node", "--ntasks-per-socket",
                "--ntasks-per-core", "--ntasks-per-gpu", "--gpus-per-task", "--cpus-per-task", "-c")
SHORT_WITH_VALUE = set("AbBcCdDeGiJLmMnNopqrStTwWx")
_SRUN_LONG_WITH_VALUE = {"mpi", "cpu-bind", "mem-bind", "het-group", "pack-group", "accel-bind", "epilog", "prolog",
                         "task-epilog", "task-prolog", "slurmd-debug", "debugger-test", "jobid", "multi-prog",
                         "wait"}  # srun's --wait=<seconds> (sbatch's --wait is a flag)


# srun's options passed in a variable: $ARGS, "${ARGS[@]}", ${OVERLAP:-} (empty unless set), ${X:+--overlap}
_OPTIONS_VARIABLE = re.compile(r'"?\$\{?\w+(\[[@*]\])?(:?[-+][^}"]{0,200})?\}?"?')


def program_values(shell, raw: str) -> list[str]:
    """`$MATLAB` where the script sets MATLAB=/usr/.../bin/matlab: the values the script assigns
    the variable, when every one is a literal word that is no option (so the expansion is the
    program srun runs, not srun's options); else []."""
    name = re.sub(r"[^\w].*$", "", raw.strip('"').lstrip("$").lstrip("{"))
    values = [a.value for a in shell.assigned(name)] if name.isidentifier() else []
    return values if values and all(v and not v.startswith("-") and " " not in v for v in values) else []


def step_program(command, shell=None):
    """The word srun runs (after its options), None when there is none; its value is None when the
    word expands something. With the script (`shell`), a variable it sets to a program's path is
    that program (`srun $MATLAB -r ...`), not an options variable."""
    args = command.args
    i = read_options(command, shell)[0]
    return args[i] if i < len(args) else None


def program_words(command, program, with_program: bool = False) -> list:
    """The words of `command` after its program's word (`srun [options] PROGRAM ARGS...`: ARGS), or from it
    on (with_program). `program` is one of command.args (step_program, a container's inner program)."""
    at = command.args.index(program)
    return command.args[at if with_program else at + 1:]


def read_options(command, shell=None) -> tuple[int, list]:
    """srun's own options as getopt reads them: (index of the program word, [(option text, its value
    Word or None)]). A long option takes the next word when sbatch/srun's table or a SPANK plugin says
    it requires a value; a short one (SHORT_WITH_VALUE) takes the rest of its word or the next word.
    The one reader of srun's options: step_program and refused_task_count."""
    table = option_table()["options"]
    args, i, read = command.args, 0, []
    while i < len(args):
        text = args[i].value
        if text is None and _OPTIONS_VARIABLE.fullmatch(args[i].raw):  # srun "${SRUN_ARGS[@]}" ...: options
            if shell is not None and program_values(shell, args[i].raw):
                break
            i += 1
            continue
        if text is None and args[i].raw.startswith("-"):  # --ntasks="$N", -N${NODES}: an option, its value expanded
            text = args[i].raw
        if text is None:
            break  # the program's word itself expands something ($CODEDIR/copy-data.sh): its value is None
        if text == "--":
            i += 1
            break
        if text.startswith("--"):
            name = text[2:]
            takes = table.get(name, {}).get("arg") == "required" or name in _SRUN_LONG_WITH_VALUE \
                or any(SPANK_OPTIONS[plugin].get(name) == "required" for plugin in SPANK_OPTIONS)
            joined = "=" in name
            if joined:
                read.append((text.split("=", 1)[0], Word(name.split("=", 1)[1], name.split("=", 1)[1]
                             if args[i].value is not None else None, args[i].line, args[i].col)))
            else:
                read.append((text, args[i + 1] if takes and i + 1 < len(args) else None))
            i += 2 if not joined and takes else 1
            continue
        if text.startswith("-") and len(text) > 1:
            attached = len(text) > 2 and text[1] in SHORT_WITH_VALUE
            if attached:
                read.append((text[:2], Word(text[2:], text[2:] if args[i].value is not None else None,
                                            args[i].line, args[i].col + 2)))
            else:
                read.append((text, args[i + 1] if text[1:] in SHORT_WITH_VALUE and i + 1 < len(args) else None))
            i += 2 if len(text) == 2 and text[1] in SHORT_WITH_VALUE else 1
            continue
        break
    return i, read


def exceeds_job_nodes(command, parsed, shell=None) -> int | None:
    """The nodes srun's own literal --nodes/-N asks where that is more than the job's literal --nodes gives, else
    None: srun stops with "Only allocated N nodes asked for M" before any task starts (_job_create_structure in
    src/srun/libsrun/srun_job.c at slurm-22-05-0-1, src/srun/srun_job.c at slurm-26-05-1-1: opt min_nodes above the
    allocation's node count). Not where srun names another job or component (--jobid, --het-group), nor where the
    job's count is no plain number (a range, an expansion), nor in a heterogeneous job."""
    job = parsed.get("nodes")
    if len(job) != 1 or not (job[0].value or "").isascii() or not (job[0].value or "").isdigit() \
            or any(o.component for o in parsed.options):
        return None
    asked = None
    for option, word in read_options(command, shell)[1]:
        if option in ("--jobid", "--het-group", "--hetgroup"):
            return None
        if option in ("-N", "--nodes"):  # the last one counts
            low = (word.value or "").split("-", 1)[0].strip() if word is not None else ""
            asked = int(low) if low.isascii() and low.isdigit() else None
    return asked if asked is not None and asked > int(job[0].value) else None


def own_options(command, shell=None):
    """The srun command cut before the program it runs: the words that are srun's own options."""
    from dataclasses import replace
    program = step_program(command, shell)
    if program is None:
        return command
    return replace(command, args=command.args[:command.args.index(program)])


def srun_commands(shell):
    """The srun commands of the script and of the command strings it runs (`bash -c "srun ..."`: base.with_payloads)."""
    from validator.rules.base import with_payloads

    return [command for command, _ in with_payloads(shell) if command.name == "srun"]


def refused_task_count(command, shell=None, template_file: bool = False) -> tuple[str, str] | None:
    """(option, value) of srun's own -n/--ntasks whose literal value parse_int() refuses: not a whole
    number above zero (`-np 4` is -n with the value "p", `-n=4` the value "=4", `--ntasks=` none). srun
    then stops with 'Invalid numeric value' before any task starts (arg_set_ntasks() in
    src/common/slurm_opt.c, parse_int() in src/common/proc_args.c: strtol over the whole value,
    positive; at slurm-22-05-0-1 and slurm-26-05-1-1). Not on a line the parser could not take whole
    (its words are guesses), and not a template's token in place of the count (`{ntasks}`, `{{ n }}`,
    `@NTASKS@`, `%NTASKS%`, `~~NTASKS~~`, `__NTASKS__`, `<ntasks>`: sbatch.filled_in_later): a tool or a
    person fills it before srun runs; in a file whose directives are a template's (template_file), also
    the tokens read in directive values (sbatch.VALUE_TOKEN: `srun -n {NTasks}` of a str.format template)."""
    if command.node is not None and command.node.has_error:
        return None
    for option, word in read_options(command, shell)[1]:
        if option not in ("-n", "--ntasks") or word is None or word.value is None or filled_in_later(word.value) \
                or template_file and VALUE_TOKEN.search(word.value):
            continue
        digits = word.value.lstrip(" \t").removeprefix("+")
        if not (digits.isascii() and digits.isdigit() and int(digits) > 0):
            return option, word.value
    return None
