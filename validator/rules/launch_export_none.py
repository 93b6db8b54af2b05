"""--export=NONE is inherited by every srun step, which then starts without PATH; set SLURM_EXPORT_ENV=ALL or pass srun --export.

Premise: sbatch --export=NONE sets SLURM_EXPORT_ENV=NONE in the job (src/sbatch/opt.c at slurm-22-05-0-1 and
slurm-26-05-1-1) and srun reads SLURM_EXPORT_ENV as its --export (env_vars in src/srun/libsrun/opt.c at
slurm-22-05-0-1, src/srun/opt.c at slurm-26-05-1-1): every step starts without PATH. Holds for: 22.05-26.05. Not
where the script sets SRUN_EXPORT_ENV (which srun reads over SLURM_EXPORT_ENV) or SLURM_EXPORT_ENV to ALL, or
unsets SLURM_EXPORT_ENV above its steps. A script that starts no step (no srun, no MPI launcher, which
bootstraps its ranks through srun under Slurm, no other script or program it hands the job to) runs only in the
batch shell, which keeps its environment: nothing to report. In a script nobody here wrote (the default profile)
only a step the file shows counts (_SHOWN_STARTERS: srun, an MPI launcher, DeepSpeed told to launch through
MPI), not a script or program it hands over to; not a job that loads LRZ's `slurm_setup` module (LRZ's job
templates pair it with --export=NONE and --get-user-env; the module is not readable here, so whether it sets
SLURM_EXPORT_ENV for the steps is not known: judged false six times, rounds 481-542; the strict profile keeps the
finding); and not an MPI launcher alone where the job loads a Hydra MPI
(Intel MPI, MPICH, MVAPICH2: _hydra_mpi; or sets Intel MPI's I_MPI_ variables), whose ranks get the launcher's
environment from their proxies.
"""
import re

from validator.model import OTHER_SHELLS, POSIX_SHELLS
from validator.rules.base import GOOD_BATCH, MPI_LAUNCHERS, always_runs, bad_batch, in_function, set_effect
from validator.rules.srun import step_program
from validator.shell import WRAPPERS

ID = "launch-export-none"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = '--export=NONE is inherited by every srun step, which then starts without PATH; set SLURM_EXPORT_ENV=ALL or pass srun --export.'
GOOD = {"run.sbatch": GOOD_BATCH}
BAD = bad_batch("export SLURM_EXPORT_ENV=ALL\n", "")


# Programs that start Slurm steps themselves (MPI launchers bootstrap through srun; job launchers)
_STEP_STARTERS = MPI_LAUNCHERS | {"charmrun", "torchrun", "deepspeed", "accelerate", "ray", "salloc", "sbatch"}
# Commands of the batch shell that start nothing: shell builtins and file/text tools.
_SHELL_ONLY = {"module", "ml", "source", ".", "cd", "echo", "printf", "export", "set", "unset", "sed", "awk",
               "grep", "cat", "mkdir", "rm", "cp", "mv", "ln", "ls", "touch", "date", "hostname", "sleep",
               "exit", "return", "test", "[", "[[", "true", "false", "pwd", "tee", "head", "tail", "wc", "sort",
               "uniq", "cut", "tr", "find", "xargs", "basename", "dirname", "readlink", "realpath", "chmod",
               "ulimit", "umask", "trap", "wait", "read", "local", "declare", "eval", "env", "printenv", "which",
               "conda", "mamba", "micromamba", "tar", "gzip", "gunzip", "nvidia-smi", "scontrol", "squeue",
               "sacct", "sinfo", "python", "python3", "singularity", "apptainer", "curl", "wget", "git", "time"}


# What starts a Slurm step that the file itself shows: srun, an MPI launcher (it bootstraps its
# ranks through srun under Slurm, see the module docstring), charmrun through mpiexec, and DeepSpeed's
# launcher told to use an MPI launcher (--launcher openmpi, mpich, impi or mvapich: each runner runs
# mpirun; its default, pdsh, reaches the nodes by pdsh, and --launcher slurm runs srun with
# --export=ALL, which --export=NONE does not reach: deepspeed/launcher/runner.py and
# multinode_runner.py at v0.19.5).
_SHOWN_STARTERS = MPI_LAUNCHERS | {"charmrun", "srun"}
_DEEPSPEED_MPI_LAUNCHERS = {"openmpi", "mpich", "impi", "mvapich"}


def _shown_starter(shell, command) -> bool:
    """The command starts a step the file shows, also through a variable the script sets to srun or an
    MPI launcher (`SRUN="srun --mpi=pmix"; $SRUN app`)."""
    name = command.name.rsplit("/", 1)[-1]
    if name in _SHOWN_STARTERS:
        return True
    if name == "deepspeed":
        launcher = command.option("--launcher")
        return launcher is not None and (launcher.value or "").lower() in _DEEPSPEED_MPI_LAUNCHERS
    match = re.fullmatch(r"\$\{?(\w{1,128})\}?", command.name)
    if match is None:
        return False
    firsts = [a.value.split()[0] for a in shell.assigned(match.group(1)) if a.value and a.value.split()]
    return any(first.rsplit("/", 1)[-1] in _SHOWN_STARTERS for first in firsts)


# The MPI of a module the job loads: Intel MPI (a whole intel toolchain, impi, intel-mpi), MPICH or MVAPICH2, whose
# launcher is Hydra's mpiexec; Open MPI's is another
_HYDRA_MODULE = re.compile(r"(?i)^(intel|iimpi|impi|intel-?mpi|intel-oneapi-mpi|mpich|mvapich2?|cray-mpich)([/-]|$)")
_OPEN_MPI_MODULE = re.compile(r"(?i)^(openmpi|open-mpi|ompi|foss|gompi|hpcx)([/-]|$)")


def _hydra_mpi(shell) -> bool:
    """The job's only steps are an MPI launcher's, and the MPI it loads is Hydra's (Intel MPI, MPICH, MVAPICH2) and
    no Open MPI: Hydra starts its proxy on each node through srun by the proxy's full path and hands each proxy the
    launcher's own environment for the ranks (the slurm bootstrap, HYDT_bscd_slurm_launch_procs in
    src/pm/hydra/lib/tools/bootstrap/external/slurm_launch.c of pmodels/mpich at 0164c54: srun -N n -n n --input none
    and the proxy's arguments; mpiexec's own help for -genvall says "All of the ENV is passed to each process
    (default)", in the Hydra option parser of the pmodels/mpich versions the search index holds; the current
    parser's text was not read), so --export=NONE leaves the ranks their PATH. TAMU's
    templates (`--export=NONE`, `--get-user-env=L`, `ml intel/2019a`, `mpirun ...`: round 463, two findings judged
    false) run so. Open MPI's launcher starts its own daemons, a path not read here: still reported."""
    return _hydra_loaded(shell) and not any(_OPEN_MPI_MODULE.match(m) for m in _loaded_modules(shell))


def _loaded_modules(shell) -> list[str]:
    """The module names the job's `module`/`ml` commands name (their subcommands and flags left out)."""
    return [(a.value or "") for c in shell.commands if c.name in ("module", "ml")
            for a in c.args if a.value and a.value not in ("load", "add", "purge", "swap", "use", "--force", "-f")]


def _hydra_loaded(shell) -> bool:
    """The job loads a Hydra MPI, or sets Intel MPI's own settings (`export I_MPI_PIN_DOMAIN=...`: round 484's
    DisCoTec runs), Open MPI beside it or not: its mpiexec may start its proxies through srun even on one node."""
    return any(a.name.startswith("I_MPI_") for a in shell.assignments) \
        or any(_HYDRA_MODULE.match(m) for m in _loaded_modules(shell))


def _may_start_steps(shell, strict: bool = True, one_node: bool = False) -> bool:
    """Our presets (strict): an MPI or job launcher, another script, or any program or function that
    is not shell-only work (./run.sh, $EXE, a sourced library's function) may start srun steps;
    shell-only work may not. A script nobody here wrote (the default profile): only a step starter the
    file shows (round twenty-six: `bcftools view` alone judged false; round sixty-seven: `bash
    carla/CarlaUE4.sh &` and a script running torch.distributed.launch judged false; no true finding of
    any read round rested on a script or program the job hands over to). Nor, there, an Open MPI launcher alone in a
    job of one node (`one_node`): its mpirun finds only its own node in the allocation and starts no daemon, so no
    srun ("only HNP in use", "no new daemons required": orte_plm_base_setup_virtual_machine in
    orte/mca/plm/base/plm_base_launch_support.c of open-mpi/ompi at 01e9aca, ORTE of the v4 line; Open MPI 5's PRRTE
    prints the same messages, but its source was not read here): the ranks are mpirun's children, with the batch
    shell's environment (rounds 481, 519 and 536: one-node mpirun jobs under --export=NONE, judged false)."""
    if not strict:
        shown = [c for c in shell.commands if _shown_starter(shell, c)]
        if shown and all(c.name.rsplit("/", 1)[-1] in MPI_LAUNCHERS for c in shown) \
                and (_hydra_mpi(shell) or one_node and not _hydra_loaded(shell)):
            return False
        return bool(shown)
    for command in shell.commands:
        name = command.name.rsplit("/", 1)[-1]
        if name in _STEP_STARTERS:
            return True
        if _runs_a_script(command):
            return True  # another script: it may srun
        if name in _SHELL_ONLY or name in ("bash", "sh") or "$" in name[1:]:
            continue  # shell-only work (or a word the parser could not make a command of)
        return True  # a program or a function of a sourced library (job-lib's smoke_stage): it may srun
    return False


# A compiled program named by its path: slurmstepd execs it without searching PATH (src/slurmd/slurmstepd/
# task.c _build_path returns a name that starts with '/' or '.' as it is and searches PATH only for the
# others, slurm-22-05-0-1 and slurm-26-05-1-1). A script (`./run.sh`) runs further programs, found
# through the PATH the step lacks.
_SCRIPT_SUFFIX = (".sh", ".bash", ".csh", ".tcsh", ".ksh", ".zsh", ".py", ".pl", ".R", ".jl")


def _runs_by_path(srun, shell) -> bool:
    """The step execs a compiled program by its path: not a shell or a wrapper named by its path
    (`/usr/bin/env python`, `/usr/bin/time gmx`, `/bin/bash -c ...`: what they run is searched in PATH),
    not a script."""
    program = step_program(srun, shell)
    value = program.value if program is not None else None
    return (bool(value) and value.startswith(("/", "./", "../")) and not value.endswith(_SCRIPT_SUFFIX)
            and value.rsplit("/", 1)[-1] not in WRAPPERS | POSIX_SHELLS | OTHER_SHELLS)


def _other_starters(shell) -> bool:
    """A step starter besides srun that the file shows (mpirun, $MPIRUN): steps the srun words do not show."""
    return any(c.name.rsplit("/", 1)[-1] != "srun" and _shown_starter(shell, c) for c in shell.commands)


def _runs_a_script(command) -> bool:
    """`bash run.sh`, `sh ./stage.sh`: bash or sh given a script (a word that is no option)."""
    return command.name.rsplit("/", 1)[-1] in ("bash", "sh") and any(not (a.value or a.raw).startswith("-")
                                                                      for a in command.args)


def _steps_export_all(shell) -> bool:
    """The script gives srun --export=ALL through the environment: SRUN_EXPORT_ENV where it sets it to a
    literal (srun reads it over SLURM_EXPORT_ENV: the env_vars table of src/srun/libsrun/opt.c at
    slurm-22-05-0-1 and of src/srun/opt.c at slurm-26-05-1-1, and srun.1's "will override any setting for
    SLURM_EXPORT_ENV"), else SLURM_EXPORT_ENV. A Ray launcher writes `export SRUN_EXPORT_ENV="ALL,PATH=$PATH"`:
    the raw word counts, ALL as the list's first item; a value that is only an expansion is not known."""
    allexport = any("a" in set_effect(c).on for c in shell.named("set"))  # `set -a`, `set -o allexport`
    for name in ("SRUN_EXPORT_ENV", "SLURM_EXPORT_ENV"):
        assigned = [a for a in shell.assignments if a.name == name]
        # SLURM_EXPORT_ENV is in the job's environment already (sbatch sets it); SRUN_EXPORT_ENV reaches srun
        # only exported: `export NAME[=...]`, `declare -x`, `typeset -x` (the parser marks each; a bare
        # `export NAME` is an assignment with no value), or every assignment under `set -a`
        exported = name == "SLURM_EXPORT_ENV" or any(a.exported for a in assigned) or allexport
        values = [a.raw.strip("\"'") for a in assigned if a.raw.strip("\"'")] if exported else []
        if any(_ALL.match(v) for v in values):
            return True
        if any(v and not v.startswith("$") for v in values):
            return False  # a list without ALL, or NONE: what srun reads
    return False


_ALL = re.compile(r"(?i)ALL(?:,|$)")


def _unset_before_steps(shell) -> bool:
    """`unset SLURM_EXPORT_ENV` right after the directives (the `--export=NONE` template of several centres:
    a clean batch shell, and steps that inherit it): srun finds no SLURM_EXPORT_ENV to read and exports its
    whole environment, its default (srun.1 at slurm-26-05-1-1, --export=ALL: "Default mode if --export is not
    specified"; env_vars of src/srun/opt.c there reads the variable only where it is set). Only an unset that
    always runs (the script's top level) above every step starter the file shows, none of them in a function, with
    no SLURM_EXPORT_ENV assigned after it and no SRUN_EXPORT_ENV at all."""
    unsets = [line for name, line, _, node in shell.unsets if name == "SLURM_EXPORT_ENV" and always_runs(node.parent)]
    if not unsets or any(a.name == "SRUN_EXPORT_ENV" for a in shell.assignments):
        return False  # SRUN_EXPORT_ENV is read over SLURM_EXPORT_ENV (env_vars in src/srun/opt.c)
    first = min(unsets)
    starters = [c for c in shell.commands if _shown_starter(shell, c)]
    assigned = [a.line for a in shell.assignments if a.name == "SLURM_EXPORT_ENV"]
    # a step in a function may be called before the unset: only steps of the batch shell's own code count
    return all(c.line > first and not in_function(c.node) for c in starters) and all(line < first for line in assigned)


def check(target):
    script = target.script
    export = script.parsed.value("export")
    if export is None or export.split(",")[0].upper() not in ("NONE", "NIL"):
        return
    shell = script.shell
    if _steps_export_all(shell) or _unset_before_steps(shell):
        return
    if not target.strict and "slurm_setup" in _loaded_modules(shell):
        return  # LRZ's site module after --export=NONE and --get-user-env: what it sets for the steps is not shown here
    sruns = shell.named("srun")
    if sruns and all(c.has_flag("--export") for c in sruns):
        return
    nodes = (script.parsed.value("nodes") or "").strip()
    if not sruns and not _may_start_steps(shell, target.strict, one_node=nodes in ("1", "1-1")):
        return
    if not target.strict and sruns and not _other_starters(shell) \
            and all(c.has_flag("--export") or _runs_by_path(c, shell) for c in sruns):
        return  # every step execs a program by its path (`srun ./mitgcmuv`): no PATH search to fail
    option = script.parsed.get("export")[-1]
    yield (script.display, option.line, option.col,
           "--export=NONE reaches every srun step (no PATH: 'execve(): No such file'); "
           "add 'export SLURM_EXPORT_ENV=ALL' after the directives")
