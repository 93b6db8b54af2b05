"""srun without --kill-on-bad-exit: when one task dies the others hold the nodes until a timeout or the time limit.

Premise: when a task of a step exits non-zero, srun lets the others run on unless --kill-on-bad-exit
(-K) is set or slurm.conf says KillOnBadExit=1 (_kill_on_bad_exit(): the option, else the cluster's
setting; src/plugins/launch/slurm/launch_slurm.c at slurm-22-05-0-1, src/srun/launch.c at
slurm-26-05-1-1). srun reads the option from SLURM_KILL_BAD_EXIT too (env_vars in
src/srun/libsrun/opt.c at slurm-22-05-0-1, src/srun/opt.c at slurm-26-05-1-1; srun.1), not from
SLURM_KILL_ON_BAD_EXIT, which does nothing and is reported. Tasks of a distributed program then
block in their next collective, holding every node of the step, until their program's own timeout ends
them or, where it has none, until the time limit. PyTorch's NCCL process group aborts a rank whose
collective waited longer than the group's timeout: 10 minutes by default (kProcessGroupNCCLDefaultTimeout in
torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp of torch 2.13.0, as installed here; set so by pytorch#110947 and,
for init_process_group, #113094, both landed in October-November 2023, after 2.1's release; 30 minutes before),
the process torn down (`getCvarInt(TORCH_NCCL_ASYNC_ERROR_HANDLING, 3 /*SkipCleanUp*/)` in ProcessGroupNCCL.cpp:
pytorch#110723), and often set longer by the program (Megatron's --distributed-timeout-minutes, accelerate's
ddp_timeout of 1800 s). MPI ranks,
nccl-tests and a rank blocked outside a collective have no such timeout. -K ends the step when the first
task fails. The message names both ends (rounds 434, 436 and 437: judges found "until the time limit"
false for torchtitan, Megatron and accelerate steps, whose survivors abort within minutes).
Holds for: every release the validator knows (22.05-26.05). It is a defect only where tasks wait for
each other: a step of one task (-n1, --ntasks=1, -N1 in a job of one task per node, a job of one
task, --ntasks=$SLURM_JOB_NUM_NODES in a job of one node, --ntasks-per-node=1 without --nodes and
--ntasks: without -N sbatch allocates "enough nodes to satisfy the requested resources as expressed
by per-job specification options" (sbatch.1, --nodes, at slurm-22-05-0-1 and slurm-26-05-1-1), one
node here, unless the job takes whole nodes: then the count comes at submission) and a step whose program never talks to the other tasks (mkdir, rm, hostname, nvidia-smi, an
image pull, a package install, a cloud CLI: each task ends on its own) have nothing left hanging, in both profiles;
nor has a step whose tasks run under `timeout`, Ray's head and workers (Ray notices a lost node), or
task-farm workers (ipengine, dask-worker, HyperQueue's `hq worker`: the controller hands a dead worker's
work to the others).
Nor has a step of `torchrun --standalone` (each task its own rendezvous: run() in
torch/distributed/run.py at torch 2.13.0 sets endpoint localhost:0 and a fresh uuid as rdzv id) or of torchrun
with no --nnodes above 1 and the static rendezvous (each agent hosts its own at master_addr:master_port,
get_rdzv_endpoint in torch/distributed/run.py at pytorch/pytorch 010929fd: a world per task;
_standalone_torchrun), of Ray's per-node CLI (`ray stop`, `ray status`), of a per-node check
inside a container (`singularity exec IMG netstat`), or whose tasks each take their own shard by
task id (`--shard=$SLURM_PROCID` expanded in the step, `subpartition_number=$SLURM_PROCID`). `-n $SLURM_NTASKS` is the
job's own task count, and `--ntasks=$NNODES` one task per node. An OpenFOAM application without
-parallel is a serial program: several tasks of it are copies that never talk; so is a program the
job builds itself with a plain compiler (gcc, nvcc, gfortran) and no MPI, NCCL or RCCL library, and a
GROMACS tool other than mdrun (grompp, editconf, trjconv: one process each). Nor a node's own stress
test or health check (dcgmproftester, gpu_burn, stress-ng, thermal_test.sh, node_healthcheck.sh), nor
mpirun as the step's program (or in its `bash -c` payload): each task starts its own MPI world, which mpirun
aborts itself when a rank exits non-zero; nor `python -m mpi4py prog.py`, whose run mode calls MPI_Abort when a rank
raises (_MPI4PY_RUN). Nor a step whose tasks only check their own GPU (`python -c "import torch;
print(torch.cuda.current_device())"`: no torch.distributed; modules it only imports join nothing), nor
one a comment cut short inside its backslash continuation (the step runs without its image or program
and fails at once), nor `srun singularity exec` with no image (every task stops with a usage error), nor, in a
file that shows no sign of a distributed program, one whose program is told to cut its work into as many shares
as the step has tasks (`--nsplits 10` on 10 tasks, `--num_shards $SLURM_NTASKS`: each task takes its own) or
that runs a hello-world program (hello.py: each task prints and ends) or a --multi-prog configuration (a program
per task: a task farm).
Nor a step srun runs under timeout(1) (`timeout 30m srun ...`: srun ends the step on timeout's SIGTERM) unless the
duration is more than half the job's --time, nor a background step the script never waits for beside foreground
work (the job's end stops it), also where its kept PID is read only to `kill` it.
A step with srun --wait=N (-W N, N > 0) ends N seconds after its first task exits: nothing hangs
to the time limit (src/srun/launch.c _setup_max_wait_timer at slurm-26-05-1-1; launch_slurm.c and
libsrun/srun_job.c at slurm-22-05-0-1).
Nor a step srun refuses before any task starts: a task count that is no number (srun.refused_task_count), or more
nodes than the job's literal --nodes (`srun --nodes=8` in a job of `--nodes 2`: "Only allocated 2 nodes asked for
8", srun.exceeds_job_nodes; round 546).
An explicit --kill-on-bad-exit=0 is the author's decision (a supervisor of their own restarts the
lost task), not an omission: not reported.
"""
import bisect
import re

from validator.rules.base import (CONTAINER_RUNTIMES, ENDING_SIGNALS, GOOD_BATCH, INTERACTIVE_SERVERS,
                                  MPI_LAUNCHERS, SETUP, WORK_PROGRAMS, all_memory, as_int, backgrounded, bad_batch,
                                  command_string, ending_kill, endless_loop, exclusive_nodes,
                                  exported_function_commands, in_function, interactive_server, one_host, payload_text, program_base_name,
                                  requested_gpus_per_node, set_names, shell_payload, signal_name, srun_option,
                                  statement_of)
from validator.rules import torchrun
from validator.rules.srun import (exceeds_job_nodes, own_options, program_values, program_words, refused_task_count,
                                  step_program)
from validator.sbatch import SLURM_TIME, TEMPLATE, VALUE_TOKEN, before
from validator.shell import WRAPPER_VALUED, Word

ID = "launch-kill-on-bad-exit"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = ('srun without --kill-on-bad-exit for a step whose tasks work together: when one dies the others '
               "hold the step's nodes until their program's own timeout ends them or, where it has none, until the "
               'time limit.')
# What the survivors do is their program's: the message names both ends (see the module's premise)
_MESSAGE = ("srun without --kill-on-bad-exit=1: when one task dies the others run on and hold the step's nodes until "
            "their program's own timeout ends them (PyTorch's NCCL watchdog: 10 minutes by default) or, where it has "
            "none (MPI, nccl-tests), until the time limit")
GOOD = {"run.sbatch": GOOD_BATCH}
BAD = bad_batch("srun --kill-on-bad-exit=1 ", "time srun ")


_TASK_COUNTS = ("nodes", "ntasks", "ntasks-per-node", "ntasks-per-gpu")  # ntasks-per-node reads --tasks-per-node too
# Signs that the tasks of a step are one program of many processes, which block in a collective when one
# of them dies: a rendezvous or process group, a collective library, MPI, a distributed framework, a
# training. One table, read in four places; each sign counts where its row says:
#   step:   the srun line's own words (a step left in the background whose tasks still form one program)
#   code:   the code of `python -c CODE` (a task that checks its own GPU with plain torch joins nothing:
#           round seventy-three's GPU-binding job; torch joins tasks only through torch.distributed)
#   quoted: a single-quoted shell payload (`srun bash -c '...'`): naming any program that may be a rank
#   file:   anywhere in the job script (an opaque `srun ./task.sh` in a job that shows no sign is per-node)
_SIGNS = (
    (r"torchrun|torch\.distributed", "step code quoted file"),
    (r"init_process_group", "step code file"),
    (r"distributed", "code"),
    (r"deepspeed", "step code quoted file"),
    (r"accelerate\s+launch", "step"),
    (r"accelerate", "code quoted file"),
    (r"mpirun|mpiexec", "step quoted file"),
    (r"mpi4py|\bMPI\b", "code file"),
    (r"horovod|\bjax\b|lightning", "code file"),
    (r"nccl", "code file"),
    (r"rccl|\bgloo\b|\bpmi|\bucx|(open|intel|cray-|\b)mpi|mpi(ch|_)|mvapich|\bimpi\b", "file"),
    (r"tensorflow|\bray\b|\bdask", "code"),
    (r"python|composer|_perf|nemo|train", "quoted"),  # any program that may be a rank, a training by its name
    (r"megatron", "quoted file"),
    (r"MASTER_ADDR|rdzv", "step file"),
    # bounded: `--constraint` holds "train", `mnemonic` "nemo"
    (r"MASTER_PORT|WORLD_SIZE|NODE_?RANK|torch|(\b|_)(ddp|fsdp|nemo)(\b|_)|(\b|_|pre)train", "file"),
    (r"--nnodes|--num[_-]nodes|--dist[_-]init|--node[_-]rank|--master[_-]addr|--tp\b|tensor[_-]parallel"
     r"|pipeline[_-]parallel", "step"),
)


def _signs(where: str):
    """One regex of every sign that counts in `where` (step, code, quoted, file). Only the file's is
    case-insensitive (`Horovod` in a comment is a sign of the job); in code, a step or a payload the
    words are a program's or a module's own (`os.environ["NCCL_DEBUG"]` reads a setting, joins nothing)."""
    return re.compile("|".join(f"(?:{pattern})" for pattern, places in _SIGNS if where in places.split()),
                      re.I if where == "file" else 0)


_STEP_SIGNS, _CODE_SIGNS, _QUOTED_SIGNS, _FILE_SIGNS = (_signs(w) for w in ("step", "code", "quoted", "file"))


def _one_task(shell, parsed, command, strict) -> bool:
    """A step of one task (-n1, --ntasks=1, -N1 where the job asks for one task per node, or a job
    that asks for no more than one node and task): there are no other tasks to leave running.
    Presets take the node count at submission, so the strict profile does not read a missing
    --nodes as one node."""
    asked = {name: parsed.value(name) for name in _TASK_COUNTS if parsed.get(name)}
    count = srun_option(shell, command, "--ntasks", "-n")
    if count is not None:
        # --ntasks=$SLURM_JOB_NUM_NODES (or the script's own $NNODES): one task per node, one task in a
        # job of one node; --ntasks=$SLURM_NTASKS: the job's own task count
        # the variable alone: `-n $((8 * SLURM_NNODES))` is eight tasks a node (round sixty-six's kharma job)
        per_node_count = _NODE_COUNT_VARIABLE.match(count.raw) or _NODE_COUNT_NAME.search(count.raw)
        job_count = _JOB_TASKS.search(count.raw) is not None and _job_tasks(asked) == 1
        return count.value == "1" or _literal_one(shell, count.raw) or job_count \
            or bool(per_node_count) and _one_node(parsed, asked, strict)
    per_node = srun_option(shell, command, "--ntasks-per-node")
    nodes = srun_option(shell, command, "--nodes", "-N")
    if per_node is not None or nodes is not None:
        # srun -N1: as many tasks as the job's --ntasks-per-node (SLURM_NTASKS_PER_NODE), else one
        tasks_per_node = per_node.value if per_node is not None else asked.get("ntasks-per-node", "1")
        # without srun -N the step spans the job's nodes: one where the job has one (round sixty-one:
        # `srun --ntasks-per-node=1` in a job of --ntasks=1)
        one_node = _one_node(parsed, asked, strict) if nodes is None else \
            (nodes.value == "1" or _NODE_COUNT_VARIABLE.match(nodes.raw) is not None and _one_node(parsed, asked, strict)
             or _nodes_less(nodes.raw, asked) == 1)
        return one_node and tasks_per_node == "1" \
            and asked.get("ntasks", "1") == "1" and "ntasks-per-gpu" not in asked
    if not asked:  # nothing asked: one node, one task; but an MPI step (--mpi=pmix) of a file that shows a
        # distributed program besides that flag is meant for many, given at submission (round one's nccl-tests,
        # rounds 457, 499 and 500: dmlcloud, PUMI, LS-DYNA MPP, judged true); the flag alone is a site's habit
        # (rounds 491 and 506: a template's `srun --mpi=pmi2 python main.py`, one task as published, judged false)
        mpi = srun_option(shell, command, "--mpi") is not None
        return not strict and not (mpi and _distributed_beyond_mpi_flag(shell, parsed))
    # without --nodes and --ntasks, --ntasks-per-node=1 is one node of one task (sbatch's default node count)
    return _one_node(parsed, asked, strict) and all(value == "1" for name, value in asked.items() if name != "nodes") \
        or asked.get("ntasks") == "1"


def _literal_one(shell, raw: str) -> bool:
    """`-n${NNODE}` where every value the file gives NNODE is the literal 1 (round 538's video-mamba-suite job:
    `NNODE=1`, then `srun -n${NNODE}`), read from the same literal values as timeout's durations."""
    found = re.fullmatch(r"\"?\$\{?([A-Za-z_]\w*)\}?\"?", raw)
    if found is None:
        return False
    name = found.group(1)
    # set only by plain literal assignments: not `read`, `for`, `printf -v`, `(( ))`, nor `N=${N:-1}` (the environment
    # may give it another value)
    plain = shell.assigned(name)
    return _literal_values(shell).get(name) == ["1"] and all("$" not in a.raw for a in plain) \
        and name not in shell.once("names set otherwise", lambda: set_names(shell, plain=False))


def _distributed_beyond_mpi_flag(shell, parsed) -> bool:
    """The file shows a sign of a distributed program (_FILE_SIGNS) once srun's --mpi options are left out. Found
    once per script."""
    def find():
        text = _MPI_FLAG.sub("", "\n".join(parsed.lines))
        return _FILE_SIGNS.search(text) is not None or _MPI_PROGRAM.search(text) is not None
    return shell.once("signs beyond --mpi", find)


# srun's --mpi option and its variable form (SLURM_MPI_TYPE: srun.1, INPUT ENVIRONMENT VARIABLES): the flag itself
_MPI_FLAG = re.compile(r"--mpi[= ]\S+|SLURM_MPI_TYPE\S*")
# MPI programs by their usual names: GROMACS's and LAMMPS's _mpi builds, HPL, QE's pw.x, CP2K's psmp/popt, VASP
_MPI_PROGRAM = re.compile(r"\w_mpi\b|\bxhpl\b|\bpw\.x\b|\bcp2k\.p|\bvasp_|\bnamd2\b|\bmdrun\b")


def _templated_program(command) -> bool:
    """`srun {{command}} --seed $seed`: the step's program is a template token that a tool fills in
    before sbatch (round fifty-seven: cleanrl's benchmark template, always rendered with one task):
    what runs, and how many tasks talk, is the rendered file's to say."""
    program = step_program(command)
    if program is None:
        return False
    rest = program_words(command, program, with_program=True)
    # `{{ command }}` is three words: the program word opens a template token that a later word closes
    text = " ".join(word.raw for word in rest[:3])
    return TEMPLATE.match(program.raw) is not None or TEMPLATE.match(text) is not None and text.startswith("{{")


def _templated_count(shell, parsed, command) -> bool:
    """`srun -n {NTasks} ...` in a file whose directives are a template's: the step's task count is a token
    that a tool fills in before sbatch (round two hundred and eighty-four: SkyFactory's str.format job
    templates): as with a templated program, whether the rendered step has one task or many is the rendered
    file's to say. In a job whose directives hold no token, `srun -n {n}` stays a step of its own."""
    count = srun_option(shell, command, "--ntasks", "-n")
    if count is None or not parsed.template_lines:
        return False
    value = count.raw.strip("\"'")
    return TEMPLATE.fullmatch(value) is not None or VALUE_TOKEN.fullmatch(value) is not None


def _step_component(shell, parsed, command):
    """The directives a step's task count comes from: the heterogeneous job's component that
    `srun --het-group=N` (or its old name --pack-group, slurm_opt_pack_group in src/common/slurm_opt.c at
    slurm-22-05-0-1 and slurm-26-05-1-1) names, else the batch script's own, component 0 (round fifty-five: a one-task
    coupler step in component 1 of a 64-task job)."""
    group = srun_option(shell, command, "--het-group", "--pack-group")
    if group is None:
        return parsed
    index = as_int(group.value)
    # `--het-group=0,1` or `0-1` (read as a hostlist, _get_het_group in src/srun/opt.c): several
    # components, a step that spans them: not one task
    return parsed.component(index) if index is not None else None


# the variable alone: $X, ${X}, ${X:-1}, ${X:=1}, ${X-1}, $((X)), $(( $X ))
_NODE_COUNT_VARIABLE = re.compile(r"^\"?(\$\{?(SLURM_JOB_NUM_NODES|SLURM_NNODES)(:?[-=]\d+)?\}?"
                                  r"|\$\(\(\s*\$?\{?(SLURM_JOB_NUM_NODES|SLURM_NNODES)\}?\s*\)\))\"?$")
# A script's own node-count variable: $NNODES, ${NUM_NODES}, $N_NODES, $NODE_COUNT.
_NODE_COUNT_NAME = re.compile(r"^\"?\$\{?(N_?NODES|NUM_?NODES|NODE_?COUNT|NODES)\}?\"?$", re.I)
# The job's task count as Slurm exports it to the batch shell (sbatch.1, OUTPUT ENVIRONMENT VARIABLES).
_JOB_TASKS = re.compile(r"^\"?\$\{?SLURM_(NTASKS|NPROCS)\}?\"?$")


# `$(( SLURM_NNODES - 1 ))`: every node of the job but some (the first runs a server: round 134)
_NODES_LESS = re.compile(r"^\"?\$\(\(\s*\$?\{?(?:SLURM_JOB_NUM_NODES|SLURM_NNODES)\}?\s*-\s*(\d{1,4})\s*\)\)\"?$")


def _nodes_less(raw: str, asked) -> int | None:
    """`srun -N $(( SLURM_NNODES-1 ))` in a job of --nodes=2: one node. SLURM_JOB_NUM_NODES (and its old
    name SLURM_NNODES) is the allocation's node count (sbatch.1, OUTPUT ENVIRONMENT VARIABLES, at
    slurm-22-05-0-1 and slurm-26-05-1-1), which an exact --nodes=N fixes at N; None for a range
    (--nodes=2-4), a count the directives do not give, or another expression."""
    found = _NODES_LESS.match(raw)
    nodes = asked.get("nodes")
    if found is None or not isinstance(nodes, str) or not (nodes.isascii() and nodes.isdigit()):
        return None
    return int(nodes) - int(found.group(1))


def _job_tasks(asked) -> int | None:
    """The job's task count from its directives: --ntasks, else --nodes x --ntasks-per-node (both
    literal); None when it is not written down."""
    def number(name, default=None):
        value = asked.get(name, default)
        return int(value) if isinstance(value, str) and value.isascii() and value.isdigit() else None
    if "ntasks" in asked:
        return number("ntasks")
    if "ntasks-per-gpu" in asked:
        return None
    nodes, per_node = number("nodes", "1"), number("ntasks-per-node", "1")
    return nodes * per_node if nodes is not None and per_node is not None else None


_OTHER_NODES = re.compile(r"--nnodes|MASTER_ADDR|rdzv|--hostfile")  # a rendezvous of several nodes (not a sized name)


def _meets_other_nodes(parsed) -> bool:
    """The script's words set up a rendezvous of several nodes (torchrun's --nnodes, MASTER_ADDR, a hostfile);
    read once per script."""
    found = getattr(parsed, "_meets_other_nodes", None)
    if found is None:
        found = _OTHER_NODES.search("\n".join(parsed.lines)) is not None
        parsed._meets_other_nodes = found
    return found


def _one_node(parsed, asked, strict) -> bool:
    """The job has one node: --nodes=1, or (outside presets, which take the node count at submission)
    neither --nodes nor more than one task asked, in a job that does not take whole nodes: one that
    asks every GPU (8), all memory (--mem=0) or --exclusive and no node count is meant for
    `sbatch -N` (Azure's fairseq sample says so in its readme); not one that asks a single GPU a node."""
    if "nodes" in asked:
        return asked["nodes"] in ("1", "1-1")
    if one_host(parsed.value("nodelist") or "-"):
        return True  # --nodelist of one host and no node count: that host alone (round 506's VCGAN job)
    gpus = requested_gpus_per_node(parsed)
    # a job that asks one GPU a node is sized for one GPU: its --exclusive is the site's whole-node policy (NERSC's
    # Cori GPU profiling jobs, round 477), not a multi-node job waiting for `sbatch -N`, unless its own words meet
    # other nodes (`torchrun --nnodes=$SLURM_NNODES --rdzv_endpoint=$MASTER_ADDR`)
    whole = (exclusive_nodes(parsed) or all_memory(parsed)) and (gpus != 1 or _meets_other_nodes(parsed)) \
        or (gpus or 0) >= 8
    return not strict and not whole and asked.get("ntasks", "1") == "1"


# Programs whose tasks never talk to each other: each node's task does its own work and ends.
_PER_NODE = {"mkdir", "rm", "rmdir", "cp", "mv", "ln", "touch", "chmod", "chown", "cat", "ls", "find", "du", "df",
             "free", "hostname", "uname", "date", "echo", "printf", "true", "false", "sleep", "env", "printenv",
             "nvidia-smi", "rocm-smi", "lscpu", "lspci", "lsblk", "numastat", "ibstat", "ibv_devinfo", "ibdev2netdev",
             "ip", "ifconfig", "sync", "tar", "rsync", "wget", "curl", "enroot", "docker", "podman", "apptainer",
             "singularity", "dcgmi", "pkill", "killall", "kill", "tee", "head", "tail", "grep", "wc", "nproc", "id",
             "whoami", "pwd", "mount", "umount", "ulimit", "test", "[", "cd", "source", ".", "module", "ml",
             "set", "exit", "sudo", "md5sum", "sha256sum", "nvcc", "which", "command", "type", "ps", "uptime",
             "apt", "apt-get", "yum", "dnf", "pip", "pip3", "netstat", "ss", "lsof", "ping",
             "unsquashfs", "sysctl", "git",
             # cloud CLIs: each task logs in, configures docker or copies its own objects (round 563's A3 sample:
             # `srun --ntasks-per-node=1 gcloud auth configure-docker ...`)
             "gcloud", "gsutil", "aws", "az",
             # file and text utilities: each task reads and writes its own files (dd of=out.$SLURM_PROCID)
             "dd", "stat", "sort", "uniq", "cut", "tr", "sed", "awk", "gzip", "gunzip", "zstd", "pigz", "xz",
             "unzip", "zip", "truncate", "fallocate", "shred", "dirname", "basename", "realpath", "readlink",
             # MATLAB sessions: srun starts separate ones; MATLAB's parallel pools are its own workers
             # (a local pool, or a cluster profile that submits its own jobs), never ranks of this step
             # (rounds seven and ten: 3 of 3 such steps judged independent)
             "matlab"}
# Build tools: each task builds on its own (round ninety-one's `srun make` in 2- to 8-task course
# jobs, 3 of 3 judged independent copies; the MPI runs come later). Independent, but the job's work
# (a failed build is the job's failure: launch-strict-mode still reads them), so not in _PER_NODE.
_BUILD_TOOLS = {"make", "gmake", "cmake", "ninja"}
# System monitors (procps, sysstat, hwloc): each task reports on its own node and never talks to the
# others (read round 221: `srun -n 6 top`, six copies). Independent, but where a job runs only them they
# are its work (its failed `top` ended COMPLETED after a `sleep`: launch-strict-mode, judged true), so
# not in _PER_NODE either.
_MONITORS = {"top", "htop", "nvtop", "vmstat", "iostat", "mpstat", "pidstat", "sar", "dmesg", "lsmod", "lstopo"}


def _monitor(word, name) -> bool:
    """The system's monitor by its bare name (`top`, not `./sar` or /opt/apps/top/bin/top: a program of the
    user's own that happens to share the name)."""
    raw = getattr(word, "raw", None) or getattr(word, "name", "") or ""
    return name in _MONITORS and "/" not in raw
# Node-local GPU and CPU stress tools (DCGM's proftester, gpu-burn, stress-ng): each task loads its own
# node's devices and reports on them alone (Azure's thermal test in round one, its dcgmproftester job in round two)
_NODE_TOOL = re.compile(r"(?i)^(dcgmproftester\d*|gpu[-_]?burn|stress(-ng)?)$")
# A script named for such a test or a node's health check: run_dcgmproftester11.sh, thermal_test.sh,
# gpu_burn.sh, node_healthcheck.sh; the tool's name wins over a work word (run_) beside it
_NODE_CHECK_SCRIPT = re.compile(r"(?i)(^|[-_])(dcgmproftester\d*|dcgmi|dcgm[-_]?diag|thermal[-_]?test|gpu[-_]?burn"
                                r"|stress[-_]?(test|ng)|health[-_]?check|node[-_]?check)([-_][\w-]*)?\.(sh|py)$")
# An MPI launcher (MPI_LAUNCHERS) as the step's program: every task starts its own MPI world, and the
# launcher ends that world itself when one of its ranks exits non-zero (Open MPI 4.1: the MCA parameter
# orte_abort_on_non_zero_status defaults to true, orte/runtime/orte_mca_params.c, and the HNP's error
# manager then aborts the job, ORTE_PROC_STATE_TERM_NON_ZERO in orte/mca/errmgr/default_hnp/
# errmgr_default_hnp.c, both at v4.1.6; MPICH's hydra and Open MPI 5's PRRTE were not read here); the
# step's own tasks never talk to each other (round thirty-eight: gjbex's heterogeneous job, `srun
# mpirun -n 3 mem_limit`)
# Programs that bound or supervise their tasks themselves: `timeout` ends each task by its limit (a
# dead peer cannot hold the others past it); Ray detects a lost node itself (its GCS health checks)
# and the step's tasks are its head and workers, not ranks of one collective.
# Workers of a task farm (IPython parallel engines, Dask workers) each take work from a controller:
# a dead one blocks nobody, the controller hands its work to the others.
# pyABC's Redis workers the same: each pulls evaluations from the Redis server until the population is full
# ("Dynamic Scheduling" of RedisEvalParallelSampler, doc/sampler.rst of ICB-DCM/pyABC at 0.11.6; round two
# hundred and seventy-five).
# dask-cuda's worker (`dask-cuda-worker`, round three hundred and fifty-seven) is a Dask worker with a GPU each.
_FARM_WORKERS = frozenset({"ipengine", "dask-worker", "dask-cuda-worker", "abc-redis-worker"})
_BOUNDED = {"timeout"} | _FARM_WORKERS
# HyperQueue's workers (`hq worker start`) the same: "Sometimes a worker might crash while it is executing
# some task. In that case the server will automatically reschedule that task to a different worker"
# (docs/jobs/failure.md, It4innovations/hyperqueue at 09effb01; round two hundred and sixty-five).
# Dask's own CLI the same: `dask worker` and dask-cuda's `dask cuda worker`, the subcommands that replaced
# dask-worker and dask-cuda-worker.
_FARM_SUBCOMMANDS = {"hq": (("worker",),), "dask": (("worker",), ("cuda", "worker"))}
# hq's global options that take a value (CommonOpts in crates/hyperqueue/src/common/cli.rs at c8161e9d:
# --server-dir, --colors, --output-mode; --debug is a flag): `hq --server-dir "$DIR" worker start`
_FARM_GLOBAL_VALUES = {"hq": {"--server-dir", "--colors", "--output-mode"}}
# Container runtimes: per node when they import or pull, coupled when they run a coupled program.
_RUNTIMES = CONTAINER_RUNTIMES
_RUNTIME_PER_NODE = {"import", "create", "remove", "pull", "build", "load", "list", "images", "rm", "rmi", "version",
                     "inspect", "image", "cache"}
def _program_name(shell, program) -> str:
    """The base name of the program srun runs: its word's, or (`$MATLAB`) the one of the path the
    script sets that variable to, where every assignment names the same program."""
    if program is None:
        return ""
    if program.value is not None:
        return program.value.rsplit("/", 1)[-1]
    names = {value.rsplit("/", 1)[-1] for value in program_values(shell, program.raw)}
    if len(names) == 1 and "" not in names:
        return names.pop()
    glued = program_base_name(program.raw)  # `${CONDA_BIN_PATH}ray`: a folder variable glued to the name
    return glued if glued != program.raw.rsplit("/", 1)[-1] and re.fullmatch(r"[\w.+-]+", glued) else ""


_RAY = re.compile(r"(?<![\w.-])ray\s+(start|symmetric-run)\b")
# `ray stop` / `ray status` on each node: a per-node command of Ray's CLI, no cluster is formed.
_RAY_LOCAL = re.compile(r"(?<![\w.-])ray\s+(stop|status)\b")
# A task that takes its own share of the data by its task id: `--shard=$SLURM_PROCID`,
# `subpartition_number=$SLURM_PROCID` (Hydra), `--chunk ${SLURM_PROCID}`. Each task works alone.
_TASK_ID = re.compile(r"\\?\$\{?SLURM_PROCID\b")
_SHARD_NAME = re.compile(r"(?i)(shard|partition|chunk|split|slice)[\w.-]{0,32}\s*[= ]\s*[\"']?$")


def _own_shard(text: str) -> bool:
    """The task id handed over as a shard's number: a bounded look behind each $SLURM_PROCID (linear
    in the text, whatever its words' length)."""
    return any(_SHARD_NAME.search(text[max(0, m.start() - 48):m.start()]) for m in _TASK_ID.finditer(text))
# A per-node helper script by its name: copy-data.sh, clean_cache.sh, download-model.sh, drop-caches.sh,
# config_env_ddp.sh or setup_venv.sh (a virtualenv built on each node before the training step: round
# twenty-four, 3 of 3 judged false), slurm-metadata.sh or collect-node-info.sh (what each node has:
# round two's three cloudai reference jobs, judged false), extract.sh (untar a node's inputs into its local
# scratch: round two hundred and four's HyperQueue job, judged false). Not archive.sh, which carries the
# results back: the job must fail with it (launch-strict-mode reads this table too; judged true there).
# max_gpu_app_clocks.sh (set each node's GPU application clocks before HPL and reset them after, one task a node:
# round 546, two findings judged false).
_HELPER_SCRIPT = re.compile(r"(?i)(^|[-_])(copy|sync|clean|cleanup|clear|drop|download|install|prefetch|stage|monitor"
                            r"|extract|unpack|untar|unzip|clocks?"
                            r"|setup|config|configure|prepare|venv|metadata|info|inventory)"
                            r"([-_][\w-]*)?\.(sh|py)$")
# A python script named only for looking after the node itself (drops its page cache, cleans its scratch, watches
# it; not data_clean.py or train_monitor.py, the job's work): a narrower list than _HELPER_SCRIPT's, whose extract,
# download, stage or setup name python programs of the job's own work (round 552: five such steps judged true,
# extract_biases.py an mpi4py world among them)
_NODE_CARE_PY = re.compile(r"(?i)(^|/)(drop|drop[-_]?caches?|cleanup|clear[-_]?caches?|monitor)\.py$")
# A script name that says it runs the job's work, whatever helper word it also holds
_WORK_SCRIPT = re.compile(r"(?i)(^|[-_])(train|training|run|launch|main|submit|job|exec|solve|simulate)([-_.]|$)")
# OpenFOAM's applications run as one serial process unless given -parallel (then they are MPI ranks
# of one decomposed case: the OpenFOAM User Guide, "Running applications in parallel": `mpirun -np N
# foamApp -parallel`). In the source: argList's constructor starts MPI (parRunControl_.runPar, which
# calls Pstream::init: parRun.H) only when an option of validParOptions ("parallel") is on the command line
# (src/OpenFOAM/global/argList/argList.C, OpenFOAM-dev version-9 and 27f0de9012 of August 2026).
# Several tasks of a serial one (`srun blockMesh` in a 4-task job) are copies that never talk.
_OPENFOAM_UTILITIES = {"blockMesh", "decomposePar", "reconstructPar", "reconstructParMesh", "snappyHexMesh",
                       "checkMesh", "setFields", "mapFields", "topoSet", "createPatch", "renumberMesh",
                       "surfaceFeatureExtract", "surfaceFeatures", "extrudeMesh", "mirrorMesh", "transformPoints",
                       "foamToVTK", "postProcess", "redistributePar", "refineMesh", "changeDictionary"}


def _serial_openfoam(command, program, name: str) -> bool:
    inner = _in_container(command, program) if name in _RUNTIMES else name
    inner = (inner or "").rsplit("/", 1)[-1]
    openfoam = inner in _OPENFOAM_UTILITIES or (inner.endswith("Foam") and inner[:1].islower() and len(inner) > 4)
    return openfoam and not any((a.value or a.raw) == "-parallel" for a in command.args)


_GROMACS = {"gmx", "gmx_mpi", "gmx_d", "gmx_mpi_d"}


def _gromacs_tool(command, program, name: str) -> bool:
    """A GROMACS tool other than mdrun (`gmx_mpi grompp`, `grompp_mpi`): a one-process preprocessor
    or analysis tool, each rank runs all of it on its own, so its copies wait for nobody (round
    eighteen: 2 of 2 judged false, the judge reading gromacs/gromacs master; an earlier round judged
    HPCNow's grompp the same; not checked here against a GROMACS release). mdrun, the parallel
    engine, is not one."""
    if name.startswith(("grompp", "editconf", "genion", "solvate", "pdb2gmx", "trjconv", "make_ndx")):
        return True
    if name not in _GROMACS:
        return False
    words = [a.value or a.raw for a in program_words(command, program)]
    tool = next((w for w in words if not w.startswith("-")), "")
    return bool(tool) and tool != "mdrun"


# Plain compilers: their MPI builds go through the wrappers (mpicc, mpif90, mpiicc, cc on Cray: other
# names), or name the library (-lmpi, -lmpi_cxx, -lnccl, -lrccl) when built by hand.
_PLAIN_COMPILERS = {"gcc", "g++", "clang", "clang++", "icc", "icpc", "icx", "icpx", "nvcc", "nvc", "nvc++",
                    "gfortran", "ifort", "ifx", "nvfortran", "hipcc", "pgcc", "pgc++", "pgf90"}
_COMMUNICATION_LIBRARY = re.compile(r"^-l(mpi|nccl|rccl|gasnet|shmem|oshmem|ucc|ucp)")


def _built_alone(shell, program) -> bool:
    """The job builds the program itself (`gcc -fopenmp pi.c -o pi_openmp`, `nvcc saxpy.cu -o saxpy`)
    with a plain compiler and no MPI, NCCL or RCCL library: its copies never talk to each other, so
    a dead one leaves nobody waiting (round seventeen: an OpenMP and a CUDA course program, each run
    as one copy per task). A program that any command builds with an MPI wrapper is not one."""
    target = (program.value or "").rsplit("/", 1)[-1]
    return bool(target) and shell.once("programs built here", lambda: _builds(shell)).get(target, False)


def _builds(shell) -> dict[str, bool]:
    """Every program the script builds (its -o name) -> whether every build of it is a plain one."""
    builds: dict[str, bool] = {}
    for command in shell.commands:
        words = [a.value or a.raw for a in command.args]
        outputs = {words[i + 1].rsplit("/", 1)[-1] for i, w in enumerate(words[:-1]) if w == "-o"}
        outputs |= {w[2:].rsplit("/", 1)[-1] for w in words if w.startswith("-o") and len(w) > 2}
        if not outputs:
            continue
        plain = command.name.rsplit("/", 1)[-1] in _PLAIN_COMPILERS \
            and not any(_COMMUNICATION_LIBRARY.match(w) for w in words)
        for output in outputs:
            builds[output] = builds.get(output, True) and plain
    return builds


def _helper_script(raw: str) -> bool:
    base = raw.strip("\"'").rsplit("/", 1)[-1]
    named = re.fullmatch(r"\$\{?(\w{1,128})\}?", base)  # ${GRACE_POWER_SCRIPT}: the variable's name says
    if named:
        return bool(_HELPER_VARIABLE.search(named.group(1)))
    # a file name is at most 255 bytes; `setup_and_train.sh`, `run_config.sh` name the job's work
    if len(base) > 255:
        return False
    return bool(_NODE_CHECK_SCRIPT.search(base)) or bool(_HELPER_SCRIPT.search(base)) and not _WORK_SCRIPT.search(base)


# A per-node check or monitor module or variable by its name: mountcheck, healthcheck, power monitor.
_CHECK_MODULE = re.compile(r"(?i)(mount|health|node|gpu)_?check$|monitor$")
_HELPER_VARIABLE = re.compile(r"(?i)(^|_)(POWER|MONITOR|CLEANUP|DROP_?CACHES?)(_|$)")


def _first_operand(words, start: int, value_options) -> int:
    """The index of the first word from `start` on that is no option of a program: words that begin with '-'
    are options, and one of `value_options` written alone (`--bind DIR`, not `--bind=DIR`) takes the next word
    as its value. One reader for the options of apptainer, shifter, hq and the package managers before their
    operands."""
    i = start
    while i < len(words):
        text = words[i].value if words[i].value is not None else words[i].raw
        if not text.startswith("-"):
            break
        i += 2 if text in value_options else 1
    return i


# Options of `apptainer|singularity exec` that take the next word as their value.
# apptainer-exec(1) and apptainer-run(1) (apptainer 1.4, cobra's `--name=""` or `=[]`: a value): `--app NAME` names
# an app inside the image, which is the next word
_RUNTIME_VALUE_OPTIONS = {"-B", "--bind", "--env", "--env-file", "-H", "--home", "--pwd", "-W", "--workdir",
                          "-o", "--overlay", "--mount", "--security", "--network", "--network-args", "-S", "--scratch",
                          "--app", "--add-caps", "--drop-caps", "--apply-cgroups", "--authfile", "--cwd", "--dns",
                          "--hostname", "--fusemount"}


# Package managers' subcommands that set up software on each node (round 457's cloud-lab playbooks: `srun -N 4 -n 4
# spack install ...`, four separate installs that share only spack's file locks), as pip and apt are in _PER_NODE;
# not their subcommands that run a program (`conda run`, `uv run`, `spack python`)
_ENV_SUBCOMMANDS = frozenset({"install", "create", "env", "clean", "update", "remove", "list", "info", "config"})
_PACKAGE_SUBCOMMANDS = {"spack": frozenset({"install", "load", "env", "mirror", "buildcache", "compiler", "find",
                                            "clean", "config", "external", "concretize", "fetch", "stage"}),
                        "conda": _ENV_SUBCOMMANDS, "mamba": _ENV_SUBCOMMANDS, "micromamba": _ENV_SUBCOMMANDS,
                        "uv": frozenset({"pip", "sync", "venv", "lock"})}


# global options that take the next word before the subcommand (`spack -e myenv install`, `spack -C DIR install`,
# `conda -n env ...` as some wrappers write it)
_PACKAGE_GLOBAL_VALUES = {"spack": {"-e", "--env", "-D", "--env-dir", "-C", "--config-scope"},
                          "conda": {"-n", "--name", "-p", "--prefix"}}


def package_setup(shell, command, program=None) -> bool:
    """`srun -N 4 -n 4 spack install ...` (conda env create, uv pip install): a package manager's set-up subcommand,
    run by each task on its own node. Its tasks never wait for each other (launch-kill-on-bad-exit), but it is a
    build whose status the job keeps, as make's is (not a helper step for launch-strict-mode: the review's `srun
    spack install | tee` job). `command` is a step (program: its step program) or a payload's command."""
    if program is None and command.name == "srun":
        program = step_program(command, shell)
    if command.name == "srun":
        name = _program_name(shell, program)
        words = program_words(command, program) if program is not None else []
    else:
        name, words = command.name.rsplit("/", 1)[-1], list(command.args)
    if name not in _PACKAGE_SUBCOMMANDS:
        return False
    at = _first_operand(words, 0, _PACKAGE_GLOBAL_VALUES.get(name, ()))
    return at < len(words) and words[at].value in _PACKAGE_SUBCOMMANDS[name]


def _runs_ray(command) -> bool:
    """Ray's head or workers (`ray start`, `ray symmetric-run`), as words or in a `bash -c` string."""
    return bool(_RAY.search(" ".join(a.raw for a in command.args)))


def helper_step(shell, command) -> bool:
    """A per-node helper step: its program (or every command of its `bash -c` payload) is one of
    _PER_NODE (mkdir, hostname, curl, nvidia-smi, ...), whose tasks never talk to each other."""
    program = step_program(command, shell)
    name = _program_name(shell, program)
    if name in _RUNTIMES:  # per node when it imports or pulls; `singularity exec IMG python ...` runs a program
        rest = [a.value for a in program_words(command, program) if a.value and a.value[:1] != "-"]
        if bool(rest) and rest[0] in _RUNTIME_PER_NODE:
            return True
        inner = _in_container(command, program)
        return inner is not None and inner.rsplit("/", 1)[-1] in _PER_NODE
    if name in _PER_NODE or _NODE_TOOL.match(name) or (program is not None and _helper_script(program.raw)):
        return True
    if name == "ray":  # `srun ... ray stop` on each node before the cluster starts: Ray's per-node CLI (_RAY_LOCAL)
        rest = [a.value for a in program_words(command, program) if a.value and a.value[:1] != "-"]
        return bool(rest) and rest[0] in ("stop", "status")
    if name in ("bash", "sh"):  # `srun bash slurm-metadata.sh`, `bash $DIR/power_monitor.sh`: the name says it
        rest = program_words(command, program)
        if rest and not rest[0].raw.startswith("-") and _helper_script(rest[0].raw):
            return True
    if name.startswith("python"):  # `python /workspace/bert/drop.py`: MLPerf's per-node cache drop (round 552)
        rest = program_words(command, program)
        if rest and not rest[0].raw.startswith("-") and _NODE_CARE_PY.search(rest[0].raw.strip("\"'")):
            return True
    inner = _payload(shell, command, program, name)
    return inner is not None and all(_per_node(shell, c) for c in inner.commands)


# A program asked only for its version or its help (`python --version`, `nvcc -V`): it prints and exits,
# alone (round one hundred and fifty-nine: `srun -N 1 bash -c "hostname; python --version"`)
_ONLY_INFO = {"--version", "-V", "-version", "--help", "-h"}


def _per_node(shell, command) -> bool:
    """A command of a step's payload that each node runs alone: a per-node program, a program asked
    only for its version, or python running a helper script by its name (`python3
    data/shakespeare_char/prepare.py`: round forty)."""
    name = _resolved(shell, command.name).rsplit("/", 1)[-1]
    if name in _PER_NODE or _NODE_TOOL.match(name):
        return True
    if len(command.args) == 1 and command.args[0].value in _ONLY_INFO:
        return True
    if name == "taskset" and _taskset_pid(command):
        return True  # `taskset -c -p PID`: prints (or sets) a running process's CPU list, runs no program (round 552)
    if name.startswith("python") and [a.value for a in command.args[:2]] == ["-m", "pip"]:
        return True  # `python3.8 -m pip install ...`: pip, as _PER_NODE has it
    script = next((a for a in command.args if not a.raw.startswith("-")), None)
    return name.startswith("python") and script is not None and _helper_script(script.raw)


def _taskset_pid(command) -> bool:
    """taskset's -p/--pid among its own options: those before its first other word (util-linux taskset reads its
    options with getopt_long("+pchV"), which stops there: `taskset -c $CPUS python train.py -p 8` runs a program)."""
    for arg in command.args:
        if arg.value is None or not arg.value.startswith("-"):
            return False
        if arg.value == "--pid" or re.fullmatch(r"-[chV]*p[chV]*", arg.value):
            return True
    return False


def python_code(words) -> str | None:
    """The literal code of `python [-u -B ...] -c CODE` (words after the program), else None (also where
    the code is a variable: `python -c "$CODE"` shows nothing of what it does)."""
    for i, word in enumerate(words):
        text = word.value
        if text == "-c":
            return _code_text(words[i + 1]) if i + 1 < len(words) else None
        if text is None or not text.startswith("-") or text in ("-m", "-"):
            return None
    return None


_NAMED_EXPANSION = re.compile(r"\$(?:\w+|\{\w+\})")
# where a number may stand in Python: after `(`, `,`, `=`, `[`, an operator; before `)`, `,`, `]`, an operator
_NUMBER_BEFORE = frozenset("(,=[+-*/%<>")
_AFTER_NUMBER = re.compile(r"\s*(?:[),\]+\-*/%<>]|$)")


def _code_text(word) -> str | None:
    """The code of a `-c` word: its literal value, or a double-quoted code whose expansions are plain
    `$NAME`s each standing where a number does (`time.sleep($MAINTIME)`, round three hundred and ninety-five's
    WattAMeter example), read as 0. Not an expansion in a Python string (`os.system('$CMD')`), a name
    (`from $PKG import`, `mypkg.$ENTRY()`) or a statement (`"$CODE"`), nor a command's output: any code."""
    if word.value is not None:
        return word.value
    raw = word.raw
    if len(raw) < 2 or raw[0] != '"' or raw[-1] != '"' or "$(" in raw or "`" in raw:
        return None
    body = raw[1:-1]
    if '"' in body.replace('\\"', ""):  # the shell word goes in and out of quotes: not one string
        return None
    quotes, counted = 0, 0  # single quotes before the expansion, counted once over the word: linear
    for match in _NAMED_EXPANSION.finditer(body):
        quotes, counted = quotes + body.count("'", counted, match.start()), match.start()
        before = body[max(0, match.start() - 64):match.start()].rstrip()
        if quotes % 2 or not before or before[-1] not in _NUMBER_BEFORE or not _AFTER_NUMBER.match(body, match.end()):
            return None
    code = _NAMED_EXPANSION.sub("0", body)
    return None if "$" in code else code


# `import a, b, c` of whole modules, no alias: importing a module joins no other task (a per-node
# preflight `import torch, transformers, accelerate, deepspeed; print(torch.__version__)`, round three
# hundred and fifty-one). A module the code then uses is named again where it is used
# (`import deepspeed; deepspeed.init_distributed()`); `from X import Y` and `import X as Y` stay, as what
# they bring in is used under another name (`from mpi4py import MPI`, `import horovod.torch as hvd`).
_PLAIN_IMPORT = re.compile(r"(?:^|(?<=[;\n]))[ \t]*import[ \t]+[\w.]+(?:[ \t]*,[ \t]*[\w.]+)*[ \t]*(?=;|\n|$)")


def _local_code(words) -> bool:
    """`python -c CODE` whose code shows no sign of joining other tasks (_SIGNS, "code": an mllog event,
    a file check, a look at the task's own GPU, modules only imported): each task runs it alone. An import of
    mpi4py stays: importing mpi4py.MPI calls MPI_Init, which waits for every task."""
    code = python_code(words)
    return code is not None and not _CODE_SIGNS.search(
        _PLAIN_IMPORT.sub(lambda m: m.group(0) if "mpi4py" in m.group(0) else "", code))


def _python_check(words) -> bool:
    """`python -c CODE` that joins no other task (_local_code), or `python -m` of a per-node check or monitor module
    (`python -m mlperf_common.mountcheck` on each node); `words` from the python on."""
    if _local_code(words[1:]):
        return True
    return len(words) > 2 and words[1].value == "-m" and bool(words[2].value) \
        and bool(_CHECK_MODULE.search(words[2].value.rsplit(".", 1)[-1]))


def _local_python(command) -> bool:
    """`python -c "import torch; print(torch.cuda.current_device())"`: code that joins no other task."""
    return command.name.rsplit("/", 1)[-1].startswith("python") and _local_code(command.args)


_DEFAULTED = r"\$\{%s:?=([\"']?)([^\"'}]*)\1\}"


def _resolved(shell, name: str) -> str:
    """A payload command named by a variable (`&& ${DROPCACHE_CMD}`): the first word of the literal
    value the script gives it (`X=...` or `: "${X:="sudo sysctl vm.drop_caches=3"}"`), else the name."""
    match = re.fullmatch(r"\$\{?(\w{1,128})\}?", name)
    if match is None:
        return name
    cache = shell.once("resolved command names", dict)  # once per name: 10,000 steps stay linear
    if name not in cache:
        values = [a.value for a in shell.assigned(match.group(1)) if a.value]
        root = shell.root
        if not values and root is not None:
            found = re.search(_DEFAULTED % re.escape(match.group(1)), root.text.decode("utf-8", "replace"))
            values = [found.group(2)] if found else []
        words = values[0].split() if values else []
        cache[name] = words[0] if words else name
    return cache[name]


def _payload(shell, command, program, name):
    """The parsed `bash -c` payload of a step (base.shell_payload), or None."""
    found = shell_payload(shell, command, program, name)
    return found.parsed if found is not None else None


def _container_words(command, program):
    """`apptainer|singularity exec|run [options] IMAGE PROGRAM ...`: (the image's word, the program's
    word), each None when absent; None for another subcommand or none."""
    words = program_words(command, program)
    if not words or words[0].value not in ("exec", "run"):
        return None
    at_image = _first_operand(words, 1, _RUNTIME_VALUE_OPTIONS)
    if at_image >= len(words):
        return None, None
    at_program = _first_operand(words, at_image + 1, _RUNTIME_VALUE_OPTIONS)
    return words[at_image], words[at_program] if at_program < len(words) else None


def _in_container(command, program) -> str | None:
    """The program that `apptainer|singularity exec [options] IMAGE PROGRAM ...` runs, when literal."""
    found = _container_words(command, program)
    return found[1].value if found is not None and found[1] is not None else None


def _container_shell_per_node(shell, command, program) -> bool:
    """`singularity exec IMG /bin/sh -c "cat /etc/alpine-release; hostname"`: a container's shell whose
    payload runs only per-node programs (read round 235). Its tasks never talk, but where the job runs
    nothing else the step is its work: not a helper_step (launch-strict-mode still reads it)."""
    inner = _in_container(command, program)
    shell_name = inner.rsplit("/", 1)[-1] if inner is not None else ""
    if shell_name not in ("bash", "sh"):
        return False
    payload = _payload(shell, command, _container_words(command, program)[1], shell_name)
    return payload is not None and all(_per_node(shell, c) for c in payload.commands)


def _standalone_torchrun(shell, command, program) -> bool:
    """torchrun (or `python -m torch.distributed.run|launch`), as the step's program or in its container, whose agents
    never meet: with `--standalone` every task forms its own rendezvous (torch 2.13.0 torch/distributed/run.py run():
    c10d on localhost:0 with a fresh uuid as rdzv id); with no --nnodes other than 1 and no --rdzv-backend other than
    static, each agent is a world of one node: --nnodes defaults to 1:1 and the backend to static, whose agent of node
    rank 0 hosts its own store at get_rdzv_endpoint's master_addr:master_port (127.0.0.1:29500 unless given; run.py
    at pytorch/pytorch 010929fd: --nnodes default "1:1", --rdzv-backend default "static") and waits for no other node
    (round 531's minGPT jobs and round 521's DeepSpeed tutorial: `srun torchrun --nproc_per_node=4 main.py` on two nodes,
    or four such tasks on one node with --master_addr, where all but one fail at once on the port; the missing --nnodes is launch-node-count's finding there). A c10d or etcd
    backend joins the agents at its endpoint even for one node (a late agent waits for the next round): kept. So is a
    step whose options the text does not show: a bare expansion where an option may stand (`torchrun $ARGS t.py`),
    any mention of torchrun's PET_ variables in the file (argparse_util.env reads PET_NNODES, PET_RDZV_BACKEND: an
    assignment, `srun --export=...,PET_NNODES=2`, a command's own `PET_NNODES=2 srun ...`), or a sourced file, which
    may set them. torchrun's options are read as its parser reads them
    (validator/rules/torchrun.py); the training script's own words are not torchrun's."""
    words = [a.value or a.raw for a in program_words(command, program, with_program=True)]
    start = next((i + 1 for i, w in enumerate(words) if w.rsplit("/", 1)[-1] == "torchrun"
                  or w in ("torch.distributed.run", "torch.distributed.launch") and i and words[i - 1] == "-m"), None)
    if start is None or shell.once("torchrun settings unseen", lambda: _torchrun_settings_unseen(shell)):
        return False
    line = torchrun.read(words, start)
    if "standalone" in line.options:
        return True
    return not line.unseen and torchrun.AMBIGUOUS not in line.options \
        and line.options.get("nnodes", "1") in ("1", "1:1") and line.options.get("rdzv_backend", "static") == "static"


def _torchrun_settings_unseen(shell) -> bool:
    """The file's code names torchrun's PET_ variables (torchrun.pet_named), or sources a file that may set them (not a
    virtual environment's or conda's activate script)."""
    return torchrun.pet_named(shell) or any(
        c.args and not re.search(r"(^|/)(activate|conda\.sh)$", c.args[0].value or c.args[0].raw)
        for c in shell.named("source", "."))


def _farm_worker(command, program, name: str) -> bool:
    """`srun ... hq worker start` (any `hq worker` subcommand: start, stop and list leave nothing waiting either):
    a task farm's worker, by its program and subcommand (_FARM_SUBCOMMANDS), after the program's global options
    (_FARM_GLOBAL_VALUES: `hq --server-dir DIR worker start`)."""
    if name not in _FARM_SUBCOMMANDS or program is None:
        return False
    rest = program_words(command, program)
    # hq's global options may come before the subcommand (`hq --server-dir=DIR worker start`)
    at = _first_operand(rest, 0, _FARM_GLOBAL_VALUES.get(name, ()))
    return any([word.value for word in rest[at:at + len(words)]] == list(words) for words in _FARM_SUBCOMMANDS[name])


def _endless_worker(inner) -> bool:
    """`srun ... sh -c "while true; do ./drainredis.R; done"` (round 461's task farm): each task runs its program
    again forever on its own; nothing a task does waits for another, and the step ends with the job."""
    root = getattr(inner, "root", None)
    statements = [n for n in root.named_children if n.type != "comment"] if root is not None else []
    return len(statements) == 1 and endless_loop(statements[0])


def _independent(shell, command) -> bool:
    """A step whose tasks never wait for each other: a per-node program (`srun mkdir -p ...`,
    `srun --ntasks-per-node=1 enroot import ...`), or `bash -c` whose payload runs only such
    programs; a single-quoted payload that starts nothing whose tasks work together is one too.
    A step that bounds its tasks (`timeout`) or runs Ray (which handles a lost node) leaves
    nothing waiting until the time limit."""
    program = step_program(command, shell)
    name = _program_name(shell, program)
    if name in _BOUNDED or name in MPI_LAUNCHERS or name in _BUILD_TOOLS or _runs_ray(command) \
            or helper_step(shell, command) or _monitor(program, name) or _farm_worker(command, program, name) \
            or package_setup(shell, command, program):
        return True
    # the same program inside a container (`singularity exec --nv IMG dask-cuda-worker ...`, round 357), also as the
    # last command of a shell's -c text there (`singularity run IMG bash -c "... && dask-worker ..."`, round 505)
    if name in _RUNTIMES and (_in_container(command, program) or "").rsplit("/", 1)[-1] in _BOUNDED:
        return True
    served = _served_words(shell, command) if name in _RUNTIMES or name in ("bash", "sh") else []
    if served and served[0].rsplit("/", 1)[-1] in _BOUNDED:
        return True
    inner = _payload(shell, command, program, name)  # `bash -c "vmstat 1 5 > vm.$SLURM_NODEID"`
    if inner is not None and all(_per_node(shell, c) or _monitor(c, c.name) for c in inner.commands):
        return True
    # `srun bash -c extract_to_shm` of a function the script exports (round four hundred and one): its body
    # is the payload (`rm -rf "$SHM_PATH"; mkdir -p ...; tar xf ...` on each node)
    body = exported_function_commands(shell, inner.commands[0].name, command.line) \
        if inner is not None and len(inner.commands) == 1 and not inner.commands[0].args else None
    if body and all(_per_node(shell, c) or c.name == "return" for c in body):
        return True
    if name in _RUNTIMES and _container_shell_per_node(shell, command, program):
        return True
    if program is not None and (_standalone_torchrun(shell, command, program) or _serial_openfoam(command, program, name)
                                or _built_alone(shell, program) or _gromacs_tool(command, program, name)):
        return True
    text = " ".join(a.raw for a in command.args)
    if _RAY_LOCAL.search(text) and not _RAY.search(text) or _own_shard(text):
        return True
    if program is not None and name.startswith("python") \
            and _python_check(program_words(command, program, with_program=True)):
        return True
    if name in _RUNTIMES:  # the same check run in a container (MLPerf's run.sub: `apptainer run ... $CONT python3 -m
        # mlperf_common.mountcheck`, an mllog event in `python -c`; rounds 435 and 448)
        found = _container_words(command, program)
        inner = found[1] if found is not None else None
        if inner is not None and (inner.value or "").rsplit("/", 1)[-1].startswith("python") \
                and _python_check(program_words(command, inner, with_program=True)):
            return True
    if name in _RUNTIMES or name not in ("bash", "sh"):
        return False
    payload = command_string(program_words(command, program))[0]
    if payload is None:
        return False
    inner = _payload(shell, command, program, name)
    if inner is not None and _endless_worker(inner):
        return True
    if inner is not None:
        names = [c.name.rsplit("/", 1)[-1] for c in inner.commands]
        if any(n in _BOUNDED for n in names[:1]) or "ray" in names and "start" in payload_text(shell, payload)[0]:
            return True
        if any(n in MPI_LAUNCHERS for n in names):
            return True  # `srun bash -c 'mpiexec -n 3 ./partdiff'`: each task starts its own MPI world (round 463)
        if all(_per_node(shell, c) or _local_python(c) or package_setup(shell, c) for c in inner.commands):
            return True  # echo, export, then a local `python -c` check on each task's own GPU, or an install
    return payload.raw.startswith("'") and not _QUOTED_SIGNS.search(payload.raw) and not command.has_flag("--mpi")




_SCRIPTS_FOLDER = re.compile(r"(?i)(?:^|[${_])scripts?(?:$|[_}])")


def _opaque_script(shell, command) -> bool:
    """The step runs a shell script the validator cannot see into (`srun ./hello.sh`, `srun bash
    task.sh`) in a job script that shows no sign of a distributed program (_SIGNS, "file"): its
    tasks are as often independent copies (an echo of each task's host, a share of a file list, a
    per-node daemon) as ranks of one program. Judged on read rounds: 14 false, 5 true (rounds 29, 43,
    44, 62, 72, 91, 102, 114, 117 against round fifty's and one hundred and eleven's): the strict
    profile only. A script in a job that names MASTER_ADDR, NCCL, torch, MPI or a training stays reported. A file
    with no suffix counts where its path names a scripts folder (`$MAGPIE_SCRIPTS_HOME/magpie-run`)."""
    program = step_program(command, shell)
    if program is None:
        return False
    word = program  # `$HOME/tutorial/hello.sh`: the path's own text names the script
    if _program_name(shell, program) in ("bash", "sh"):
        rest = program_words(command, program)
        word = rest[0] if rest else None
    if word is None:
        return False
    text = (word.value or word.raw).strip("\"'")
    folder, _, name = text.rpartition("/")
    # `$MAGPIE_SCRIPTS_HOME/magpie-setup-core` (round 475's Magpie Spark job): a file with no suffix right in a folder
    # the path calls scripts (`scripts/`, `$SCRIPTS_HOME`, `${SCRIPT_DIR}`) is a script too; not a build folder
    # under it (`$SCRIPT_DIR/../build/lmp`) nor a word that only holds the letters (`transcripts/bin/xhpl`)
    return text.endswith(".sh") or "." not in name and _SCRIPTS_FOLDER.search(folder.rsplit("/", 1)[-1]) is not None


# `python -m mpi4py prog.py` (also `-m mpi4py.run`, python's own options before it): mpi4py's run mode runs the program
# with runpy and, on an unhandled exception or a non-zero sys.exit, sets the abort status that makes mpi4py call
# MPI_Abort on COMM_WORLD at exit (src/mpi4py/run.py, set_abort_status, at mpi4py/mpi4py 0cb67ed; "In case of an
# unhandled exception, abort execution of the MPI program by calling MPI.COMM_WORLD.Abort()"): every rank ends with
# the first that fails (round 565's mpi-sppy jobs). A rank killed by a signal (the OOM killer, a segfault) aborts
# nothing, and -K would still end the step there: the default profile only.
_MPI4PY_RUN = re.compile(r"(?:^|[\s/])python[\d.]*\s+(?:-[A-Za-z]+\s+)*-m\s+mpi4py(?:\.run)?(?:\s|$)")


def _aborts_every_rank(command) -> bool:
    """The step runs its program under mpi4py's run mode (_MPI4PY_RUN)."""
    return _MPI4PY_RUN.search(" ".join(a.raw for a in command.args)) is not None


def _ends_after_first_exit(shell, own) -> bool:
    """`srun --wait=60` (-W 60): srun ends the step that many seconds after its first task exits, so a
    task that dies does not leave the others waiting until the time limit (max_wait > 0 arms
    _setup_max_wait_timer when the first task exits, and SIGALRM then terminates the step:
    src/plugins/launch/slurm/launch_slurm.c and src/srun/libsrun/srun_job.c at slurm-22-05-0-1,
    src/srun/launch.c and src/srun/signals.c at slurm-26-05-1-1). --wait=0 is no limit; without the
    option srun takes slurm.conf's WaitTime (arg_reset_wait_srun in src/common/slurm_opt.c), which the
    script does not show: reported."""
    wait = srun_option(shell, own, "--wait", "-W")
    return wait is not None and as_int(wait.value) is not None and as_int(wait.value) > 0




# The signals on which srun ends its step itself, forwarding SIGKILL to the tasks: base.ENDING_SIGNALS less KILL,
# which ends srun but not its step (a review's probe: slurmstepd only marks a lost client's I/O at EOF)
_STEP_ENDING = ENDING_SIGNALS - {"KILL"}


def _under_timeout(shell, command, parsed) -> bool:
    """`timeout 30m srun ...` (also `timeout "$LIMIT" srun`, `time timeout -s HUP 1h srun`): when the duration
    passes, timeout(1) sends srun SIGTERM (or the signal -s names), and srun ends its step on TERM, HUP or QUIT
    (_STEP_ENDING), so survivors of a dead task are held no longer than the duration the author chose, as where each
    task runs under timeout (_BOUNDED). Only where the job's --time is known and the duration is at most half of it:
    not a duration of 0 (no timeout: coreutils timeout.1), nor one of more than half the job's time (round 452's
    `timeout 235m srun` in a 4-hour job, judged true), nor in a job that states no limit (the partition's decides).
    A duration from a variable the file sets is read from its literal values (each must pass); one the file never
    sets comes from outside (a sourced settings file: round 482's HEPnOS) and is the author's bound."""
    node = command.node
    if node is None or command.name != "srun" or node.child_by_field_name("name") is None:
        return False
    words = [node.child_by_field_name("name")] + node.children_by_field_name("argument")
    texts = [w.text.decode("utf-8", "replace") for w in words]
    bases = [t.rsplit("/", 1)[-1] for t in texts]
    if "srun" not in bases[1:]:
        return False  # not a wrapped srun (the node is srun's own)
    at = bases.index("srun", 1)
    limit = SLURM_TIME.seconds(parsed.value("time") or "")
    for i in range(at):
        if bases[i] != "timeout":
            continue
        signal, duration, j = "TERM", None, i + 1
        while j < at and duration is None:
            word = texts[j]
            if word in WRAPPER_VALUED["timeout"]:  # the options that take the next word, as shell.unwrap reads them
                signal = texts[j + 1] if word in ("-s", "--signal") and j + 1 < at else signal
                j += 2
            elif word.startswith("--signal="):
                signal, j = word.split("=", 1)[1], j + 1
            elif word.startswith("-") and not word.startswith("--") and "s" in word[1:]:
                # `-sINT`, `-vsKILL`: getopt's bundled flags, the signal attached after `s` or in the next word
                rest = word[word.index("s", 1) + 1:]
                signal = rest if rest else (texts[j + 1] if j + 1 < at else signal)
                j += 1 if rest else 2
            elif word.startswith("-"):
                j += 1
            else:
                duration = word
        if duration is None or limit is None or signal_name(signal.strip("\"'")) not in _STEP_ENDING:
            return False
        return _bounds(shell, duration.strip("\"'"), limit)
    return False


def _bounds(shell, duration: str, limit: int) -> bool:
    """The duration is more than zero and at most half the job's limit. Its variables (`$LIMIT`, `${MIN}m`,
    `${LIMIT:-30m}`) are read from the literal values the file assigns them, each of which must pass; one the file
    sets otherwise (`for`, `read`, `printf -v`, arithmetic, a value with an expansion) is not known and does not
    bound; one the file never sets comes from outside (its default where it has one) and is the author's bound."""
    values = _literal_values(shell)
    texts = [duration]
    for found in re.finditer(r"\$\{([A-Za-z_]\w*)(?::?-([^}]*))?\}|\$([A-Za-z_]\w*)", duration):
        name, default = found.group(1) or found.group(3), found.group(2)
        if name in values:
            choices = values[name]
        elif name in shell.once("set names", lambda: set_names(shell)):
            return False  # set where its value is not a literal: not known here
        elif default is not None:
            choices = [default]
        else:
            return True  # set outside the file (a sourced settings file): the author's bound
        if choices is None:
            return False
        texts = [t.replace(found.group(0), choice, 1) for t in texts for choice in choices]
    seconds = [_duration_seconds(t) for t in texts]
    return bool(seconds) and all(x is not None and 0 < x and 2 * x <= limit for x in seconds)


def _literal_values(shell) -> dict:
    """name -> the literal values its assignments give it (None where one is not literal), read once per script."""
    def build() -> dict:
        found: dict = {}
        for a in shell.assignments:
            # `LIMIT=${LIMIT:-30m}`: the default, where the name is not set before (a.value holds it)
            own_default = re.fullmatch(r"\"?\$\{" + re.escape(a.name) + r":?[-=][^}$`]*\}\"?", a.raw) is not None
            literal = a.value is not None and ("$" not in a.raw and "`" not in a.raw or own_default)
            if a.name in found and found[a.name] is None:
                continue
            found[a.name] = (found.get(a.name) or set()) | {a.value} if literal else None
        # the distinct values; a name given dozens is read as not known (linear for a file of 10,000 steps)
        return {name: sorted(values) if values is not None and len(values) <= 16 else None
                for name, values in found.items()}
    return shell.once("literal values", build)


def _duration_seconds(text: str) -> float | None:
    """timeout(1)'s DURATION: a floating point number with an optional suffix s (the default), m, h or d."""
    found = re.fullmatch(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)([smhd]?)", text)
    if found is None:
        return None
    return float(found.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[found.group(2)]


def _never_waited(shell, command) -> bool:
    """A step started in the background that the batch script never waits for, beside work it does
    wait for: a service (a data server per node, Ray's workers) while the script waits for the
    work's PID or runs the work in the foreground. When the batch script exits, slurmctld completes
    the job (_slurm_rpc_complete_batch_script calls job_complete() in src/slurmctld/proc_req.c) and
    deallocates its nodes, which kills the steps still running there (deallocate_nodes() in
    src/slurmctld/node_scheduler.c, called from job_mgr.c; slurm-22-05-0-1 and slurm-26-05-1-1),
    so a task left waiting cannot hold the job to the time limit (round thirty-five: `srun
    serve-data.py &` beside `mpirun ... & wait $MPI_PID`; round thirty-four: Ray's workers through
    `shifter ./start-worker.sh &` before the driver; round ninety-four: `srun dask-mpi ... &` before
    `jupyter notebook`, the job's foreground work). Not where the step's words say its tasks form one
    program across nodes (_SIGNS, "step": a two-node SGLang server), where the variable that keeps its
    `$!` is read again (waited for, polled with kill -0, collected in an array), where a wait may
    collect it (a bare `wait`, `wait -n`, `wait %1`, `wait $!`, `wait $(jobs -p)`, a wait in a
    function, a wait on a variable that keeps no other step's PID), nor where nothing follows it that
    the job waits on (then it is the job's only work)."""
    if command.node is None or not backgrounded(command):
        return False
    if _STEP_SIGNS.search(" ".join(a.raw for a in command.args)):
        return False
    facts = _wait_facts(shell)
    own = _pid_variable(command.node)
    if facts.wait_in_function or (own is not None and own in facts.read):
        return False  # a wait in a function may be called on this step; a kept PID read again is watched
    later = bisect.bisect_right(facts.wait_starts, command.node.start_byte)
    if not facts.all_collect_others_from[later]:
        return False  # a wait after it may collect this step
    return later < len(facts.wait_starts) or facts.last_work_start > command.node.end_byte


def _foreground_work(command) -> bool:
    """What the job waits on in the foreground: a step, a work program (WORK_PROGRAMS), or an
    interactive server the person uses until done (round ninety-four: `jupyter notebook` after
    `srun dask-mpi ... &`, whose scheduler and workers serve it)."""
    name = command.name.rsplit("/", 1)[-1]
    return name in WORK_PROGRAMS | {"srun"} or name in INTERACTIVE_SERVERS or interactive_server(command) \
        or name == "shifter" and _shifter_program(command) in WORK_PROGRAMS


# shifter's options that take the next word as their value: parse_options() in src/shifter.c of NERSC/shifter
# (getopt_long "hnvV:i:e:w:m:" under POSIXLY_CORRECT, so options end at the first operand; the long --env
# takes no value there, --entrypoint only an attached one)
_SHIFTER_VALUE_OPTIONS = {"--image", "-i", "--volume", "-V", "--module", "-m", "-e", "--workdir", "-w"}


def _shifter_program(command) -> str:
    """The program that `shifter [options] PROGRAM ...` runs in the job's image, by its base name ('' when the
    words do not say): `shifter python client.py` in the foreground after `srun shifter dask-mpi ... &` is the
    job's work, as a bare `python client.py` is (round two hundred and eighty-five)."""
    at = _first_operand(command.args, 0, _SHIFTER_VALUE_OPTIONS)
    if at >= len(command.args):
        return ""
    word = command.args[at]  # `$SPARK_HOME/bin/spark-submit`: the base name is literal though the folder is not
    return (word.value if word.value is not None else word.raw.strip("\"'")).rsplit("/", 1)[-1]


class _WaitFacts:
    """What _never_waited asks of a script, read once (a script of 10,000 background sruns stays linear).
    A wait "collects others" when each of its words reads only variables that keep some background
    command's `$!` (a PID variable read again is ruled out before, so this one's is not among them)."""

    def __init__(self, shell):
        # a PID read only by `kill PID` is a step the script stops itself, not one it watches (round 482's HEPnOS
        # server: `kill $HEPNOS_PID` before each early exit; the job's end stops it otherwise)
        kills = sorted((k.node.start_byte, k.node.end_byte) for k in shell.named("kill")
                       if k.node is not None and ending_kill(k))
        starts = [k[0] for k in kills]

        def in_kill(node) -> bool:  # kill commands do not nest: the last one starting before it is the only candidate
            at = bisect.bisect_right(starts, node.start_byte) - 1
            return at >= 0 and node.end_byte <= kills[at][1]
        self.read = {e.name for e in shell.expansions if e.node is None or not in_kill(e.node)}
        pids = {_pid_variable(c.node) for c in shell.commands if c.node is not None and backgrounded(c)} - {None}
        waits = sorted((w for w in shell.named("wait") if w.node is not None), key=lambda w: w.node.start_byte)
        self.wait_in_function = any(in_function(w.node) for w in waits)
        self.wait_starts = [w.node.start_byte for w in waits]
        collects_others = [_collects_only(w, pids) for w in waits]
        self.all_collect_others_from = [True] * (len(waits) + 1)
        for i in range(len(waits) - 1, -1, -1):
            self.all_collect_others_from[i] = collects_others[i] and self.all_collect_others_from[i + 1]
        self.last_work_start = max((c.node.start_byte for c in shell.commands if c.node is not None
                                    and _foreground_work(c) and not backgrounded(c)), default=-1)


def _collects_only(wait, pids: set) -> bool:
    """`wait "$MPI_PID"`: every word reads only PID variables; not a bare wait, -n, %1, $!, $(jobs -p)."""
    if not wait.args:
        return False
    for word in wait.args:
        names = re.findall(r"\$\{?(\w+)", word.raw)
        if "$!" in word.raw or "$(" in word.raw or not names or any(n not in pids for n in names):
            return False
    return True


def _wait_facts(shell) -> _WaitFacts:
    facts = getattr(shell, "_wait_facts", None)
    if facts is None:
        facts = _WaitFacts(shell)
        shell._wait_facts = facts
    return facts


def _pid_variable(node) -> str | None:
    """The variable that keeps the `$!` of the statement holding `node` (`PID=$!`, `pids+=($!)`,
    `pids[$i]=$!` on the next statement), or None."""
    following = statement_of(node).next_named_sibling
    while following is not None and following.type == "comment":
        following = following.next_named_sibling
    if following is None or following.type != "variable_assignment" or b"$!" not in following.text:
        return None
    name = following.child_by_field_name("name")
    if name is not None and name.type == "subscript":
        name = name.child_by_field_name("name") or (name.children[0] if name.children else None)
    return name.text.decode("utf-8", "replace") if name is not None else None


def _cut_by_comment(shell, command, lines) -> bool:
    r"""`srun singularity exec ... \` then a line `# bind more here`: the comment ends the command (bash
    reads no continuation inside a comment), so the step runs without the rest of its words (no image,
    no program) and every task fails at once; the lines after it run as another command (round
    seventy-three's Modalities job). Nothing is left waiting."""
    if command.node is None:
        return False
    row = command.node.end_point[0]
    if not (row + 1 < len(lines) and lines[row].rstrip().endswith("\\") and lines[row + 1].lstrip().startswith("#")):
        return False
    # only where the cut leaves no program to run: srun's own options, or a runtime without its image
    # (`srun python train.py \` then `# --resume ...`: the training still runs, one word short)
    # (a runtime cut before its image is _runtime_without_image's, with or without a comment)
    return step_program(command, shell) is None


def _runtime_without_image(shell, command) -> bool:
    """`srun singularity exec` (or apptainer's, exec or run) with no image after its options: every task stops at
    once with the runtime's usage error, nothing is left waiting. Round 450's Kempner example: a line ending
    `srun singularity exec ` without its backslash, whose image and program run as the next command."""
    program = step_program(command, shell)
    if program is None or _program_name(shell, program) not in ("singularity", "apptainer"):
        return False
    found = _container_words(command, program)
    return found is not None and found[0] is None


# An option that tells a program how many shares the work is cut into: --nsplits, --num_shards, --n-chunks
# (not --nparts or --num-partitions: a domain decomposition's count, which equals the rank count of a coupled solver)
_SHARE_COUNT = re.compile(r"(?i)^--?(n|num)[_-]?(splits?|shards?|chunks?|slices?)$")


def _shares_by_task(shell, parsed, command, own, release=None) -> bool:
    """The program is told to cut the work into as many shares as the step has tasks (`srun python
    build_parent_sample.py ... --nsplits 10` in a job of 5 nodes x 2 tasks, round 450; `--num_shards $SLURM_NTASKS`):
    each task takes its own share by its task id and ends alone, as with `--shard=$SLURM_PROCID` (_own_shard).
    Only in a job whose file shows no sign of a distributed program (the caller asks): a training may shard its
    data by rank and still meet the others in every step."""
    program = step_program(command, shell)
    if program is None:
        return False
    words = program_words(command, program)
    asked = {name: parsed.value(name) for name in _TASK_COUNTS if parsed.get(name)}
    count = srun_option(shell, own, "--ntasks", "-n")
    job = _job_tasks(asked)
    tasks = as_int(count.value) if count is not None else job
    nodes = srun_option(shell, own, "--nodes", "-N")
    if nodes is not None and as_int(nodes.value) is None:
        nodes = None  # `--nodes="$SLURM_NNODES"`: as far as the words show, the job's own nodes
    if count is None and nodes is not None and "ntasks-per-node" in asked and not before(release, "23.11"):
        # `srun -N 1 ...` in a job of --ntasks-per-node=2: srun drops the SLURM_NTASKS it read from the job's
        # environment and runs N x the per-node count (slurm_option_reset of ntasks in _opt_verify, src/srun/opt.c,
        # from slurm-23-11-0-1 to slurm-26-05-1-1; 23.02 and before keep the job's count)
        tasks = _job_tasks({"nodes": nodes.value, "ntasks-per-node": asked["ntasks-per-node"]})
    # `$SLURM_NTASKS` is expanded by the batch shell: the job's count, the step's only where they agree
    by_name = count is not None or nodes is None or tasks == job
    for at, word in enumerate(words):
        name, equals, value = (word.value or word.raw.strip("\"'")).partition("=")
        if not _SHARE_COUNT.match(name):
            continue
        raw = value if equals else (words[at + 1].raw if at + 1 < len(words) else "")
        if _JOB_TASKS.match(raw) and by_name or tasks is not None and as_int(raw.strip("\"'")) == tasks:
            return True
    return False


# A hello-world program by its name (hello.py, hello_world, hello-world.sh): each task prints and ends
_HELLO = re.compile(r"(?i)^hello([-_.]|$)")
# a hello world of a communication library by its name (hello_mpi, hello_world_nvshmem): its ranks meet
_COUPLED_NAME = re.compile(r"(?i)mpi|shmem|nccl|rccl|upc|coarray|caf|dist|ddp|horovod|gasnet")


_PYTHON_VALUE_OPTIONS = {"-W", "-X"}


def _hello_program(shell, command) -> bool:
    """`srun -N 2 python3 hello.py` (round 436's HyperPod samples) in a file that shows no sign of MPI or a
    distributed program (the caller asks): each task prints its greeting and ends; no task waits for another. An
    MPI hello world (`srun ./hello_world_mpi` after `module load openmpi`) shows its sign and stays reported."""
    program = step_program(command, shell)
    if program is None:
        return False
    name = _program_name(shell, program)
    word = program
    if name.startswith("python"):  # `python3 -W ignore hello.py`: -W and -X take the next word (python(1))
        words = program_words(command, program)
        at = _first_operand(words, 0, _PYTHON_VALUE_OPTIONS)
        word = words[at] if at < len(words) else None
    text = (word.value or word.raw).strip("\"'") if word is not None else ""
    base = text.rsplit("/", 1)[-1]
    return _HELLO.match(base) is not None and _COUPLED_NAME.search(base) is None


# A --multi-prog configuration line the script writes (a here-document's line, or echo/printf's text): task ids and
# the program they run (srun.1, MULTIPLE PROGRAM CONFIGURATION: "0-3,6,8-10 ./a.out")
_CONF_LINE = re.compile(r"(?m)^\s*(?:(?:echo|printf)\s+(?:-[ne]+\s+)?[\"']?)?([0-9]+(?:[-,][0-9]+)*)\s+([./\w$-]+)")


# `python run.py $SLURM_PROCID`, `./fit.sh \$SLURM_PROCID`: the task id as a program's bare argument (the word
# before it no option, no NAME=, no launcher's)
_BARE_TASK_ID = re.compile(r"(?:^|\s)(?!-)[^\s=]+\s+[\"']?\\?\$\{?SLURM_PROCID\}?[\"']?(?=\s|[\"';]|$)")


def _task_id_argument(command) -> bool:
    """The step hands each task its own id as a bare argument of its program (round 515's CaImAn job: `srun bash -c
    '... python online_testing.py $SLURM_PROCID'`, each task one dataset), in a file that shows no sign of a
    distributed program (the caller asks): a farm of copies that each take their own share. A rank handed over by
    name (`--node_rank $SLURM_PROCID`, `RANK=$SLURM_PROCID`: read rounds 421-521, every one judged true) stays
    reported."""
    return _BARE_TASK_ID.search(" ".join(a.raw for a in command.args)) is not None


def _multi_prog(shell, own) -> bool:
    """`srun --multi-prog tasks.conf` in a file that shows no sign of MPI or a distributed program (the caller
    asks): the step runs a different program or argument per task from a configuration file (srun.1, MULTIPLE
    PROGRAM CONFIGURATION, at slurm-22-05-0-1 and slurm-26-05-1-1), a task farm of separate processes (rounds 472
    and 481: Julia experiments, per-file NCO scripts; no true finding of the shape in the read rounds). MPMD MPI
    (a coupled model under `module load cray-mpich`) shows its sign and stays reported, and so does a configuration
    the script writes itself (a here-document, echo or printf) with several programs, one over a range of task ids
    (`0-127 ./atmos.exe`, `128-447 ./ocean.exe`: a review's probe); one program over ranges is a farm."""
    if not own.has_flag("--multi-prog"):
        return False
    def mpmd() -> bool:  # once per script: a file of 10,000 such steps stays linear
        text = shell.root.text.decode("utf-8", "replace").replace("\\n", "\n") if shell.root is not None else ""
        # a program by its path or file name (`./atmos.exe`, `/opt/bin/ocean`), not a word of a data file
        lines = [(ids, program) for ids, program in _CONF_LINE.findall(text) if "/" in program or "." in program]
        # several programs, one of them over a range of task ids: an MPMD program's components (`0-127 ./atmos.exe`,
        # `128-447 ./ocean.exe`); one program over ranges (`0-31 ./chunk.sh %t`) is a farm
        return len({program for _, program in lines}) >= 2 and any("-" in ids for ids, _ in lines)
    return not shell.once("multi-prog MPMD", mpmd)


def check(target):
    shell = target.script.shell
    lines = target.script.parsed.lines
    for a in shell.assignments:  # a name srun never reads: the steps are not killed
        if a.name == "SLURM_KILL_ON_BAD_EXIT" and a.exported:
            yield (target.script.display, a.line, a.col, "srun reads SLURM_KILL_BAD_EXIT, not SLURM_KILL_ON_BAD_EXIT: "
                   "this setting does nothing")
    # SLURM_KILL_BAD_EXIT=1 in the environment is srun's --kill-on-bad-exit=1 for every step
    if any(a.name == "SLURM_KILL_BAD_EXIT" and a.value == "1" and a.exported for a in shell.assignments):
        return
    hinted = _FILE_SIGNS.search("\n".join(lines)) is not None  # once per file: linear
    for command in shell.named("srun"):
        own = own_options(command, shell)  # `srun ... reframe -n NAME`: -n is reframe's, not srun's
        kill = srun_option(shell, own, "--kill-on-bad-exit", "-K")
        if kill is not None or _ends_after_first_exit(shell, own) or _under_timeout(shell, command, target.script.parsed) \
                or refused_task_count(command, shell, bool(target.script.parsed.template_lines)) \
                or exceeds_job_nodes(own, target.script.parsed, shell):  # no task starts
            continue
        component = _step_component(shell, target.script.parsed, own)
        if component is not None and _one_task(shell, component, own, target.strict) \
                or _templated_program(command) or _templated_count(shell, target.script.parsed, own) \
                or _cut_by_comment(shell, command, lines) or _runtime_without_image(shell, command) \
                or _independent(shell, command) or (not target.strict and _aborts_every_rank(command)) \
                or (not target.strict and _never_waited(shell, command)) \
                or (not target.strict and not hinted and _opaque_script(shell, command)) \
                or not target.strict and not hinted and (_shares_by_task(shell, target.script.parsed, command, own,
                                                                          target.release)
                                                         or _hello_program(shell, command) or _multi_prog(shell, own)
                                                         or _task_id_argument(command)):
            continue
        yield (target.script.display, command.line, command.col,
               _MESSAGE)


# Services that run until they are stopped: an interactive session's notebook or TensorBoard (INTERACTIVE_SERVERS),
# and the scheduler and workers of a task farm that serves it (Dask's, IPython parallel's). A job built around one
# ends by scancel or its time limit; their exit status is not its result (round three hundred and fifty-seven's
# ULHPC Jupyter and Dask session, and `mpirun --np 8 dask-mpi ...` kept up by `sleep 36000`).
_SERVICES = _FARM_WORKERS | {"dask-scheduler", "dask-mpi", "ipcontroller", "ipcluster"}
_SERVICE_SUBCOMMANDS = {"dask": (("scheduler",), *_FARM_SUBCOMMANDS["dask"])}
# jupyter's subcommands that run a notebook to its end (work), not a server or a listing
_JUPYTER_WORK = {"nbconvert", "execute", "run", "nbclassic-run"}


def _served_words(shell, command) -> list[str]:
    """The words of the program a command runs, from the program on: srun's step program, the program inside
    `apptainer|singularity exec|run IMAGE`, python's -m module, or the command itself in the batch shell; a
    command string's words (`singularity run IMG "jupyter lab --port 8888"`) split."""
    if command.name == "srun":
        program = step_program(command, shell)
        words = program_words(command, program, with_program=True) if program is not None else []
    else:
        words = [command] + list(command.args)
    texts = []
    for word in words:
        # a text over several lines keeps its line ends (its value joins them with blanks)
        text = word.name if word is command else \
            (word.raw if "\n" in word.raw or word.value is None else word.value)
        texts.extend(re.findall(r"\n|[^\s]+", text.strip("\"'")) or [""])  # line ends kept: a shell's text splits there
    name = texts[0].rsplit("/", 1)[-1] if texts else ""
    if name in _RUNTIMES and texts[1:2] and texts[1] in ("exec", "run"):
        rest = [Word(t, t, 0, 0) for t in texts]
        at = _first_operand(rest, 2, _RUNTIME_VALUE_OPTIONS) + 1  # past the image
        return _served_words_of(texts[_first_operand(rest, at, _RUNTIME_VALUE_OPTIONS):])
    return _served_words_of(texts)


def _served_words_of(texts: list[str]) -> list[str]:
    """`python -m jupyter lab` is `jupyter lab`; `bash -c ". conda.sh && conda activate base && jupyter-lab"` is its
    last command where every command before it only sets the shell up (_SHELL_SETUP: round 505's Dask session in a
    container; `python prep.py && jupyter lab` is no service, `torchrun ... && timeout 300 rsync` no bounded step:
    a review's probes), past an `exec`; anything else as it is. A loop, not a recursion: shells nest."""
    while texts:
        while texts and texts[0] == "\n":
            texts = texts[1:]
        if not texts:
            break
        base = texts[0].rsplit("/", 1)[-1]
        if base.startswith("python") and texts[1:2] == ["-m"]:
            texts = texts[2:]
            continue
        if base in ("bash", "sh") and len(texts) > 2 and texts[1] in ("-c", "-lc", "-l"):
            rest = texts[2:] if texts[1] != "-l" else texts[3:] if texts[2:3] == ["-c"] else []
            commands, current = [], []
            # a `;` glued between two words (`cd /work;dask-worker`) parts them too
            rest = [part for word in rest for part in re.split(r"(?<=;)(?=.)", word)]
            for word in rest:  # split at && ; and line ends (the text's words, split on blanks before)
                if word in ("&&", ";", "\n"):
                    commands.append(current)
                    current = []
                elif word.endswith(";"):
                    current.append(word[:-1])
                    commands.append(current)
                    current = []
                else:
                    current.append(word)
            commands = [c for c in commands + [current] if c]
            if not commands or not all(c[0].rsplit("/", 1)[-1] in _SHELL_SETUP for c in commands[:-1]):
                return [t for t in texts if t != "\n"]
            texts = commands[-1][1:] if commands[-1][0] == "exec" else commands[-1]
            continue
        return [t for t in texts if t != "\n"]
    return texts


# What a shell's text does before its program to set itself up: a job script's set-up (base.SETUP), not an eval,
# which may run anything
_SHELL_SETUP = SETUP - {"eval"}


def session_tool(shell, command) -> bool:
    """The command runs an interactive server's program (jupyter, tensorboard, code-server: a server, or a
    listing such as `jupyter kernelspec list`), not a notebook run to its end (`jupyter nbconvert --execute`)."""
    words = _served_words(shell, command)
    name = words[0].rsplit("/", 1)[-1] if words else ""
    return name in INTERACTIVE_SERVERS and not (name == "jupyter" and words[1:2] and words[1] in _JUPYTER_WORK)


def runs_service(shell, command) -> bool:
    """The command serves until it is stopped: an interactive server (session_tool), a task farm's scheduler
    or worker (_SERVICES, `dask scheduler|worker`), also through srun, a container or an MPI launcher."""
    words = _served_words(shell, command)
    name = words[0].rsplit("/", 1)[-1] if words else ""
    if name in MPI_LAUNCHERS:  # `mpirun --np 8 dask-mpi ...`: the launcher's first operand
        rest = [w for w in words[1:] if not w.startswith("-") and not w.isdigit()]
        return bool(rest) and rest[0].rsplit("/", 1)[-1] in _SERVICES
    if name in _SERVICES or session_tool(shell, command):
        return True
    return any(tuple(words[1:1 + len(sub)]) == sub for sub in _SERVICE_SUBCOMMANDS.get(name, ()))


def interactive_session(shell) -> bool:
    """The job serves an interactive session: it starts an interactive server in the background (`srun jupyter
    notebook ... &`, `singularity run IMG "jupyter lab" &`), and the person using it ends the job (scancel, or
    the time limit)."""
    def find():
        text = shell.root.text if shell.root is not None else b""
        if not any(name.encode() in text for name in INTERACTIVE_SERVERS):
            return False  # no server named anywhere: the usual job, decided without a walk
        return any(session_tool(shell, c) and backgrounded(c) for c in shell.commands)
    return shell.once("interactive session", find)
