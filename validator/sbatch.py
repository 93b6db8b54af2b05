"""Reading `#SBATCH` directives the way sbatch itself does (src/sbatch/opt.c).

- A directive line starts with exactly `#SBATCH` at column 1 (what follows needs no blank:
  `#SBATCH--nodes=2` is one); anything else that merely looks like one (`# SBATCH`, `#sbatch`, an
  indented `#SBATCH`) is an ordinary comment to Slurm.
- Slurm reads directives until the first line that is neither blank nor a comment; later
  `#SBATCH` lines are silently ignored.
- Within a directive, arguments are split on whitespace; single and double quotes group, a
  backslash escapes the next character, and an unescaped `#` ends the directive.
- The arguments then go through getopt_long, which accepts unique prefixes of long options.
"""
from __future__ import annotations

import json
import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

DATA = Path(__file__).parent / "data"
MAGIC = "#SBATCH"
# The characters isspace() takes in the C locale, as sbatch reads its script (_opt_batch_script in src/sbatch/opt.c)
_C_SPACE = " \t\n\v\f\r"
# Unicode spaces, format and control characters (U+200B, U+00A0, U+00AD, U+FEFF, U+001C): nothing a reader sees
INVISIBLE_CATEGORIES = frozenset({"Zs", "Zl", "Zp", "Cf", "Cc"})


def invisible_lead(text: str) -> int:
    """How many characters at the start of `text` a reader does not see (INVISIBLE_CATEGORIES)."""
    at = 0
    while at < len(text) and unicodedata.category(text[at]) in INVISIBLE_CATEGORIES:
        at += 1
    return at

# Options that SPANK plugins add to sbatch once they are loaded. In the strict profile they are
# accepted only when declared (manifest slurm.spank, `# validator: spank=NAME`, repository config);
# in the default profile a known plugin's options pass (the script's cluster is unknown).
# Other site plugins: list their options under `spank-options` in the repository config.
SPANK_OPTIONS = {
    "pyxis": {
        "container-image": "required", "container-mounts": "required",
        "container-workdir": "required", "container-name": "required",
        "container-save": "required", "container-mount-home": "no",
        "no-container-mount-home": "no", "container-remap-root": "no",
        "no-container-remap-root": "no", "container-entrypoint": "no",
        "no-container-entrypoint": "no", "container-entrypoint-log": "no",
        "container-writable": "no", "container-readonly": "no", "container-env": "required",
    },
    # NERSC's shifter (shifter/wlm_integration/slurm): container image, volume maps, modules
    "shifter": {"image": "required", "volume": "required", "module": "required", "ccm": "no"},
}
SITE = "site"  # the pseudo plugin of the options a repository config declares


@lru_cache(maxsize=1)
def option_table() -> dict:
    with open(DATA / "sbatch_options.json", encoding="utf-8") as handle:
        return json.load(handle)


def releases() -> list[str]:
    return option_table()["releases"]


def release_key(release: str) -> tuple[int, ...]:
    """'23.02' -> (23, 2); ASCII digits only (str.isdigit() also accepts '²', which int() refuses)."""
    return tuple(int(part) if part.isascii() and part.isdigit() else -1 for part in release.split("."))


def before(release: str | None, first: str) -> bool:
    """Whether the targeted release is older than `first`, the release a behaviour appeared in
    (rules whose premise holds only before it: see each rule's docstring for the source)."""
    return release is not None and release_key(release) < release_key(first)


@dataclass
class Token:
    text: str  # after quote and escape removal
    col: int  # 1-based column where the raw token starts
    raw: str  # as written


@dataclass
class Option:
    name: str | None  # canonical long name; None when unknown
    value: str | None
    line: int
    col: int
    written: str  # the option as written, e.g. "--ntasks-per=4" or "-N"
    problem: str | None = None  # unknown / ambiguous / unavailable / stray / missing-argument
    detail: str = ""
    component: int = 0  # the heterogeneous job's component: 1 after the first `#SBATCH hetjob` line, ...


@dataclass
class Directive:
    line: int
    text: str
    tokens: list[Token]
    cut_at: int | None = None  # column of an unescaped '#' that ended the directive
    unterminated_quote: bool = False


@dataclass
class LookAlike:
    line: int
    col: int
    text: str
    why: str


@dataclass
class SbatchScript:
    lines: list[str]
    directives: list[Directive] = field(default_factory=list)
    options: list[Option] = field(default_factory=list)
    ignored_directives: list[Directive] = field(default_factory=list)  # after the first command
    lookalikes: list[LookAlike] = field(default_factory=list)
    first_command_line: int | None = None
    crlf_lines: list[int] = field(default_factory=list)
    template_lines: list[int] = field(default_factory=list)  # directives with {{ }} / {% %} placeholders
    # directives with any placeholder: {{ }}, <ACCOUNT>, <partition name>, YOUR_PROJECT (template_lines among them)
    placeholder_lines: list[int] = field(default_factory=list)
    # lines of a template engine's own ({% include %}, {# comment #}): the file is a template that a
    # tool renders before sbatch, and these lines render to directives or to nothing
    engine_lines: list[int] = field(default_factory=list)
    _ignored_options: list | None = field(default=None, repr=False, compare=False)  # ignored_options(), once

    def ignored_options(self) -> list[tuple[int, "Option"]]:
        """(line, option) of each option of the #SBATCH lines sbatch ignores (after the first command), as sbatch
        would read them if they came first; parsed once per script (sbatch-directive-after-command's defaults,
        launch-time-limit's ignored --time)."""
        if self._ignored_options is None:
            self._ignored_options = [(directive.line, option) for directive in self.ignored_directives
                                     for option in parse_script("#!/bin/bash\n" + directive.text + "\n").options]
        return self._ignored_options

    def get(self, name: str) -> list[Option]:
        """The option as the batch script's own allocation has it: component 0 of a heterogeneous
        job (the batch script runs there; the later components' options are theirs)."""
        return self.component(0).get(name)

    def value(self, name: str) -> str | None:
        return self.component(0).value(name)

    def component(self, index: int) -> "Component":
        """The options of one component of a heterogeneous job (`srun --het-group=1` runs there)."""
        return Component(self, index)


@dataclass
class Component:
    """One component's directives, read as SbatchScript.get/value read component 0's."""
    script: SbatchScript
    index: int

    def get(self, name: str) -> list[Option]:
        return [o for o in self.script.options if (o.name == name or SAME_SETTING.get(o.name) == name)
                and o.component == self.index]

    def value(self, name: str) -> str | None:
        found = self.get(name)
        return found[-1].value if found else None


def split_arguments(rest: str, offset: int) -> tuple[list[Token], int | None, bool]:
    """Split a directive's text into arguments as sbatch's _get_argument does.

    Returns the tokens, the column of an unescaped '#' that ended the line (if any), and
    whether a quote was left open.
    """
    tokens: list[Token] = []
    i, n = 0, len(rest)
    cut = None
    while i < n:
        while i < n and rest[i] in " \t\r\v\f":
            i += 1
        if i >= n:
            break
        start = i
        out: list[str] = []
        quote = ""
        escaped = False
        while i < n and (quote or rest[i] not in " \t\r\v\f"):
            ch = rest[i]
            if escaped:
                out.append(ch)
                escaped = False
            elif ch == "\\":
                escaped = True
            elif quote:
                if ch == quote:
                    quote = ""
                else:
                    out.append(ch)
            elif ch in "\"'":
                quote = ch
            elif ch == "#":
                cut = offset + i + 1
                break
            else:
                out.append(ch)
            i += 1
        if out or i > start:
            if out or rest[start] in "\"'":
                tokens.append(Token("".join(out), offset + start + 1, rest[start:i]))
        if cut is not None:
            return tokens, cut, False
        if quote:
            return tokens, None, True
    return tokens, cut, False


# Variables that slurmd sets for every batch job, whatever the job asked for: env_array_for_batch_job()
# in src/common/env.c (slurm-22-05-0-1 and slurm-26-05-3-1, the same unconditional calls). Inside
# the job none of them is ever empty: a test or a default on one says what its author meant
# (shellcheck's SC2070, launch-default-quotes).
ALWAYS_SET_IN_BATCH_JOB = frozenset({"SLURM_JOB_ID", "SLURM_JOBID", "SLURM_JOB_NUM_NODES", "SLURM_NNODES",
                                     "SLURM_JOB_NODELIST", "SLURM_NODELIST", "SLURM_JOB_PARTITION",
                                     "SLURM_JOB_CPUS_PER_NODE", "SLURM_CLUSTER_NAME"})


# --mail-type's events as parse_mail_type() in src/common/proc_args.c reads them (the same list at
# slurm-22-05-0-1 and slurm-26-05-1-1): comma-separated, any case; NONE ends the list; a word it does
# not know is skipped; a value with no event it knows (and no NONE) is INFINITE16, which
# arg_set_mail_type() in src/common/slurm_opt.c refuses ("Invalid --mail-type specification").
MAIL_EVENTS = frozenset({"NONE", "ARRAY_TASKS", "BEGIN", "END", "FAIL", "INVALID_DEPEND", "REQUEUE", "ALL",
                         "STAGE_OUT", "TIME_LIMIT", "TIME_LIMIT_90", "TIME_LIMIT_80", "TIME_LIMIT_50"})
# --mail-type=ALL is "equivalent to BEGIN, END, FAIL, INVALID_DEPEND, REQUEUE, and STAGE_OUT" (sbatch.1 at
# slurm-22-05-0-1 and slurm-26-05-1-1)
MAIL_ALL = frozenset({"ALL", "BEGIN", "END", "FAIL", "INVALID_DEPEND", "REQUEUE", "STAGE_OUT"})


def mail_events(value: str) -> tuple[list[str], list[str]]:
    """(events sbatch keeps, words it skips) of a --mail-type value, read as parse_mail_type() reads it:
    strtok_r on ',' (empty parts vanish), xstrcasecmp, and nothing after NONE."""
    kept, skipped = [], []
    for word in (part for part in value.split(",") if part):
        if word.upper() not in MAIL_EVENTS:
            skipped.append(word)
            continue
        kept.append(word.upper())
        if word.upper() == "NONE":
            break
    return kept, skipped


# The words time_str2secs() in src/common/parse_time.c reads as INFINITE (xstrcasecmp), and -1.
UNLIMITED_TIME = frozenset({"unlimited", "infinite", "-1"})


class SlurmTime:
    """A time limit as sbatch reads it: _is_valid_timespec() in src/common/parse_time.c (the same at
    slurm-22-05-0-1 and slurm-26-05-1-1): only ASCII digits, '-' and ':'; at least one run of digits;
    at most one '-', never after a ':'; at most two ':'; with a '-', one ':' needs 3 runs of digits
    and two need 4; without, 2 and 3. So `2-` passes (two days: sscanf "%d-%d:%d:%d"), `90:` does not; `-1`
    is INFINITE (time_str2secs). Round twenty-three: `--time=2-` was reported and is valid."""

    def fullmatch(self, value: str) -> bool:
        if value.lower() in UNLIMITED_TIME:
            return True
        if not value or any(ch not in "0123456789-:" for ch in value):
            return False
        runs = len(re.findall(r"[0-9]+", value))
        dashes, colons = value.count("-"), value.count(":")
        if not runs or dashes > 1 or colons > 2 or (dashes and ":" in value.split("-", 1)[0]):
            return False
        need = {1: 3, 2: 4} if dashes else {1: 2, 2: 3}
        return runs >= need.get(colons, 1)

    def seconds(self, value: str) -> int | None:
        """The limit in seconds as time_str2secs() reads it (src/common/parse_time.c at slurm-22-05-0-1 and
        slurm-26-05-1-1, the formats sbatch.1 lists for --time there): with a '-', days-hours[:minutes
        [:seconds]]; three fields are hours:minutes:seconds; else minutes[:seconds]. None where there is no limit
        (UNLIMITED, INFINITE, -1, a time of zero) or the value is no time."""
        if not self.fullmatch(value) or no_time_limit(value):
            return None
        if "-" in value:
            days, _, rest = value.partition("-")
            fields = [int(f) if f else 0 for f in rest.split(":")] if rest else []
            h, m, s = (fields + [0, 0, 0])[:3]
            return int(days or 0) * 86400 + h * 3600 + m * 60 + s
        fields = [int(f) if f else 0 for f in value.split(":")]
        if len(fields) == 3:
            return fields[0] * 3600 + fields[1] * 60 + fields[2]
        return fields[0] * 60 + (fields[1] if len(fields) > 1 else 0)


SLURM_TIME = SlurmTime()  # minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, and what parse_time.c also takes


# [0-9], not \d: Python's \d also matches other scripts' digits ('١'); sbatch reads ASCII (sscanf %d, strtol)
_COUNT = re.compile(r"[0-9]+")
_RANGE = re.compile(r"[0-9]+(-[0-9]+)?")
# [type:]count, or a type alone: its count is 1 ("We have type with implicit count of 1":
# _get_next_gres in src/common/gres.c at slurm-22-05-0-1, slurm_get_next_tres in
# src/common/slurm_protocol_defs.c at slurm-26-05-1-1; round ninety-two's --gpus=h100-96)
# An empty value (`--gpus-per-task=`, or one a '#' cut to nothing) is dropped, not refused: xfmt_tres() in
# src/common/proc_args.c returns at once for an empty string, and --gpus-per-task's sibling loop skips it
# (_set_tres_per_task_from_sibling_opt in src/common/slurm_opt.c), at slurm-22-05-8-1 and slurm-26-05-3-1;
# the real sbatch 22.05.8 here accepts `#SBATCH --gpus=`, `--gpus-per-node=` and `--gpus-per-task=` (round
# two hundred and forty-five: a template's `--gpus-per-task=#GPUS_PER_TASK#`).
_GPUS = re.compile(r"([\w.-]+:)?[0-9]+|[A-Za-z][\w.-]*|")
_SIZE = re.compile(r"[0-9]+([KMGT]B?)?", re.IGNORECASE)


# option -> (pattern, what the value must be); from sbatch's man page for each option
_TASKS = (_COUNT, "a task count")
_GPU_COUNT = (_GPUS, "[type:]count or a type")
_TIME = (SLURM_TIME, "a time: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS")
# Options that set another's value: --tasks-per-node is the "Deprecated form of --ntasks-per-node", the same
# setter (slurm_opt_tasks_per_node in src/common/slurm_opt.c: .val LONG_OPT_NTASKSPERNODE, .set_func
# arg_set_ntasks_per_node, at slurm-22-05-0-1 and slurm-26-05-1-1); get()/value() read it as that option.
SAME_SETTING = {"tasks-per-node": "ntasks-per-node"}

VALUE_TYPES = {"nodes": (_RANGE, "a node count or min-max range"), "ntasks": _TASKS, "ntasks-per-node": _TASKS,
               "tasks-per-node": _TASKS,
               "cpus-per-task": (_COUNT, "a CPU count"),
               "gpus-per-node": _GPU_COUNT, "gpus-per-task": _GPU_COUNT, "gpus": _GPU_COUNT,
               "mem": (_SIZE, "a size such as 80G"), "mem-per-cpu": (_SIZE, "a size such as 4G"),
               "mem-per-gpu": (_SIZE, "a size such as 80G"), "time": _TIME, "time-min": _TIME}


# A name between two runs of one mark, the whole value of a count, size or time: `-N ---N---`,
# `--cpus-per-task=---cpus-per-task---` (round one hundred and thirty-nine: a Python job writer fills each
# ---KEY--- of its template from a YAML file before sbatch), and the same form in marks no such value holds
# (++N++, ~~N~~, ^^N^^, !!N!!, ==N==, ::N::). Only there: in a job name, a comment or a password the same
# marks are text (`--job-name=~~nightly~~`, `# !!IMPORTANT!!`, `DB_PASSWORD=++Hunter22++`), and two dashes and
# a name (`-N --N--`) are option syntax.
_MARK_TOKEN = re.compile("|".join(rf"{m}{{{n},}}[A-Za-z_][\w-]{{0,62}}?{m}{{{n},}}"
                                  for m, n in ((r"\-", 3), (r"\+", 2), ("~", 2), (r"\^", 2), ("!", 2), ("=", 2), (":", 2))))


def no_time_limit(value: str) -> bool:
    """A --time value that asks for no limit at all: UNLIMITED or INFINITE (time_str2mins in
    src/common/parse_time.c), -1, or a time of zero, which arg_set_time() in src/common/slurm_opt.c turns
    into INFINITE ("A time limit of zero requests that no time limit be imposed", sbatch.1; the same at
    slurm-22-05-0-1 and slurm-26-05-1-1). 00:00:30 is one minute, not zero (time_str2mins rounds up)."""
    if value.lower() in UNLIMITED_TIME:
        return True
    return SLURM_TIME.fullmatch(value) and all(int(run) == 0 for run in re.findall(r"[0-9]+", value))


# A tool's own bracketed token, filled by its Python before sbatch (round thirty-three: a Ray
# autoscaler's [_DEPLOY_HEAD_CPUS_], a [_PY_ADD_SLURM_CMD_] line), in directives and in the body.
BRACKET_TOKEN = re.compile(r"\[_[A-Z][A-Z0-9_]{0,62}_\]")


# A template engine's placeholder, filled in by a tool before sbatch: Jinja's {{ x }} and {% %},
# atparse's @[NODES] (NOAA's ufs-weather-model), autoconf/CMake's @NODES@, Python's str.format and
# f-strings ({n_gpus}, {n_gpus*100_000}: a program's lower-case names; not ${VAR}, a shell variable
# sbatch never expands, nor {LIMIT_TIME}, which reads as a value for a person to fill in).
_TEMPLATE = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|@\[\w{1,64}\]|@[A-Z_][A-Z0-9_]{0,63}@"
                       r"|(?<![{$])\{[a-z_(][^{}\n]{0,120}\}(?!\})"
                       # tokens a tool's sed or a test harness replaces: __NODES__, _NTASKS_ (round forty-seven:
                       # NERSC's podman benchmarks, filled by their submit.sh's sed), $N_NODES$ (round fifty-eight:
                       # LiveOcean's make_back_batch.py), %WALLTIME% (two capitals at least after '%', so
                       # sbatch's own %A_%a stays a filename pattern)
                       r"|\b__?[A-Z][A-Z0-9_]{0,62}__?\b|\$[A-Z][A-Z0-9_]{0,62}\$(?![\w{(])|%[A-Z]{2}[A-Z0-9_]{0,62}%"
                       # RELION's queue-submission templates: it replaces XXXmpinodesXXX, XXXqueueXXX, ...
                       # with the job's values before it calls sbatch (replacing[...] in
                       # src/pipeline_jobs.cpp, 3dem/relion 73f0a3c0)
                       r"|XXX[a-z][a-z0-9_]{0,30}XXX"
                       # a benchmark driver's @@nodes@@, @@time@@: its Python replaces f"@@{k}@@" with each
                       # run's value before it writes the job file (round one hundred and twelve)
                       r"|@@[A-Za-z_][A-Za-z0-9_]{0,63}@@"
                       # Python's printf-style mapping key in a directive, %(job_id)s, %(id)04d: a generator's
                       # `template % {...}` fills it (round two hundred and sixty-eight: BlueBrain's
                       # slurm_templates.py); no sbatch filename pattern holds '(' (sbatch.1, filename pattern).
                       # Like every token here, one in a directive makes the whole file a template.
                       r"|%\([A-Za-z_][A-Za-z0-9_]{0,62}\)[#0 +-]*[0-9]*(?:\.[0-9]+)?[diouxXeEfFgGcrsa]"
                       r"|" + BRACKET_TOKEN.pattern
                       # a form composer's lower-case field in brackets, the whole value of an option
                       # sbatch reads as a count, size, time or name of the cluster's, or a line of its
                       # own (TAMU's Drona Composer fills --time=[gputime] and `#SBATCH [gpu]` from its
                       # map.json: round thirty-four); not a hostlist's node[01-04], a constraint's
                       # [rack1|rack2] or intel&[ib], nor a job name or comment in brackets
                       + r"|(?:(?<=#SBATCH )|--(?!job-name|comment|constraint|mail-user|output|error|chdir|wckey)"
                         r"[a-z][a-z-]{1,30}[= ])\[[a-z][a-z0-9_]{0,62}\](?=\s|$)")
TEMPLATE = _TEMPLATE
# Tokens read only where a value holds nothing else a person writes: in the values of options that are no free
# text (not --job-name, --comment, --mail-user), never in a directive's trailing comment, or as a whole
# directive (review of the session's changes: `${USER}@MIT.EDU`, `# cc @ADMIN`, `--comment="{Note}"`, which
# the whole-line search of _TEMPLATE would take):
# - a setup script's sed token as the whole value or directive, `--time=@RUN_T`, `#SBATCH @SYSTEM` (round two
#   hundred and eighty-four: GEOSgcm_App's gcm_setup runs `sed s?@RUN_T?$RUN_T?g` over its .j jobs);
# - autoconf-like `@nodes@` in lower case (round two hundred and eighty-four: toast's generate.py fills every
#   @key@ from its config), not inside a word (`alice@lab@`);
# - Python str.format with a program's CamelCase keys, `{TimeLimitHours}`, `{NNodes}` (round two hundred and
#   eighty-four: SkyFactory's self.jobtemp.format(**pars)); an all-capitals `{LIMIT_TIME}` stays a person's
#   placeholder. Bounded, so a long unclosed `{Aaaa...` costs no backtracking;
# - a launcher's doubled brackets, --time=[[DURATION]], --nodes=[[TOTAL_NODES]] (round four hundred and thirty-six:
#   cosmos-rl's dispatch_job.py replaces each before it submits the rendered copy); not in the body, where
#   `if [[DEBUG]]; then` is bash's test without its blanks, a defect shellcheck reports.
# `{ee.time}`, `{slurm.ee}`: str.format's attribute fields (cloudmesh-ee's job templates, round 546); bash expands
# braces only around a comma or `..`, so a dotted name in braces is no shell word of its own
VALUE_TOKEN = re.compile(r"(?<![\w.@])@[a-z_][A-Za-z0-9_]{0,62}@"
                         r"|(?<![{$])\{(?=[A-Z0-9_]{0,62}[a-z])[A-Z][A-Za-z0-9_]{0,62}\}(?!\})"
                         r"|(?<![{$])\{[a-z_][a-z0-9_]{0,62}(?:\.[a-z_][a-z0-9_]{0,62}){1,4}\}(?!\})"
                         r"|\[\[[A-Z][A-Z0-9_]{0,62}\]\]")
# the setup script's `@NAME`: only a whole value (`--time=@RUN_T`, not `gpu&@HBM`) or a whole directive
_WHOLE_TOKEN = re.compile(r"@[A-Z][A-Z0-9_]{1,62}|\[\[[A-Z][A-Z0-9_]{0,62}\]\]")  # also `#SBATCH [[EXTRA_ARGS]]`
_VALUE_TOKEN_FREE_TEXT = {"job-name", "comment", "mail-user"}


def _value_token_lines(script) -> set[int]:
    """Directive lines whose value holds a VALUE_TOKEN where one may stand, or is a whole `@NAME` (see there;
    a whole `#SBATCH @SYSTEM` directive is parse_script's `whole` mark)."""
    return {o.line for o in script.options if o.name not in _VALUE_TOKEN_FREE_TEXT and o.value
            and (VALUE_TOKEN.search(o.value) or _WHOLE_TOKEN.fullmatch(o.value))}


# A value to fill in: `<ACCOUNT>`, `<partition name>` (split in two arguments by sbatch), `project_<id>`,
# `YOUR_ACCOUNT`, `your_own_partition`, `your_account`, `TODO_YOUR_ACCOUNT`, `def-YOURPI`, `your-partition`
# (round thirty-six, seen unreported; `yours` is a word), `*FIXME*`, `CHANGEME`,
# `changeme@gpu` (round twenty-six: the last three unreported), `FIX_THIS` (round twenty-eight), and runs
# of X's in an account's or a partition's value (_FILL_RUN below: rounds twenty-nine and thirty, seen
# unreported; `gpu-xxxl` is a name, not a placeholder). A capitalised field in brackets
# (`--ntasks=[NTASKS]`, a centre's fill-in form in round thirty-four) is left to the value checks, which
# say on each line what sbatch refuses. No sbatch value holds '<' or '>'.
# `-N ##Nodes##`: a driver's sed fills the token in before sbatch reads the file (round twenty-four: an
# RCCL test's run1 script seds ##Nodes## in run2). Its first '#' would cut sbatch's value, so it is a
# placeholder only where it stands as an option's value (placeholder() below); `##TODO##` after a
# value is a comment. So is `#####_np`, a run of '#' and a name (round one hundred and twenty-six: a
# SAM driver's `sed "s;#####_np;${np};g"` writes run.slurm from run_orig.slrm).
HASH_TOKEN = re.compile(r"##[A-Za-z][A-Za-z0-9_]{0,62}##|#{3,}_[A-Za-z][A-Za-z0-9_]{0,62}")
# `--account=[budget code]` (round 476's CAMP job: "Replace [budget code] below with your project code"), `-J [*
# ENTER YOUR JOB NAME HERE *]` (round 482's Carpentries lesson): a whole value in square brackets with a blank in it,
# which no option's value is (node lists and constraints hold none; a path with `[final version]` in it is a path)
PLACEHOLDER = re.compile(_TEMPLATE.pattern + "|" + HASH_TOKEN.pattern + r"|<[A-Za-z_][^<>]*>"
                         r"|(?<=[=\s])\[[^\[\]\s]*\s[^\[\]\n]*\](?=\s|$)"
                         r"|(?<![A-Za-z0-9.])(?:TODO_|todo_)?(?:YOUR[-_A-Z]|[Yy]our(?:[-_]|[A-Z]|[/.](?=[A-Za-z])))\w*"
                         r"|\*?\bFIX_?ME\b\*?|\bFIX_?THIS\b|\b(?:CHANGE_?ME|changeme|REPLACE_?ME)\b")


def filled_in_later(value: str) -> bool:
    """A value that holds a template's token or a person's placeholder (TEMPLATE, PLACEHOLDER), or is one
    writer's mark (`~~N~~`): the text is filled in before the program reads it."""
    return bool(PLACEHOLDER.search(value) or _MARK_TOKEN.fullmatch(value))


# In the value of an option that names the person's own project or the cluster's queues and features
# (--account, --partition, --qos, --reservation, --constraint): a run of capital X's, a word of x's or of stars
# (`-A uppmaxXXXX-Y-ZZZ`, `-A *******`, `--account=project_xxxxxxxxx`). In a file name (`xxx.out`,
# `run_XXX_%j.out`) they are a name.
# Also a word between runs of stars (`-A ***CHANGE***`, round forty-six), a bare ellipsis (`-A ...`,
# round forty-four's PDC jobs) and a bare TODO (`--account=TODO`, round fifty-one): all seen unreported.
_FILL_RUN = re.compile(r"(?<![A-Z])X{3,}(?![A-Z])|(?<![A-Za-z0-9*])(?:x{3,}|\*{3,}|\*{2,}[A-Za-z_]+\*{2,})(?![A-Za-z0-9*])"
                       r"|(?<![\w.])\.{3,}(?![\w.])|(?<![\w-])TODO(?![\w-])")
_FILL_OPTIONS = {"account", "partition", "qos", "reservation", "constraint"}
# followed by an option: '# SBATCH' alone is a heading of a comment banner, '# SBATCH directives below'
# prose (round sixty-eight, round two): neither is a directive switched off nor one mistyped
# (a dash or two and a letter: '-N', '--time', also the en and em dashes pasted from documents; not a
# row of dashes under a heading). Glued to the word, two dashes or a long dash ('#sbatch--time'), or
# one hyphen and a lone letter ('#sbatch-N 2', a short option): one hyphen and a word is a hyphenated
# name ('# sbatch-sft-04b.sh — full SFT ...', a header naming the file: round eighty-four)
_LOOKALIKE = re.compile(r"^\s*#\s*sbatch(?:(?:\s+[-\u2013\u2014]{1,2}|--|[\u2013\u2014]{1,2})[A-Za-z]"
                        r"|-[A-Za-z](?![A-Za-z]))", re.IGNORECASE)
# `#SBACTH -A proj`, `#SBTACH --gres=gpu:1` (rounds 435 and 437: seen unreported twice): the magic word misspelt
# by one edit (two letters swapped, one changed, added or dropped) and then an option, at the line's start
_MISSPELT = re.compile(r"#([A-Za-z]{5,7})\s+(-{1,2})([A-Za-z][\w-]*)")


@lru_cache(maxsize=1)
def _sbatch_names() -> tuple[frozenset, tuple]:
    """sbatch's short option letters and long option names, of every release the table holds."""
    table = option_table()["options"]
    return frozenset(info["short"] for info in table.values() if info["short"]), tuple(table)


def _misspelt_magic(line: str) -> str | None:
    """The misspelt word of `#SBACTH -A x` (one edit from SBATCH, in any case) followed by one of sbatch's options,
    else None. Another program's option after the word is another tool's directive: `#YBATCH -r node_q` is the
    directive of a lab's ybatch wrapper beside its #SBATCH lines (round 461), and -r is no sbatch option."""
    found = _MISSPELT.match(line)
    word = found.group(1).upper() if found else ""
    if not word or "SBATCH" in word:
        return None  # `#XSBATCH`, `#SBATCHX`: a letter put before or after on purpose, as `##SBATCH` is
    shorts, longs = _sbatch_names()
    name = found.group(3)
    option = name[0] in shorts if found.group(2) == "-" else any(long.startswith(name) for long in longs)
    return found.group(1) if option and one_edit(word, "SBATCH") else None


def one_edit(a: str, b: str) -> bool:
    """One letter added, dropped or changed, or two neighbours swapped (a misspelt directive's magic word here,
    a misspelt variable in launch-unset-variable). Two names that share a key of that rule's index may be two edits
    apart (DO_SPLIT and ID_SPLIT each drop to D_SPLIT: round one hundred and seventeen's pipeline switch against a
    job id)."""
    if a == b or abs(len(a) - len(b)) > 1:
        return a == b
    if len(a) != len(b):
        short, long_ = sorted((a, b), key=len)
        return any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))
    diff = [i for i in range(len(a)) if a[i] != b[i]]
    return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1
                              and a[diff[0]] == b[diff[1]] and a[diff[1]] == b[diff[0]])


# `#   sbatch --nodes=N run.sh`: a usage example in a comment (the command, lowercase, after a space)
_USAGE = re.compile(r"^\s*#\s+sbatch\s")
# `#sbatch -p gpu_quad --reservation=lab poet2_train.sbatch` (round three hundred and eighty-one, under
# "# Example submission:"): a lowercase command line whose first operand is a job file is a usage example
# too; a directive takes options only. Options' values are skipped (`-J x.sh` names a job, `-o run.sh` a
# file), and so are the words of a comment after '#' (sbatch's get_argument stops there).
_JOB_FILE = re.compile(r"[\w.$/{}~-]*\w\.(?:sbatch|slurm|sh|bash|job|sub|batch)")


@lru_cache(maxsize=1)
def _valued_options() -> frozenset:
    """sbatch's options that take a value in the next word (`--job-name NAME`, `-J NAME`)."""
    table = option_table()["options"]
    return frozenset({"--" + name for name, info in table.items() if info["arg"] == "required"}
                     | {"-" + info["short"] for info in table.values() if info["short"] and info["arg"] == "required"})


def _usage_line(line: str) -> bool:
    """A comment that shows the sbatch command rather than a directive (see _USAGE and _JOB_FILE)."""
    if _USAGE.match(line):
        return True
    words = line.split()
    if not words or words[0] != "#sbatch":
        return False
    valued = _valued_options()
    i = 1
    while i < len(words) and not words[i].startswith("#"):
        word = words[i]
        if not word.startswith("-"):
            return _JOB_FILE.fullmatch(word) is not None  # the first operand
        i += 2 if word in valued else 1
    return False


def _whole_line_token(stripped: str) -> bool:
    """A line that is one template token; not a lower-case `{x,y}` or `{x..y}`, which bash expands (a command)."""
    if not stripped or stripped.startswith("{") and not stripped.startswith("{{"):
        return bool(stripped) and VALUE_TOKEN.fullmatch(stripped) is not None
    return _TEMPLATE.fullmatch(stripped) is not None or VALUE_TOKEN.fullmatch(stripped) is not None


def _token_lines(lines: list[str]) -> set[int]:
    """Lines (1-based) that are one template token and have an #SBATCH line after them with only blank, comment
    or other such lines between: a tool's slot among the directives, not a command (`{echo,start}` with no
    directive after it is bash's brace expansion, a command). One pass from the end: linear."""
    found, directive_ahead = set(), False
    for number in range(len(lines), 0, -1):
        line = lines[number - 1]
        stripped = line.strip()
        if line.startswith(MAGIC):
            directive_ahead = True
        elif _whole_line_token(stripped):
            if directive_ahead:
                found.add(number)
        elif stripped and not stripped.startswith("#"):
            directive_ahead = False
    return found


def parse_script(text: str, spank: tuple[str, ...] = (), release: str | None = None,
                 site_options: tuple[str, ...] = ()) -> SbatchScript:
    raw_lines = text.split("\n")
    script = SbatchScript(lines=[ln.rstrip("\r") for ln in raw_lines])
    script.crlf_lines = [i + 1 for i, ln in enumerate(raw_lines) if ln.endswith("\r")]
    stopped = False
    engine_open = None  # inside a {# ... #} or {% ... %} that spans lines: "#" or "%"
    token_lines = _token_lines(script.lines)
    for number, raw in enumerate(raw_lines, start=1):
        line = raw
        if line.startswith(MAGIC):
            # sbatch compares the first 7 characters only: `#SBATCH--nodes=2` is a directive too
            # (src/sbatch/opt.c, _opt_batch_script: xstrncmp(line, "#SBATCH", 7), slurm-22-05-0-1 to slurm-26-05-1-1)
            rest = line[len(MAGIC):]
            tokens, cut, open_quote = split_arguments(rest, len(MAGIC))
            directive = Directive(number, line, tokens, cut, open_quote)
            if stopped:
                script.ignored_directives.append(directive)
            else:
                script.directives.append(directive)
            continue
        stripped = line.strip(_C_SPACE)  # sbatch's isspace() in the C locale: a no-break space is no blank
        if not stopped and number in token_lines:
            # a line that is one template token among the directives (`@batch_extra@`: round two hundred and
            # eighty-four, toast's generate.py writes extra #SBATCH lines there): the tool's, not a command
            script.engine_lines.append(number)
            continue
        if engine_open or stripped.startswith(("{%", "{#")):  # Jinja's own lines, also over several lines
            script.engine_lines.append(number)
            opened = engine_open or stripped[1]
            engine_open = None if ("%}" if opened == "%" else "#}") in stripped else opened
            continue
        if not stripped or stripped.startswith("#"):
            # only before the first command: after it sbatch reads no directive, so even '#SBATCH' there is
            # ignored (sbatch-directive-after-command says so) and a look-alike is a commented-out command
            # (`#sbatch --export=ALL $NEXT_JOB`: round sixty-six's resubmission lines)
            if (_LOOKALIKE.match(line) or _misspelt_magic(line)) and number > 1 and not stopped \
                    and not _usage_line(line):
                col = len(line) - len(line.lstrip()) + 1
                script.lookalikes.append(LookAlike(number, col, line.rstrip("\r"), _lookalike_reason(line)))
            continue
        if not stopped:
            stopped = True
            script.first_command_line = number
            hidden = invisible_lead(stripped)
            if hidden and stripped[hidden:].upper().startswith("#SBATCH") and number > 1:
                # `\u200b#SBATCH -N 2`: a directive to the eye, a command to sbatch, which stops reading here
                col = len(line) - len(line.lstrip(_C_SPACE)) + 1
                script.lookalikes.append(LookAlike(
                    number, col, line.rstrip("\r"), f"an invisible character (U+{ord(stripped[0]):04X}) before "
                    "'#SBATCH' makes the line a command to sbatch: it ignores this line and every directive below it"))
    script.options = resolve_options(script.directives, spank, release, site_options)
    # A template ({{ nodes }}, -A <ACCOUNT>): its directives are not sbatch's yet, and a placeholder with
    # a blank reads as two arguments; sbatch-bad-value says once that the file is a template.
    script.template_lines = sorted({d.line for d in script.directives if _TEMPLATE.search(d.text)}
                                   | _value_token_lines(script))
    # a writer's ---KEY--- marks: the whole value of a count, size or time, or the whole directive
    # (`#SBATCH ~~EXTRA_DIRECTIVES~~`)
    whole = {d.line for d in script.directives if _MARK_TOKEN.fullmatch(d.text[len(MAGIC):].strip())
             or _WHOLE_TOKEN.fullmatch(d.text[len(MAGIC):].strip())}
    marked = {o.line for o in script.options if o.name in VALUE_TYPES and o.value and _MARK_TOKEN.fullmatch(o.value)}
    script.template_lines = sorted(set(script.template_lines) | marked | whole)
    for option in script.options:
        if option.line in whole:
            option.problem = None  # the writer puts directives of its own there, not sbatch's stray word
    on_line = {}
    for option in script.options:
        on_line.setdefault(option.line, []).append(option)
    script.placeholder_lines = [d.line for d in script.directives
                                if placeholder(d, on_line.get(d.line, ())) is not None]
    if script.placeholder_lines:
        for option in script.options:
            if option.line in script.placeholder_lines and not _named_plainly(option):
                option.problem = None
    return script


def _named_plainly(option: Option) -> bool:
    """An option sbatch does not know, written as a plain long name before a templated value
    (`--workdir=/scratch/$EX_NAME$`): rendering fills in the value, the name stays, and sbatch still
    refuses it (round fifty-eight). A stray word of a placeholder with a blank (`-A <proj ID>`) is not."""
    name = option.written.split("=", 1)[0]
    return option.problem in ("unknown", "unavailable") and re.fullmatch(r"--[a-z][a-z0-9-]*", name) is not None


def placeholder(directive: Directive, options=()):
    """The first placeholder in a directive's arguments (not in the comment after an unescaped '#'),
    as a match on directive.text, or None. `options` are the directive's resolved options (for the
    runs of X's in an account's or a partition's value)."""
    end = directive.cut_at - 1 if directive.cut_at else len(directive.text)
    token = hash_token(directive)
    found = PLACEHOLDER.search(directive.text, len(MAGIC), token.end() if token else end)
    return found if found is not None else _fill_run(directive, options, end)


def _fill_run(directive: Directive, options, end: int):
    """A run of X's, x's or stars in the value of --account, --partition, --qos, --reservation or
    --constraint (as resolve_options read the line: -A, --acc=, -Aproj), as a match on directive.text,
    or None."""
    for option in options:
        if option.line != directive.line or option.name not in _FILL_OPTIONS or not option.value:
            continue
        # at or after the option: -Aproj, -A proj, --account=proj
        start = directive.text.find(option.value, option.col - 1)
        if 0 <= start < end:
            found = _FILL_RUN.search(directive.text, start, min(end, start + len(option.value)))
            if found is not None:
                return found
    return None


def hash_token(directive: Directive):
    """A `##Name##` token where the directive's value begins (`-N ##Nodes##`, `--nodes=##Nodes##`):
    the match on directive.text, or None (also for a `##TODO##` comment after a value)."""
    if not directive.cut_at:
        return None
    end = directive.cut_at - 1
    before = directive.text[len(MAGIC):end].split()
    last = before[-1] if before else ""
    if not last.startswith("-") or ("=" in last and not last.endswith("=")):
        return None
    return HASH_TOKEN.match(directive.text, end)


def _lookalike_reason(line: str) -> str:
    if line[:1].isspace():
        return "an indented '#SBATCH' is an ordinary comment to Slurm"
    word = line.strip().split()[0]
    if word == "#":
        return "'# SBATCH' (with a space) is an ordinary comment to Slurm"
    misspelt = _misspelt_magic(line)
    if misspelt is not None:
        return f"'#{misspelt}' is not '#SBATCH' (misspelt); Slurm ignores the line"
    return f"'{line.strip()[:7]}' is not '#SBATCH' (case matters); Slurm ignores the line"


def known_options(spank: tuple[str, ...], release: str | None, site_options: tuple[str, ...] = ()) -> dict[str, dict]:
    """Long options accepted by sbatch of the given release, plus declared SPANK options."""
    table = option_table()["options"]
    out = {}
    for name, info in table.items():
        if release is None or release in info["releases"]:
            out[name] = info
    for plugin in spank:
        for name, arg in SPANK_OPTIONS.get(plugin, {}).items():
            out[name] = {"short": None, "arg": arg, "releases": releases(), "spank": plugin}
    for name in site_options:  # a site plugin's option: may or may not take a value
        out[name] = {"short": None, "arg": "optional", "releases": releases(), "spank": SITE}
    return out


def resolve_options(directives: list[Directive], spank: tuple[str, ...], release: str | None,
                    site_options: tuple[str, ...] = ()) -> list[Option]:
    current = known_options(spank, release, site_options)
    everywhere = known_options(tuple(SPANK_OPTIONS), None)
    shorts = {info["short"]: name for name, info in current.items() if info.get("short")}
    options: list[Option] = []
    component = 0
    # sbatch gathers the words of every #SBATCH line into one argument list before getopt reads it
    # (_opt_batch_script in src/sbatch/opt.c at slurm-22-05-0-1 and slurm-26-05-1-1), so an option that ends its line
    # takes the next line's first word as its value (`#SBATCH -p` then `#SBATCH gputest`: round 491's APEX tutorial)
    taken = False  # the first word of this directive is the value of the option that ended the one before
    for number, directive in enumerate(directives):
        tokens = directive.tokens
        i = 1 if taken else 0
        taken = False
        following = directives[number + 1].tokens if number + 1 < len(directives) else []
        # (getopt would take a next word that begins with '-' too, and lose that option: still "needs a value" here)
        spill = following[0].text if following and following[0].raw.lower() not in ("hetjob", "packjob") \
            and not following[0].text.startswith("-") else None
        # `#SBATCH hetjob` (packjob before 20.02, deprecated since) separates the components of a
        # heterogeneous job: sbatch blanks the word and the options after it are the next
        # component's (_next_line / _opt_batch_script in src/sbatch/opt.c, slurm-22-05-0-1 and
        # slurm-26-05-3-1: "hetjob" followed by a blank or the end of the line).
        if tokens and tokens[0].raw.lower() in ("hetjob", "packjob"):
            component += 1
            i = 1
        first = len(options)
        while i < len(tokens):
            tok = tokens[i]
            text = tok.text
            i += 1
            if text.startswith("--") and len(text) > 2:
                body = text[2:]
                name, eq, value = body.partition("=")
                opt = Option(None, value if eq else None, directive.line, tok.col, text)
                resolved, problem, detail = _match_long(name, current, everywhere, release)
                opt.name, opt.problem, opt.detail = resolved, problem, detail
                info = current.get(resolved) if resolved else None
                if info and not eq:
                    if info["arg"] == "required":
                        if i < len(tokens):
                            opt.value = tokens[i].text
                            i += 1
                        elif spill is not None:
                            opt.value, taken = spill, True
                        else:
                            opt.problem, opt.detail = "missing-argument", f"--{resolved} needs a value"
                elif info and eq and info["arg"] == "no":
                    opt.problem, opt.detail = "unexpected-argument", f"--{resolved} takes no value"
                options.append(opt)
            elif text.startswith("-") and len(text) > 1 and text != "--":
                j = 1
                while j < len(text):
                    letter = text[j]
                    opt = Option(None, None, directive.line, tok.col + j - 1, f"-{letter}")
                    name = shorts.get(letter)
                    if name is None:
                        opt.problem, opt.detail = "unknown", f"unknown short option '-{letter}'"
                        options.append(opt)
                        break
                    opt.name = name
                    arg = current[name]["arg"]
                    if arg == "no":
                        options.append(opt)
                        j += 1
                        continue
                    attached = text[j + 1:]
                    if attached:
                        opt.value = attached
                    elif arg == "required":
                        if i < len(tokens):
                            opt.value = tokens[i].text
                            i += 1
                        elif spill is not None:
                            opt.value, taken = spill, True
                        else:
                            opt.problem, opt.detail = "missing-argument", f"-{letter} needs a value"
                    options.append(opt)
                    break
            elif text == "--":
                # getopt_long ends the options at `--`; _opt_batch_script then stops the job with "Invalid directive
                # found in batch script" where any word follows in the component's argument list (src/sbatch/opt.c
                # at slurm-22-05-0-1 and slurm-26-05-1-1: `_set_options(argc, argv) < argc`); a `--` that ends the
                # list is read and ignored (round 539's `#SBATCH --` as the last directive)
                later = tokens[i:] + [t for d in directives[number + 1:] for t in d.tokens]
                cut = next((k for k, t in enumerate(later) if t.raw.lower() in ("hetjob", "packjob")), len(later))
                if cut:
                    options.append(Option(None, text, directive.line, tok.col, text, "stray",
                                          f"'--' ends sbatch's options: sbatch stops with 'Invalid directive found "
                                          f"in batch script: {later[0].text}'"))
                break
            else:
                options.append(Option(None, text, directive.line, tok.col, text, "stray",
                                      f"'{text}' is not an option; sbatch rejects or ignores it"))
        for option in options[first:]:
            option.component = component
    return _first_problem_per_line(options)


def _first_problem_per_line(options: list[Option]) -> list[Option]:
    """A stray word after a bad option on the same line (the '3' of an unknown '-Z 3') is a
    consequence of it, not a second defect: one finding for the line."""
    out, bad_lines = [], set()
    for option in options:
        if option.problem == "stray" and option.line in bad_lines:
            continue
        if option.problem:
            bad_lines.add(option.line)
        out.append(option)
    return out


def _match_long(name: str, current: dict, everywhere: dict, release: str | None):
    """getopt_long matching: exact name, else a unique prefix, else ambiguous or unknown."""
    if name in current:
        return name, None, ""
    prefixed = sorted(n for n in current if n.startswith(name)) if name else []
    if len(prefixed) == 1:
        return prefixed[0], "abbreviated", f"'--{name}' is an abbreviation of '--{prefixed[0]}'"
    if len(prefixed) > 1:
        shown = ", ".join("--" + n for n in prefixed[:4])
        return None, "ambiguous", f"'--{name}' is ambiguous ({shown}); sbatch rejects it"
    if name in everywhere:
        info = everywhere[name]
        if info.get("spank"):
            return None, "spank", (f"'--{name}' comes from the {info['spank']} SPANK plugin, "
                                   f"which this script does not declare")
        where = ", ".join(info["releases"])
        return None, "unavailable", f"'--{name}' is not available in Slurm {release} (only in {where})"
    return None, "unknown", f"unknown sbatch option '--{name}'"
