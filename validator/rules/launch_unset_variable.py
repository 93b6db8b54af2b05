"""A variable expanded but set nowhere: a SLURM_ name Slurm never sets (SLURM_NNODE), or a near-miss of a name the script sets ($NODES where NNODES is set).

Premise: Slurm sets only the variables its man pages list (validator/data/slurm_env.txt from
sbatch.1, srun.1, salloc.1 of 22.05, 23.11, 24.11, 26.05) and the few more src/common/env.c sets
without a man page naming them (SLURM_JOB_USER, SLURM_JOB_UID in setup_env(), at slurm-22-05-0-1 and
slurm-26-05-1-1: round fifty-six's judge found SLURM_JOB_USER reported); any other SLURM_ name
expands empty. The name suggested for a misspelling is one Slurm sets in a job, never one it only reads
(validator/data/slurm_env_input_only.txt: SLURM_TIMELIMIT is srun's input, set by no release).
Holds for: 22.05-26.05.
Only SLURM_ and SLURMD_ names are Slurm's output: SBATCH_*, SRUN_* and SALLOC_* are input variables
that the user or the site sets for sbatch/srun/salloc to read (sbatch.1 and srun.1, "INPUT ENVIRONMENT
VARIABLES", at slurm-22-05-0-1 and slurm-26-05-1-1), so an unset one (SRUN_ARGS, an options variable of the script's own) is no typo of
Slurm's. SLURM_TMPDIR is set for every job by the TaskProlog of the Digital Research Alliance of
Canada's and Mila's clusters (a site variable, not Slurm's: a TaskProlog that prints "export
NAME=value" adds NAME to the task's environment, _proc_stdout in src/slurmd/slurmstepd/task.c at
slurm-26-05-1-1): not reported; nor SLURM_SCRATCH, the node-local scratch folder that CU Boulder's Alpine
and Pitt CRC give each job. Nor a SLURM_SPANK_ name: sbatch puts each SPANK plugin's job-environment entry
into the job as SLURM_SPANK_<entry> (_set_spank_env in src/sbatch/sbatch.c at slurm-22-05-0-1, slurm-25-05-0-1
and slurm-26-05-1-1), an option of a plugin as SLURM_SPANK__SLURM_SPANK_OPTION_<plugin>_<option>
(_opt_env_name in src/common/plugstack.c at 22.05, src/common/spank.c at 25.05 and 26.05): pyxis's --environment on CSCS's Alps is
$SLURM_SPANK__SLURM_SPANK_OPTION_pyxis_environment (round four hundred and thirty-seven). A name is set when the
script assigns it, also as an array element (A[k]=v) or by declare/typeset/local without a value.
A near-miss is one edit away (a letter added, dropped, changed, or two swapped) with difflib ratio
0.85 or more. NAME_HET_GROUP_<n> of a known NAME, and its old name NAME_PACK_GROUP_<n>, are set in a
heterogeneous job (env_array_overwrite_het_fmt in src/common/env.c, slurm-22-05-0-1 to slurm-26-05-1-1).
In a submitter (a file that runs sbatch and has no directive sbatch reads) Slurm sets
no variable at all: a SLURM_ name there is the pipeline's own setting, left to the near-miss check.
What the repository's files that the script sources set is set (base.sourced). In the default
profile a SLURM_ name is also left to the near-miss check where the script may be given names the file
does not show: an `eval` of a program's output other than an environment hook's (`eval "$(conda
shell.bash hook)"`), a file it sources through a variable (`. $sizefile`), or a file of its own repository that
it sources and that is not there to read; and
there a near-miss of an array element (`${MODELS[$CODE]}`) is not reported (round three hundred and sixty-three:
MODELS and DEFAULT_MODELS, arrays filled by a sourced `activate_models_conll2018.sh`, read as typos of MODEL and
DEFAULT_MODEL); a plain `$NNODE` for NNODES still is, but not one read before its near name is set anywhere
above (round 529's `source ./Panel_config.sh; echo $FASTQ_DIR`, FASTQC_DIR set lower down: the near name would be
empty there too, so the read is of a name of its own, which the file not there to read may set). Nor a near-miss whose own assignment the script keeps
commented out (`#TSTATE_ARGS=...`) and expands as a whole unquoted argument, not an option's value: a switch left
off, its words vanish (WESTPA's template). Nor a name whose value is assigned to its near name
(`XNATHOST=${XNAT_HOST}`: a site's variable copied into the script's own, on purpose; also through arithmetic,
`PROCS=$(( ${PROC} + ${XIO} ))`: PROCS is not yet set where PROC is read, so it is no typo of PROCS). Nor an
expansion whose value goes into a name the file reads nowhere and never exports (round four hundred and ninety-six's
NEMO job: that PROCS is never used again): empty or not, nothing the job does changes; not inside arithmetic,
where an empty value may fail the expansion (bash drops the rest of the line, dash and ksh93 stop).
In the default profile an unknown SLURM_ name is reported only where it is a misspelling of Slurm's: one edit from
a name Slurm sets or reads, or from a known site's (SLURM_TMPDIRS), or a name Slurm sets glued to a suffix
(`$SLURM_ARRAY_TASK_ID_30runs`, `$SLURM_JOB_ID_0`: the shell reads one name; `${SLURM_ARRAY_TASK_ID}_30runs` was
meant). A SLURM_ name far from all of them may be a site's own, set for every job by its prolog or submit filter
(TACC's SLURM_QUEUE, a site array wrapper's SLURM_ARRAYID: rounds 478, 537 and 542, five findings judged false; a
TaskProlog's `export NAME=value` lines reach the tasks, _proc_stdout in src/slurmd/slurmstepd/task.c): strict only.
Nor, in the default profile, a near-miss read before its near name is named anywhere (outside functions and loops):
the near name is empty there too, and a name read before the script sets anything like it is the job's input from
the submitter's environment, which sbatch passes on by default (--export=ALL, sbatch.1 at slurm-22-05-0-1 and
slurm-26-05-1-1; round 515's DATA_DIR beside DATADIR, round 542's ENSM beside RENSM, both documented as exported
by the user). A list split into an array of a near name (`LMDEFS=($MDEFS)`) is made from this one, as a copy is.
An assignment at the start of a line counts also inside a part the parser took wrongly (Shell.misparsed_lines: its
ERROR nodes, and backquotes it nests where bash does not), where Shell.text_lines would call it text.
"""
import difflib
from collections import Counter
import re
from functools import lru_cache

from validator.rules.base import (CODE_PRINTERS, LOOPS, SHELL_VARIABLES, always_runs, enclosing, in_function,
                                  is_submitter, reads_unseen, set_effect, set_names, sourced)
from validator.sbatch import DATA, one_edit

ID = "launch-unset-variable"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = ("A variable expanded but set nowhere: a SLURM_ name Slurm never sets, or a near-miss of a name the "
               "script sets (a typo): it expands to nothing.")
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -eo pipefail\nNNODES=$SLURM_NNODES\n"
                      "echo \"nodes: $NNODES of $SLURM_JOB_NUM_NODES\"\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\nset -eo pipefail\nNNODES=$SLURM_NNODE\n"
                     "echo \"nodes: $NODES\"\n"}

_SLURM = re.compile(r"^SLURMD?_")
# set by sites' job prologs for every job, not by Slurm
# SLURM_SCRATCH: the job's node-local scratch folder on CU Boulder's Alpine (its Research Computing
# documentation: "This job specific directory is available within jobs as `$SLURM_SCRATCH`") and
# on Pitt CRC's clusters (round one hundred and twenty-three)
_SITE = frozenset({"SLURM_TMPDIR", "SLURM_SCRATCH"})


def _names(file: str) -> frozenset:
    with open(DATA / file, encoding="utf-8") as handle:
        return frozenset(line.strip() for line in handle if line.strip() and not line.startswith("#"))


@lru_cache(maxsize=1)
def slurm_variables() -> frozenset:
    return _names("slurm_env.txt")


@lru_cache(maxsize=1)
def slurm_set_variables() -> frozenset:
    """The names Slurm sets in a job: a misspelling is one of these (round four hundred and seventeen:
    `$SLURM_TIME_LIMIT` was answered "did you mean SLURM_TIMELIMIT?", a name only srun reads and no
    release sets, unset in the job too)."""
    return slurm_variables() - _names("slurm_env_input_only.txt")


def _tested(node) -> bool:
    """Inside `[ -z "$X" ]` / `[[ -n $X ]]`, or compared with the empty string (`[ "$X" != "" ]`,
    `[[ $X == '' ]]`, `[ "x$X" = "x" ]`): the script asks whether it is set. Round two hundred and
    forty-four: `if [ "$SLURM_JOBTMP" != "" ]; then export XDG_RUNTIME_DIR=$SLURM_JOBTMP; fi`, a site's
    per-job folder used only where the site sets it. A tested SLURM_ name close to one of Slurm's
    (`[ -z "$SLURM_NTASK" ]`) is still a misspelling: the test's answer never changes."""
    expansion = node
    while node is not None and node.type not in ("command", "program"):
        if node.type == "unary_expression":
            return True
        if node.type == "binary_expression" and _compared_with_empty(node, expansion):
            return True
        node = node.parent
    return False


def _compared_with_empty(node, expansion) -> bool:
    """`A = B`, `A == B` or `A != B` where A without the expansion is B (both unquoted): equal exactly
    when the variable is empty."""
    operator = node.child_by_field_name("operator")
    operands = [c for c in node.children if c.is_named and c != operator]
    if operator is None or operator.text not in (b"=", b"==", b"!=") or len(operands) != 2:
        return False
    for side, other in (operands, operands[::-1]):
        if side.start_byte <= expansion.start_byte and expansion.end_byte <= side.end_byte:
            rest = side.text[:expansion.start_byte - side.start_byte] + side.text[expansion.end_byte - side.start_byte:]
            return _unquoted(rest) == _unquoted(other.text)
    return False


def _unquoted(word: bytes) -> bytes:
    """The word without its outer quotes (`"x"` and `x` compare equal; `'""'` stays two characters)."""
    return word[1:-1] if len(word) >= 2 and word[:1] in (b'"', b"'") and word[-1:] == word[:1] else word


def _one_edit_index(names) -> dict[str, set[str]]:
    """Each name under itself and under every way of dropping one character: two names one edit
    apart (a letter added, dropped, changed or two swapped) share a key. Looking a name up here
    costs its length, not the number of names (difflib over all of them made this rule quadratic)."""
    index: dict[str, set[str]] = {}
    for name in names:
        for key in _one_deletion(name):
            index.setdefault(key, set()).add(name)
    return index


def _one_deletion(name: str):
    yield name
    for i in range(len(name)):
        yield name[:i] + name[i + 1:]


def _near_miss(name: str, index: dict[str, set[str]], other_than: str | None = None, n: int = 1) -> list[str]:
    candidates = sorted(found for found in {found for key in _one_deletion(name) for found in index.get(key, ())}
                        if one_edit(name, found) and found != other_than)
    return difflib.get_close_matches(name, candidates, n=n, cutoff=0.85)


# In a heterogeneous job slurmctld also sets every component's value as NAME_HET_GROUP_<n>, and under the old
# name NAME_PACK_GROUP_<n> beside it ("Continue support for old hetjob terminology": env_array_overwrite_het_fmt()
# in src/common/env.c sets "%s_PACK_GROUP_%d" and "%s_HET_GROUP_%d" at slurm-22-05-0-1, slurm-25-05-1-1 and
# slurm-26-05-1-1; round 469's buildstockbatch job reads SLURM_JOB_NODELIST_PACK_GROUP_0 and _1)
_HET_GROUP = re.compile(r"_(?:HET|PACK)_GROUP_[0-9]{1,4}$")


# `NAME=...` at the start of a line, read from the text: a line the parser could not take whole (a
# template token in a subscript, `env_id=${env_ids[$SLURM_ARRAY_TASK_ID / {{len_seeds}}]}`, round
# fifty-seven) still sets NAME when the file is rendered and run.
_WRITTEN = re.compile(r"^\s*(?:(?:export|local|readonly|declare|typeset)(?:\s+-\w+)*\s+)?([A-Za-z_]\w*)(?:\[[^\]]*\])?\+?=")


# `#TSTATE_ARGS="--tstate-file ..."`: an assignment the author commented out, a switch left off (WESTPA's init
# template beside BSTATE_ARGS, round 475): where its name is expanded unquoted (optional words that vanish when
# empty), the empty expansion is what the author chose. A quoted one passes an empty word: still reported.
_SWITCHED_OFF = re.compile(r"^[ \t]*#+[ \t]*(?:export[ \t]+)?([A-Za-z_]\w*)=", re.M)  # [ \t]: one line (linear)


# `eval "$(PROGRAM ...)"`, `eval $(PROGRAM ...)`: the program's output is the code (`command`/`builtin` skipped)
_EVAL_OUTPUT = re.compile(r"^[\"']?\$\(\s*(?:(?:command|builtin|env)\s+)?([\w./-]+)")


# Nodes between an expansion and the assignment that takes its value: a string, words joined, arithmetic
_VALUE_PARTS = ("string", "concatenation", "arithmetic_expansion", "binary_expression", "unary_expression",
                "parenthesized_expression", "ternary_expression", "array")


def _assigned_to(node) -> str | None:
    """The name a plain assignment gives this expansion to (`XNATHOST=${XNAT_HOST}`, `PROCS=$(( ${PROC} + 1 ))`),
    or None."""
    parent = node.parent
    while parent is not None and parent.type in _VALUE_PARTS:
        parent = parent.parent
    name = parent.child_by_field_name("name") if parent is not None and parent.type == "variable_assignment" else None
    return name.text.decode("utf-8", "replace") if name is not None else None


def _never_read(target, text: str, name: str, cache: dict) -> bool:
    """`name` appears in the file only in its own assignments, none exported, and nothing else can read it: no `set -u`
    (bash stops at the unset expansion itself), no `set -a`, no indirect read (`${!v}`, eval, a sourced file), and
    not a name the job's environment may already hold (an inherited variable is exported: PATH, LD_LIBRARY_PATH,
    CUDA_VISIBLE_DEVICES, OMP_NUM_THREADS, ...) (round 496's NEMO job: `PROCS=$(( ${PROC} + ${XIO} ))` from two
    unset names, PROCS never used again). The file's words are counted once per script, each name judged once."""
    if name not in cache:
        shell = target.script.shell
        words = shell.once("unset-variable words", lambda: Counter(re.findall(r"(?<!\w)[A-Za-z_]\w*", text)))
        assigned = shell.assigned(name)
        cache[name] = bool(assigned) and words[name] == len(assigned) and not any(a.exported for a in assigned) \
            and name not in SHELL_VARIABLES and not _ENVIRONMENT.search(name) \
            and shell.once("unset-variable closed world", lambda: _closed_world(target, text))
    return cache[name]


# Names a job's environment commonly holds already (inherited, so exported: an assignment reaches every program)
_ENVIRONMENT = re.compile(r"^(LD_|CUDA_|OMP_|MKL_|KMP_|NCCL_|SLURM_|SBATCH_|SRUN_|I_MPI_|UCX_|FI_|PMIX_|MPI|OPENBLAS_|"
                          r"PYTHON|CONDA|LC_|HF_|TORCH|WANDB_|XDG_|TF_|XLA_|JAX_|NVIDIA_|ROCR_|HIP_|GPU_|OMPI_)|PATH$")


def _closed_world(target, text: str) -> bool:
    """Nothing in the script reads names it does not spell out (base.reads_unseen), and no nounset (bash stops at the
    unset expansion itself)."""
    script = target.script
    flags = set(script.interpreter_flags)
    for command in script.shell.named("set"):
        flags |= set_effect(command).on  # letters and -o nounset included
    return "u" not in flags and not reads_unseen(script)


def _in_arithmetic(node) -> bool:
    """Inside `$(( ))`: empty there, the expansion may fail, read or not (bash 5.2: `$(( + ))` is "operand expected"
    and bash drops the rest of the line; dash and ksh93 (`4 * ${X}`) stop the script; a review's probes)."""
    parent = node.parent
    while parent is not None and parent.type in _VALUE_PARTS:
        if parent.type == "arithmetic_expansion":
            return True
        parent = parent.parent
    return False


def _set_before(shell, name: str, node) -> bool:
    """The script assigns `name` above this expansion wherever it runs (`STEPS=100; STEPS=$(( $STEP + 50 ))`: STEP
    may mean it); not in a branch (`then` and `else` arms never both run: a review's probe)."""
    return any(a.node is not None and a.node.end_byte <= node.start_byte and always_runs(a.node)
               for a in shell.assigned(name))


def _vanishes(node) -> bool:
    """The expansion is a whole argument of its command, unquoted, and not an option's value (`--epochs $N` would
    hand --epochs the next word): empty, it adds no word and takes none away (`$WORK_DIR/*` is `/*`)."""
    parent = node.parent
    if parent is None or parent.type != "command" or node.type != "simple_expansion" and node.type != "expansion":
        return False
    before = node.prev_named_sibling
    text = before.text.decode("utf-8", "replace") if before is not None else ""
    return not (before is not None and before.type == "word" and text.startswith("-") and "=" not in text)


def _read_before_near_names(target, shell, expansion, close: list, set_by_script: set) -> bool:
    """The expansion runs, as written, before any of its near names appears in the file: it stands outside
    functions and loops (which may run it later, or again), and the first line naming each near name, in any way
    (an assignment, `for`, `read`, `printf -v`, `(( ))`, `${X:=...}`, a read of it), lies below it; and the script
    itself sets each near name (one a readable sourced file sets may be set above it). The near name would then be
    empty there too, so the read is of a name of its own: the job's input, or a sourced file's (a review's probes:
    every way of setting a name counts)."""
    if in_function(expansion.node) or enclosing(expansion.node, LOOPS) is not None:
        return False
    first_named = shell.once("first line naming each word", lambda: _first_lines(target.script.parsed.lines))
    return all(near in set_by_script and first_named.get(near, 0) > expansion.line for near in close)


def _first_lines(lines: list[str]) -> dict:
    """Each word of the script's lines that are no comment -> the first line (1-based) that names it; read once."""
    found: dict = {}
    for number, line in enumerate(lines, start=1):
        if line.lstrip().startswith("#"):
            continue
        for word in re.findall(r"[A-Za-z_]\w*", line):
            found.setdefault(word, number)
    return found



def _glued(name: str) -> str | None:
    """The longest name Slurm sets that this one starts with followed by `_` (`$SLURM_JOB_ID_0`,
    `$SLURM_ARRAY_TASK_ID_30runs`: the shell reads the suffix as part of the name; `${SLURM_JOB_ID}_0` was meant), or
    None."""
    parts = name.split("_")
    for end in range(len(parts) - 1, 1, -1):
        head = "_".join(parts[:end])
        if head in slurm_set_variables():
            return head
    return None


# A rank or size word of torch or MPI in a SLURM_ name (SLURM_LOCAL_RANK, SLURM_WORLD_SIZE, SLURM_NODE_RANK): a name
# the author believed Slurm sets (its own are SLURM_LOCALID, SLURM_NTASKS, SLURM_NODEID), no site's
_RANK_WORDS = re.compile(r"(?:^|_)(?:RANK|WORLD|WORLD_SIZE|NUM_GPUS|GPUS_PER_PROC)(?:_|$)")


def _near_slurm_name(name: str) -> bool:
    """One edit from a name Slurm sets or reads (`SLURM_TIME_LIMIT`, one `_` from srun's input SLURM_TIMELIMIT), or
    from a site's that is known (`SLURM_TMPDIRS`): a misspelling. A SLURM_ name far from all of them may be a site's
    own (TACC sets SLURM_QUEUE in its jobs, a site's array wrapper SLURM_ARRAYID: rounds 478, 537 and 542, five
    findings judged false)."""
    return any(one_edit(name, known) for known in difflib.get_close_matches(name, slurm_variables() | _SITE, n=3,
                                                                            cutoff=0.85))


def _unseen_setters(target, unread_own) -> bool:
    """Names the script may be given where the file does not show them: an `eval` of a program's output
    (not a CODE_PRINTER's, which sets only its own: `eval "$(conda shell.bash hook)"`), a file sourced through a
    variable, or a file of its own repository that it sources and that is not there to read (`unread_own`, from
    base.sourced). Round one hundred and eighty-eight: a CI submitter whose SLURM_TIME_LIMIT comes from
    `eval "$(python3 - <<'PY' ...)"` and whose SLURM_JOB_RC comes from a function of a sourced helper."""
    for command in target.script.shell.named("eval"):
        found = _EVAL_OUTPUT.match(command.args[0].raw) if command.args else None
        if found and found.group(1).rsplit("/", 1)[-1] not in CODE_PRINTERS:
            return True
    # `. $sizefile`: a file named by a variable, which no reader can open (round 489's HiCMA experiments fill their
    # arrays from it), may set any name
    if any(c.args and "$" in c.args[0].raw for c in target.script.shell.named("source", ".")):
        return True
    return bool(unread_own)


def check(target):
    shell = target.script.shell
    # heredocs and strings over several lines: text the script writes, not its code; not a part the parser took wrongly
    text = shell.text_lines() - shell.misparsed_lines()
    brought_in = sourced(target)  # the repository's files it sources: what they set is set here
    set_here = set_names(shell) | {m.group(1) for number, line in enumerate(target.script.parsed.lines, start=1)
                                     if number not in text and (m := _WRITTEN.match(line))}
    # names the job's --export passes (`--export=ALL,BULK,LOCS` from the submitter's environment, `NAME=value` as
    # given: sbatch.1, --export; round 539's bulk_gen_ukko.sh) are set in the job
    for option in target.script.parsed.get("export"):
        set_here |= {item.split("=", 1)[0] for item in (option.value or "").split(",")
                     if item.split("=", 1)[0].isidentifier() and item.upper() not in ("ALL", "NONE", "NIL")}
    set_by_script = set(set_here)  # the names the script itself sets (not a sourced file of the repository)
    for other in brought_in.shells:
        set_here |= set_names(other)
    unseen = not target.strict and _unseen_setters(target, brought_in.unread_own)
    index = _one_edit_index(set_here)
    known = slurm_variables()
    tested = {e.name for e in shell.expansions if _tested(e.node)}  # the script asks whether they are set
    reported: set = set()
    whole = "\n".join(target.script.parsed.lines)
    unread: dict = {}  # name -> whether nothing reads it (_never_read), judged once
    switched_off = set(_SWITCHED_OFF.findall(whole))
    # a submitter's shell runs outside any job: a SLURM_ name there is its own setting, not Slurm's
    submitter = is_submitter(target.script)
    for expansion in shell.expansions:
        name = expansion.name
        if name in set_here or name in reported or name in SHELL_VARIABLES or not name.isidentifier():
            continue
        text = expansion.node.text.decode("utf-8", "replace")
        if re.match(r"^\$\{\w+:?[-=?+]", text):  # a default or a check: unset is handled
            continue
        receiver = _assigned_to(expansion.node)
        if receiver is not None and not _in_arithmetic(expansion.node) and _never_read(target, whole, receiver, unread):
            continue  # its value goes into a name nothing reads: empty or not, nothing changes
        if _SLURM.match(name):
            if name in known or name in _SITE or _HET_GROUP.sub("", name) in known or submitter or unseen \
                    or name.startswith("SLURM_SPANK_"):
                continue
            close = difflib.get_close_matches(name, slurm_set_variables(), n=1, cutoff=0.85)
            if name in tested and not close:
                continue  # a site's variable, used where the site sets it (the script checks); a misspelling is not
            glued = _glued(name)
            if not close and not glued and not target.strict and not _near_slurm_name(_HET_GROUP.sub("", name)) \
                    and not _RANK_WORDS.search(name):
                reported.add(name)  # the same answer for every read of it: looked up once
                continue  # far from every Slurm name: a site's own (TACC's SLURM_QUEUE), left to the strict profile
            hint = f"; did you mean ${{{glued}}}{name[len(glued):]}?" if glued else f"; did you mean {close[0]}?" \
                if close else ""
            reported.add(name)
            yield (target.script.display, expansion.line, expansion.col,
                   f"${name}: Slurm sets no such variable and the script does not either{hint}")
            continue
        if unseen and text.startswith("${") and "[" in text:
            continue  # an array a sourced file not there to read (or an eval of a program's output) may fill
        close = _near_miss(name, index)
        if close and name in switched_off and _vanishes(expansion.node):
            continue  # `#TSTATE_ARGS=...` then `w_init $BSTATE_ARGS $TSTATE_ARGS`: the switch is off
        if close and receiver in close and not _set_before(shell, receiver, expansion.node):
            # `XNATHOST=${XNAT_HOST}`: the near name is made from this one, on purpose (round 490's DAX); another
            # near name may still be the one meant (`NPROC=64; PROCS=$(( ${NPROCS} + 4 ))`)
            close = _near_miss(name, index, other_than=receiver)
            if not close:
                continue
        if close and not target.strict and _read_before_near_names(target, shell, expansion,
                                                                   _near_miss(name, index, n=8), set_by_script):
            # read before its near name is named anywhere, where a file not there to read may set names (round
            # 529's `source ./Panel_config.sh` then `echo $FASTQ_DIR`, FASTQC_DIR set below): a name of its own
            reported.add(name)
            continue
        reported.add(name)  # said once per name; a name close to none is looked up once too
        if close and close[0].lower() != name.lower():
            assigned = shell.assigned(close[0])
            where = assigned[0].line if assigned else None
            at = f" (set on line {where})" if where else ""
            yield (target.script.display, expansion.line, expansion.col,
                   f"${name} is set nowhere in the script; did you mean {close[0]}{at}? It expands to nothing")
