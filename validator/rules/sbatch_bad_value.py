"""A directive value that sbatch rejects: a variable (never expanded in #SBATCH lines), a word where a count, a size or a time belongs; a template placeholder.

Premise: sbatch reads counts, sizes and times with its own parsers (time_str2mins in
src/common/parse_time.c, str_to_mbytes via src/common/slurm_opt.c at slurm-26-05-1-1) and never
expands $VAR in #SBATCH lines (get_argument in src/sbatch/opt.c at slurm-22-05-0-1 and
slurm-26-05-1-1). A template placeholder (<ACCOUNT>, {{ nodes }}, YOUR_PROJECT) says the file is not
a job yet: one finding per file, on its first placeholder, and no per-line findings on placeholder
lines; a placeholder in a value sbatch takes as any text (--mail-user, --job-name, --comment) does not
stop the job and is not reported. A template engine's placeholders only ({{ x }}, {% %}, @[X], @X@):
a tool renders the file before sbatch and nobody submits it as it is: not reported (the rendered
script is the one to validate). So are bare capitalised tokens (or %NAME marks) where counts, sizes or times belong
(`--nodes=NODES`, `--time=WTIME`), two or more in a file, or one that the file's own name holds
(`--cpus-per-task=XX` in time_XX.sh) or in a file whose name says it is a template (`--ntasks=NPROCS` in
job_template.ksh), or one beside capitalised words in the job's name, log paths or other counts (`--mem=MEMORY`
with `--job-name=JOB_NAME`, `--output=JOB_OUT/log.txt`): a generator's sed fills them in. Three or more values
left blank after '=' make a form the user fills in: said once, as a template's placeholders are
(_blank_form_lines). So are
variables where counts, sizes or times belong, two or more different ones in a file (`--ntasks
${job_np}`, `--time ${job_time}`; `--ntasks=$1`, `--nodes=$2`): a driver fills them before sbatch
(Python's string.Template, a sed over $1..$N), and every variable directive of such a file is left
alone. One variable alone (`--nodes=$1`, `--account=${project_id}`) is the common mistake of
expecting sbatch to expand it, and is reported. In a file whose name or folder says it is a template
(`template.sbatch`, `run_sbatch.templ`, `slurm_templates/`: model.Script.named_template) the named
variables of a directive are the tool's fields (string.Template's $NAME) and are not reported, unless one
is positional ($1), set by the script itself, a batch system's (SLURM_, PBS_) or the environment's ($HOME,
$USER, $SCRATCH): those the author expected sbatch to expand. Judged: srunit's and qchain.py's templates (round two hundred and fifty, 8 false);
one earlier template whose filler replaced the names and left the `$` (round one hundred and forty-six, 7
true) is lost with them.
A variable in --mail-user is reported only where the script sets --mail-type: slurmctld sends a
job's mail only for the events in its mail_type, none by default (mail_job_info() is defined in
src/slurmctld/agent.c; every call of it, in job_mgr.c, node_scheduler.c and the burst-buffer code,
is under a test such as `job_ptr->mail_type & MAIL_JOB_END`, at slurm-22-05-0-1 and
slurm-26-05-1-1; sbatch.1: "state changes as defined by --mail-type"). A --mail-type given on the sbatch command line is not in the
script: a wrapper that passes it makes the finding true and unreported.
A job script written by a generator as an unquoted here-document (`cat << EOF | sbatch`): the writing
shell expands its variables before sbatch reads the text (bash(1), "Here Documents", bash 5.2): not
reported there (model.Script.expanded_by_writer), unless a backslash escapes the `$` (bash removes
the backslash, and sbatch gets `$NAME`). Nor in a file under a folder named by a template token
(`{{cookiecutter.project_slug}}/`): a project generator renders it and its hooks may fill such values
(round two hundred and twelve: a post-generation hook that replaces `$((INSTALL))`).
A --mail-type word that parse_mail_type() (src/common/proc_args.c) does not know: alone, the value is
INFINITE16 and arg_set_mail_type() refuses it; beside known events it is skipped (the same code at
slurm-22-05-0-1 and slurm-26-05-1-1), and reported unless it misspells an event whose mail comes anyway
(FAIL beside END: a failed job gets its END mail; any of ALL's events beside ALL).
Holds for: 22.05-26.05.
"""
import difflib
import re

from validator.rules.base import SHELL_VARIABLES, set_names
from validator.sbatch import MAIL_ALL, MAIL_EVENTS, VALUE_TYPES, before, mail_events, placeholder

ID = "sbatch-bad-value"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = ("A directive value sbatch rejects: a variable ($1 is never expanded in #SBATCH lines), a word where a "
               "count, size or time belongs, or an unrendered template placeholder.")
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=1-02:00:00\n#SBATCH --nodes=2-4\n#SBATCH --mem=80G\n"
                      "#SBATCH --gpus-per-node=h100:8\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\n#SBATCH --nodes=$1\nset -euo pipefail\necho ok\n"}

# option -> (pattern, what the value must be): the parser's table (sbatch.VALUE_TYPES)
TYPES = VALUE_TYPES


# Options whose value sbatch takes as any text: a placeholder there (--mail-user=<netid>@uni.edu)
# does not stop the job, only the mail goes nowhere: src/common/slurm_opt.c copies them as they are
# (COMMON_STRING_OPTION(mail_user), (job_name), (comment) at slurm-22-05-0-1 and slurm-26-05-1-1) and
# slurmctld checks only their length (_test_strlen(job_desc->mail_user, "mail_user", 1024) in
# src/slurmctld/job_mgr.c at slurm-26-05-1-1).
FREE_TEXT = {"mail-user", "job-name", "comment"}


def _free_text(parsed, line: int) -> bool:
    names = {option.name for option in parsed.options if option.line == line}
    return bool(names) and names <= FREE_TEXT


def template_placeholder_lines(parsed) -> list[int]:
    """The directives whose placeholders a person fills in (<ACCOUNT>, YOUR_PROJECT; a tool fills in
    {{ nodes }}: template_lines), outside free text: where there is one, this rule reports the file once
    as a template."""
    return [line for line in parsed.placeholder_lines if not _free_text(parsed, line) and not _engine_only(parsed, line)]


def _engine_only(parsed, line: int) -> bool:
    """Every placeholder of the directive is a template engine's ({{ }}, {% %}, @[X], @X@) or a
    driver's `##Name##` token in the value's place."""
    from validator.sbatch import HASH_TOKEN, PLACEHOLDER, TEMPLATE, hash_token
    directive = next((d for d in parsed.directives if d.line == line), None)
    if directive is None:
        return False
    token = hash_token(directive)
    end = token.end() if token else (directive.cut_at - 1 if directive.cut_at else len(directive.text))
    found = list(PLACEHOLDER.finditer(directive.text, 0, end))
    # matched in place: a template token may depend on what stands before it (`#SBATCH [gpu]`)
    return bool(found) and all(TEMPLATE.fullmatch(directive.text, m.start(), m.end())
                               or HASH_TOKEN.fullmatch(m.group(0)) for m in found)


# `--nodes=NODES`, `--ntasks-per-node=RPN`, `--time=WTIME`: a bare capitalised name where a count, a
# size or a time belongs is a token that a generator's sed replaces (round twenty-one: a lattice-QCD
# job generator's templates); two or more of them in one file say it is such a template. Two or more
# different variables there say the same (round sixty-eight: a Python string.Template job file,
# `--ntasks ${job_np}`, `--time ${job_time}`; round fifty-eight: `--ntasks=$1`, `--nodes=$2` filled
# by the author's replace script); judged on read rounds 58, 68 (five files, false) and 69 (one file
# of `-n $1`, `--mem=$2G`, true: this change loses it).
# A writer's %NAME mark counts the same (round two hundred and one: a MATLAB sweeper's job template,
# `--cpus-per-task=%NCPUs`, `--mem-per-cpu=%MEMpCPU`, filled with strrep): '%' is no part of a count,
# size or time. So is a writer's %name% (round two hundred and seventy-seven: `--ntasks-per-node=%cpus%`,
# `--time=%wall_time%`, filled by a Python build_jobs.py with re.sub over %(.*?)%).
_BARE_TOKEN = re.compile(r"[A-Z][A-Z_]{1,30}[A-Z0-9_]|%[A-Za-z][A-Za-z0-9_]{2,31}%?")


# A shell variable in a value: $name, ${name}, $1, ${10} (what sbatch would keep as text).
_VARIABLE = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*|[0-9])")
# A generator's token: $name, ${name}, $1, ${10}; not ${name:-default} and the like (shell syntax that
# Python's string.Template refuses and a sed over $1..$N leaves alone)
_TOKEN = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*|[0-9]+)\}|([A-Za-z_][A-Za-z0-9_]*|[0-9]))")


def _named_in_file_name(token: str, file_name: str) -> bool:
    """`time_XX.sh` holding `--cpus-per-task=XX`: the token is part of the template's own name, which
    a generator replaces there too when it writes each job file (round one hundred and nine: `sed
    "s/XX/$1/g" time_XX.sh > time_$1.sh`, then sbatch on the copy)."""
    return re.search(r"(?<![A-Za-z0-9])" + re.escape(token) + r"(?![A-Za-z0-9])", file_name) is not None


# Variables every job has (base.SHELL_VARIABLES), or a site gives every user: `--output=$HOME/logs/%j.out` in
# a template still expects sbatch to expand it (the tool's string.Template leaves names it has no value for alone).
_ENVIRONMENT = SHELL_VARIABLES | {"SCRATCH", "WORK", "PROJECT"}
# Names a batch system sets in the job: Slurm's, and PBS's (`$PBS_O_WORKDIR`, a habit from PBS)
_BATCH_SYSTEM = re.compile(r"^(SLURM|SBATCH|PBS)_")


def _bare_token_lines(parsed) -> set:
    """The directive lines whose count, size or time value is a bare capitalised token (`--nodes=NODES`,
    `--time=WTIME`, `--cpus-per-task=%NCPUs`)."""
    return {option.line for option in parsed.options
            if option.name in TYPES and option.value and _BARE_TOKEN.fullmatch(option.value)
            and not TYPES[option.name][0].fullmatch(option.value)}  # UNLIMITED is a time, not a token


def _named_template_lines(parsed, set_here: set, named_in_file: bool) -> set:
    """In a file that says it is a template (model.Script.named_template), the directive lines whose
    value is a bare capitalised token (where the file's own name says so), or whose variables are all the
    tool's fields: named (string.Template's $NAME, never a positional $1), set
    nowhere in the script (base.set_names: assignments, for, read), no batch system's and none of the
    environment's. Round two hundred and fifty: srunit renders `-J $JOB_NAME`, `--gres=gpu:$GPU_NUM` of
    its template.sbatch with string.Template before sbatch; qchain.py replaces `--array $JOB_START-$JOB_END`."""
    # a bare capitalised token where a count, size or time belongs (`--ntasks=NPROCS`): one is enough where the
    # file's own name says template (round two hundred and sixty-seven: atlaSlice's job_<machine>_template.ksh,
    # whose launchers sed NPROCS); under a templates/ folder it may be a person's field (`--ntasks=NTASKS`)
    lines = _bare_token_lines(parsed) if named_in_file else set()
    for option in parsed.options:
        names = [a or b for a, b in _TOKEN.findall(option.value or "")]
        if names and "${" not in _TOKEN.sub("", option.value) and not any(
                name[0].isdigit() or name in set_here or _BATCH_SYSTEM.match(name) or name in _ENVIRONMENT
                for name in names):
            lines.add(option.line)
    return lines


# Options whose value names the job or its files, or counts its resources: where a generator's other tokens stand
# in a template (`--job-name=JOB_NAME`, `-o PATH_TO_LOGS/%x.out`, `-J WHAT.FROM.PRT`, `--gres=gpu:N_GPUS`); not
# the options whose values are capitalised words of Slurm's or a site's (--mail-type=END, --export=NONE, -A ACF)
_NAMING_OPTIONS = {"job-name", "output", "error", "chdir", "gres", "cpus-per-gpu", "ntasks-per-gpu"} | set(TYPES)
# a whole capitalised word: not a variable's name (`/scratch/$USER/`), nor part of a site's word (`RTX_A6000`)
_CAPITAL_WORD = re.compile(r"(?<![A-Za-z0-9_${])(?:[A-Z]{2,}|[A-Z](?=_))(?:_[A-Z]+)*(?![A-Za-z0-9_])")


def _beside_named_tokens(parsed, option) -> bool:
    """One bare capitalised token where a count, size or time belongs (`--mem=MEMORY`, `--ntasks=N_TASKS`) in a
    file whose job name, log paths or other counts are made of capitalised words too (`--job-name=JOB_NAME`,
    `--output=JOB_OUT/log.txt`, `-o PATH_TO_LOGS/%x.out`, `-J WHAT.FROM.PRT`, `--gres=gpu:N_GPUS`): two or more,
    each with an underscore, or three of them, make the file a generator's template (rounds 415, 478 and
    506: calodiffusion's submit_training.py, a sed over b2ob.slurm, meze's writer; three false findings, no true
    one of the shape on the read rounds). A plain `--job-name=LAMMPS` or `--output=RUN_%j.out` is one word; `MD_NVT`
    beside `LOGS/` (a review's probe), `$USER` and a site's `RTX_A6000` are no generator's."""
    words = set()
    for other in parsed.options:
        if other.name in _NAMING_OPTIONS and other.value and other is not option:
            words |= set(_CAPITAL_WORD.findall(other.value))
    return len(words) >= 3 or len(words) >= 2 and all("_" in w for w in words)


def _generator_lines(parsed, assigned: set, file_name: str = "") -> set:
    """The directive lines a generator fills in, when the file is such a template: two or more count,
    size or time values that are bare capitalised tokens, or that hold two or more different
    generator tokens (then every directive line with a variable). A name the script assigns itself or
    one of Slurm's output variables (SLURM_*) is no token: the author expected sbatch to expand it."""
    bare = _bare_token_lines(parsed)
    typed = [(option.line, option.col, name) for option in parsed.options if option.name in TYPES and option.value
             and "${" not in _TOKEN.sub("", option.value)  # every ${...} of the value is a plain token
             for name in (a or b for a, b in _TOKEN.findall(option.value))]
    lines = bare if len(bare) >= 2 else {
        option.line for option in parsed.options if option.name in TYPES and option.value
        and re.fullmatch(r"[A-Z][A-Z0-9_]+", option.value) and not TYPES[option.name][0].fullmatch(option.value)
        and (_named_in_file_name(option.value, file_name) or _beside_named_tokens(parsed, option))}
    tokens = {name for _, _, name in typed if name not in assigned and not name.startswith("SLURM_")}
    if len({(line, col) for line, col, _ in typed}) >= 2 and len(tokens) >= 2 and len(tokens) == len(
            {name for _, _, name in typed}):
        lines |= {option.line for option in parsed.options if option.value and _VARIABLE.search(option.value)}
    return lines


def _blank_form_lines(parsed) -> set[int]:
    """A header of fields left blank for the user (`--mem=`, `--time=`, `--job-name=`, `--mail-type=` ... with
    nothing after '=', round 476's rDNA benchmark jobs: nine of them): three or more such directives make the file a
    form to fill in before sbatch, which refuses it until then: said once, as a template is, not line by line (round
    450's Kempner example, `--mem=   # <---- Add memory`, judged true line by line; round 476's judge called the
    lines false). One or two blank values are a slip in a job, and stay reported each."""
    blank = {o.line for o in parsed.options if o.value == "" and o.written.endswith("=")}
    blank -= set(parsed.placeholder_lines)  # `--job-name=##runName##`: sbatch's comment cuts a writer's token
    return blank if len(blank) >= 3 else set()


def _refused_blank(option) -> bool:
    """A blank value that sbatch refuses: a count, size or time (TYPES), or --mail-type's event list."""
    kind = TYPES.get(option.name)
    return option.name == "mail-type" or kind is not None and not kind[0].fullmatch("")


def check(target):
    script = target.script
    parsed = script.parsed
    assigned = {a.name for a in script.shell.assignments}
    tokens = _generator_lines(parsed, assigned, script.display.replace("\\", "/").rsplit("/", 1)[-1])
    if script.named_template:
        tokens |= _named_template_lines(parsed, set_names(script.shell), script.template_in_file_name)
    blank = _blank_form_lines(parsed)
    tokens |= blank
    blocking = template_placeholder_lines(parsed)
    refused = sorted(((o.line, o.col, o.written) for o in parsed.options if o.line in blank and _refused_blank(o)))
    if refused and not blocking:  # a form to fill in: said once, on its first field that sbatch refuses blank
        line, col, written = refused[0]
        yield (script.display, line, col,
               f"{written} is left blank, as are {len(blank) - 1} more directives: this file is a form (reported "
               "once, for every blank line); fill in its values before sbatch, which refuses such a value blank")
    if blocking:  # a template: said once, on its first placeholder (the file as a whole is wrong)
        line = blocking[0]
        directive = next(d for d in parsed.directives if d.line == line)
        found = placeholder(directive, [o for o in parsed.options if o.line == line])
        yield (script.display, line, found.start() + 1,
               f"'{found.group(0)}' is a template placeholder: this file is a template (reported once, for every "
               "placeholder line); fill in or render it before sbatch")
    for option in parsed.options:
        # template_lines: also a writer's ---KEY--- marks (sbatch._MARK_TOKEN), which the parser finds
        if option.line in parsed.placeholder_lines or option.line in tokens or option.line in parsed.template_lines:
            continue
        value = option.value
        if option.name is None or option.problem or value is None:
            continue
        if "$" in value or "`" in value:
            written = re.split(r"\s#", parsed.lines[option.line - 1][option.col - 1:], maxsplit=1)[0]  # not a comment
            if script.in_rendered_folder or script.expanded_by_writer and not _ESCAPED.search(written):
                continue  # the body of an unquoted here-document: the writing shell expands it before sbatch
            if option.name == "mail-user" and not _mails(parsed):
                continue  # no mail is sent: every mail_job_info() call is gated by the job's mail_type
            yield (script.display, option.line, option.col,
                   f"--{option.name}={value}: sbatch never expands variables in #SBATCH lines; "
                   "pass the value on the sbatch command line instead")
            continue
        if option.name == "mail-type":
            yield from _mail_type(script, option, target.release)
            continue
        kind = TYPES.get(option.name)
        if kind and not kind[0].fullmatch(value):
            yield (script.display, option.line, option.col, f"--{option.name}={value} is not {kind[1]}; sbatch rejects it")


# `\$NAME` in an unquoted here-document: the writing shell removes the backslash and leaves `$NAME` for sbatch
_ESCAPED = re.compile(r"(?<!\\)(?:\\\\)*\\[$`]")  # an odd number of backslashes: `\\$X` expands


# Mail that comes although its word is misspelt. A job that reaches its time limit ends TIMEOUT, which comes after
# FAILED in enum job_states (slurm/slurm.h.in), so job_completion_logger() in src/slurmctld/job_mgr.c sends it the
# FAIL mail (`base_state >= JOB_FAILED`, at slurm-22-05-0-1 and slurm-26-05-1-1): a misspelt TIME_LIMIT beside FAIL
# still mails the timeout (round 519's LRZ jobs, `--mail-type=end,fail,timeout`). A job whose mail_type lacks FAIL
# gets its END mail on a failure or a timeout too ("Ended ..., FAILED": `else if` END with `base_state >=
# JOB_COMPLETE`) since commit 021e0df77b, "Run mailprog for mail-type=end for jobs with non-zero exit codes", first
# tagged slurm-23-02-6-1 (slurm-23-02-5-1 and every 22.05 tag mail END only for COMPLETE and CANCELLED). Releases are
# told apart here by their major version, so only from 23.11, whose every tag has it (a cluster on 23.02.0-23.02.5
# would not mail: a review's probe; on 23.02 the skipped word stays reported). ALL sets BEGIN, END, FAIL, REQUEUE,
# INVALID_DEPEND and STAGE_OUT (parse_mail_type() in src/common/proc_args.c, both releases). Round two hundred:
# `BEGIN,END,DAIL`.
END_MAILS_FAILURES = "23.11"


def mailed_anyway(event: str, release: str | None) -> set:
    """The events whose mail a job asking for `event` gets anyway on the targeted release."""
    if event == "ALL":
        return MAIL_ALL | {"TIME_LIMIT"}
    if event == "FAIL":
        return {"TIME_LIMIT"}
    if event == "END" and not before(release, END_MAILS_FAILURES):
        return {"FAIL", "TIME_LIMIT"}
    return set()


# Other names of an event: PBS's word for a failed job, which sbatch itself translates from a #PBS `-m a` ("abort")
# into FAIL (_xlate_pbs_mail_type in src/sbatch/xlate.c at slurm-22-05-0-1 and slurm-26-05-1-1;
# `--mail-type=BEGIN,END,ABORT`, round 486, meant FAIL), and the job state's name for a time limit reached (TIMEOUT:
# round 519's `--mail-type=end,fail,timeout` meant TIME_LIMIT)
_EVENT_ALIASES = {"ABORT": "FAIL", "TIMEOUT": "TIME_LIMIT", "TIME_OUT": "TIME_LIMIT"}


def _lost(word: str, kept: list[str], release: str | None) -> bool:
    """A skipped --mail-type word whose mail does not come: not a misspelling (one edit or so, difflib
    ratio 0.75 or more) of an event that a kept one mails anyway, nor another name of one (_EVENT_ALIASES: ABORT
    for FAIL)."""
    meant = [_EVENT_ALIASES[word.upper()]] if word.upper() in _EVENT_ALIASES else \
        difflib.get_close_matches(word.upper(), sorted(MAIL_EVENTS), n=1, cutoff=0.75)
    return not (meant and any(meant[0] in mailed_anyway(event, release) for event in kept))


def _mail_type(script, option, release: str | None):
    """A --mail-type word parse_mail_type() does not know (START, ABORT): alone, sbatch refuses the job;
    beside known events, it is skipped and that mail never comes (round thirty-nine's warpx-hall job asks
    `--mail-type=START,END,FAIL`: END and FAIL are mailed, the start is not)."""
    kept, skipped = mail_events(option.value)
    if kept and not any(_lost(word, kept, release) for word in skipped):
        return
    known = "BEGIN, END, FAIL, REQUEUE, ALL, NONE, TIME_LIMIT[_90|_80|_50], ARRAY_TASKS, INVALID_DEPEND, STAGE_OUT"
    words = ", ".join(skipped)
    if not kept:  # also `--mail-type=` and `--mail-type=,`: no word at all is INFINITE16 too
        yield (script.display, option.line, option.col,
               f"--mail-type={option.value}: no event sbatch knows ({known}); sbatch rejects it")
    else:
        yield (script.display, option.line, option.col,
               f"--mail-type={option.value}: sbatch skips {words} (not an event: {known}) and "
               + ("sends no mail (NONE)" if kept == ["NONE"] else f"mails only for {','.join(kept)}"))


def _mails(parsed) -> bool:
    """The job asks for mail: a --mail-type whose last value (sbatch applies the last) is other than NONE (round 511's
    malphaplex templates: `--mail-type=NONE` above a `--mail-user=$USER@...` that no mail ever uses)."""
    types = parsed.get("mail-type")
    return bool(types) and (types[-1].value or "").strip("\"'").upper() != "NONE"
