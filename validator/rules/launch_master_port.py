"""A fixed rendezvous port (29500) collides when jobs share a node; derive it from the job id, within 1024-32767.

Premise: two jobs on one node that bind the same TCP port: the second rendezvous fails with
"address already in use". Slurm places several jobs on a node unless the job takes the whole node:
--exclusive (JOB_SHARED_NONE, arg_set_exclusive in src/common/slurm_opt.c at slurm-22-05-0-1 and
slurm-26-05-1-1; sbatch.1 at slurm-25-11-7-1: "can not share nodes with other running jobs"), or
every GPU of it: a second job that rendezvouses needs GPUs, and none is left. The GPU count of a
node is the preset manifest's topology.gpu.per_node, else 8 (HGX and DGX boards, LUMI-G's 8 GCDs:
no common GPU node has more), or 4 when the job also takes 32 or more CPUs of the node (the
4-GPU boards of V100/A100 clusters have 32 to 64 cores: CSC Puhti, Jean Zay), or any GPU count when the
job takes 128 or more CPUs of the node (round sixty-three: --gres=gpu:2 --cpus-per-task=256 on VSC-5's
2-A100 nodes; most GPU nodes have 64 to 128 cores, and no true finding judged so far took more than
20 CPUs): a heuristic, the node's real size is not in the script; 4 GPUs with a few CPUs still leave
room for another job, but on the many 4- and 6-GPU nodes (Perlmutter, Leonardo Booster, JUWELS
Booster, Polaris, GH200 nodes, Summit) 4 or more GPUs are the whole node: with no manifest to say the
node's size, a fixed port there is reported by the strict profile only. --mem=0 takes all the
memory of each node: no job fits beside it either. A job that asks no GPU yet starts several processes a node
(torchrun --nproc-per-node=3, no --gres) is written for a site that hands out GPUs with whole nodes
(base.unasked_gpu_launcher; round 421's TACC Lonestar6 jobs: three port findings judged false): strict only.
A port that is not ASCII digits ('²') is no port at all (int() refuses it) and is
reported on any job; so is one below 1024 or above 65535.
A port from 32768 to 60999 lies in the range Linux hands out to outgoing connections (ip_local_port_range,
32768-60999 by default since kernel commit 07f4c90062f8, 32768-61000 before; Documentation/
networking/ip-sysctl): a connection any process of the node opened can hold it when the rendezvous
binds. Where jobs share the node that is one more way to collide, and reported; on a node the job
has to itself only its own and the system's few connections can, a rare event: strict profile only
(round eighty-four: three such findings judged false on --exclusive jobs; round forty-seven's one
judged true on a whole 4-GPU node).
A MASTER_PORT exported (or set) in a job of one process is not reported by the default profile: one
node, one task (every task option unsaid or 1, no heterogeneous job), at most one GPU, and no program
in the script that starts or joins several processes (torchrun, torch.distributed.launch, the MPI
launchers but one whose count is a literal 1 (`mpirun -np 1`, round 463), accelerate, deepspeed, the CLIs that start
torchrun, an srun asking more than one task),
nor one it does not show (a command run through a variable). torch binds the port
only where a process group is made (init_process_group's env:// rendezvous reads MASTER_PORT and rank 0
hosts the TCPStore there: _env_rendezvous_handler and _create_c10d_store in torch/distributed/rendezvous.py
at torch 2.13.0);
a single process on one GPU rarely makes one (read rounds 171, 184, 209 and 220: five such exports
judged false, a plain program that read nothing, a Lightning Trainer on one device; round 180's one
true: lm_eval's Megatron model makes a group of one). A launcher's own --master_port or
--rdzv-endpoint is still reported there: the launcher binds it. Strict profile: reported.
A MASTER_PORT exported where torchrun (or torch.distributed.launch, its older name: the same parser and run(),
torch/distributed/launch.py at torch 2.13.0) is the only program that could read it is never read: the launcher takes
its port from --master-port or PET_MASTER_PORT and sets each worker's MASTER_PORT itself (`_start_workers` in
torch/distributed/elastic/agent/server/local_elastic_agent.py). Where that launcher names no port, endpoint, other
backend or --standalone and joins more than one node (--nnodes above 1), it binds its default, 29500 (the static
rendezvous at master_addr:master_port): the finding is said on the launcher's line, not the export's. On one node it
binds no fixed port: run() switches the static rendezvous to c10d at localhost:0 (torch 2.13.0), so nothing is said
(round 546: two such exports judged false; round 166's export judged true was judged for a port no launch binds
there now).
Holds for: every release (22.05-26.05).
"""
import re

from validator.rules.base import (GOOD_BATCH, MPI_LAUNCHERS, as_int, bad_batch, enclosing_command,
                                  enclosing_command_name, gres_gpus, is_decimal, launcher_commands, maybe_whole_nodes,
                                  non_ascii_number, read_beyond_parse, unasked_gpu_launcher,
                                  whole_nodes)
from validator.rules import torchrun
from validator.rules.srun import TASK_OPTIONS, read_options, srun_commands

ID = "launch-master-port"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = ('A fixed rendezvous port (29500) collides when jobs share a node (not with --exclusive or every GPU '
               'of the node); derive it from the job id, within 1024-32767.')
GOOD = {"run.sbatch": GOOD_BATCH}
# two of the node's GPUs: another job can land beside it
BAD = {"run.sbatch": bad_batch("export MASTER_PORT=$(( 20000 + SLURM_JOB_ID % 12000 ))", "export MASTER_PORT=29500")
       ["run.sbatch"].replace("#SBATCH --gpus-per-task=8", "#SBATCH --gpus-per-task=2", 1)}
_PORT = re.compile(r":([0-9]+)$")
# localhost:0: the rendezvous store on this host takes any free port the kernel gives it (what
# torchrun --standalone itself uses: run() in torch/distributed/run.py, torch 2.13.0): no fixed port.
_LOCAL_ANY_PORT = re.compile(r"(localhost|127\.0\.0\.1):0$")
# A literal port in a launcher's arguments anywhere in the script, also inside a string
# (LAUNCHER="accelerate launch --main_process_port 29500 ..."): `--master_port 6000`, `:29500`
_TEXT = re.compile(r"(?:--(?:master|main)[_-](?:process[_-])?port[= ]+|rdzv[_-]endpoint[= ]+[^\s:]*:)([0-9]+)\b")



_FIXED = "fixed port"
_EPHEMERAL = "in the ephemeral range"


def _judge(value):
    port = as_int(value, digits=6)
    if port is not None and 32768 <= port <= 60999:
        return (f"port {port} is {_EPHEMERAL} (32768-60999: Linux gives these ports to outgoing connections); "
                "use one within 1024-32767 derived from SLURM_JOB_ID")
    if port is None or not 1024 <= port <= 65535:
        shown = value if port is not None else value[:12] + "..."
        return f"port {shown} is outside 1024-65535 (below 1024 only root may bind; above 65535 is no TCP port)"
    return f"{_FIXED} {port} collides when two jobs share a node; derive it from SLURM_JOB_ID"


def _kept(message: str, whole: bool, strict: bool) -> bool:
    """On a node the job has to itself, a fixed port collides with no other job, and an ephemeral one
    only with the node's own outgoing connections (rare: strict profile)."""
    return not whole or not (message.startswith(_FIXED) or _EPHEMERAL in message and not strict)


def check(target):
    script = target.script
    whole = whole_nodes(target) or not target.strict and (maybe_whole_nodes(target) or unasked_gpu_launcher(script))
    found = [f for f in _findings(script, exported_ignored=not target.strict and _one_process(script))
             if _kept(f[3], whole, target.strict)]
    reported = {line for _, line, _, _ in found}
    yield from found
    # the lines of elastic launchers (a c10d rendezvous): their --master-port is never read
    elastic = {n for c in launcher_commands(script.shell) if _elastic(c, script.shell) and c.node is not None
               for n in range(c.node.start_point[0] + 1, c.node.end_point[0] + 2)}
    for number, line in enumerate(script.parsed.lines, start=1):
        if line.lstrip().startswith("#") or number in reported:
            continue
        for match in _TEXT.finditer(line):
            if number in elastic and "rdzv" not in match.group(0):
                continue
            if match.group(1) == "0" and _LOCAL_ANY_PORT.search(line[max(0, match.start(1) - 12):match.end(1)]):
                continue
            message = _judge(match.group(1))
            if _kept(message, whole, target.strict):  # else a later port of the line may still be wrong
                yield (script.display, number, match.start(1) + 1, message)
                break


def _literal_port(value):
    """A message for a literal port value, or None when it is no literal (an expansion, empty) or no
    number at all. Only ASCII digits make a port: str.isdigit() also accepts '²', which int() refuses."""
    if not value:
        return None
    if is_decimal(value):
        return _judge(value)
    return non_ascii_number(value)


def _elastic(command, shell) -> bool:
    """torchrun with a rendezvous backend other than static (c10d, etcd), also given through an array
    (`torchrun ${DISTRIBUTED_ARGS[@]}`): its --master-port is never read (get_rdzv_endpoint() builds
    master_addr:master_port only for rdzv_backend "static", and run() notes "master_port is only used
    for the static rendezvous backend, not c10d": torch/distributed/run.py at torch 2.13.0; round
    thirty-two: --master_port beside a c10d endpoint)."""
    backend = torchrun.option(command, "rdzv_backend") \
        or torchrun.hidden_option(shell, command, "--rdzv-backend", "--rdzv_backend")
    return backend is not None and backend.value not in (None, "", "static")


# Programs other than torchrun that start processes which may read MASTER_PORT from the environment: the MPI
# launchers (base.MPI_LAUNCHERS), DeepSpeed, accelerate, jsrun, Lightning's CLI
_STARTERS = MPI_LAUNCHERS | {"deepspeed", "accelerate", "jsrun", "lightning"}
# A program other than torchrun that may read MASTER_PORT (torch's env:// rendezvous in a plain python, or
# one of _STARTERS); `python -m torch.distributed.run` is torchrun
# (`python3 -m venv ENV`, pip, ensurepip, virtualenv: tools that make an environment, read no MASTER_PORT; round
# three hundred and seventy-one)
_OTHER_READER = re.compile(r"(?<![\w./-])(?:python[0-9.]*(?!\s+-m\s+(?:torch\.distributed\.(?:run|launch)|venv|pip"
                           r"|ensurepip|virtualenv)\b)|"
                           + "|".join(re.escape(n) for n in sorted(_STARTERS)) + r")(?![\w.-])")
_AS_MASTER_PORT = re.compile(r"--master[-_]port[= ]+[\"']?$")


def _logged(node) -> bool:
    """The expansion is printed to the job's log: an argument of echo or printf, not `printf -v VAR`
    and not written to a file (`echo "port: $MASTER_PORT" > dist.yaml` hands it on)."""
    command = enclosing_command(node)
    if command is None or enclosing_command_name(node) not in ("echo", "printf"):
        return False
    if any(arg.text == b"-v" for arg in command.children_by_field_name("argument")):
        return False
    parent = command.parent
    if parent is not None and parent.type == "redirected_statement":
        targets = [r.text.decode("utf-8", "replace") for r in parent.children if r.type == "file_redirect"]
        return all(t.replace(" ", "") in (">&2", "1>&2", ">/dev/stderr", ">>/dev/stderr") for t in targets)
    return True


# Programs that start or join several processes, which may read MASTER_PORT: torchrun (also as
# torch.distributed.launch/.run), _STARTERS, Horovod, the CLIs that start torchrun themselves (ColossalAI,
# Composer, TorchX, torchtune's `tune run`, LLaMA-Factory, Ray), and `deepspeed` anywhere (`python train.py
# --deepspeed ds.json`: the HF Trainer's DeepSpeed makes a process group)
_MANY_PROCESSES = re.compile(r"(?<![\w./])(?:" + "|".join(re.escape(n) for n in sorted(
    _STARTERS | {"torchrun", "torch.distributed.launch", "torch.distributed.run", "horovodrun", "colossalai",
                 "composer", "torchx", "tune", "llamafactory-cli", "ray"})) + r")(?![\w-])|deepspeed")
# Options of the job that ask for more than one task, or for tasks per GPU, socket or core; of an srun, those
# that start more than the default task (srun.TASK_OPTIONS), and those that spread it or add components
_TASK_OPTIONS = ("ntasks", "ntasks-per-node", "ntasks-per-gpu", "ntasks-per-socket", "ntasks-per-core")
_SRUN_TASKS = TASK_OPTIONS + ("-N", "--nodes", "--het-group", "--multi-prog")
_GPU_OPTIONS = ("gpus", "gpus-per-node", "gpus-per-task", "gpus-per-socket", "gres")


_MPI_COUNT = ("-np", "-n", "--np", "--n", "-c")


def _mpi_single(shell) -> bool:
    """Every MPI launcher of the script starts one process (`mpirun -np 1 python3 main.py`, round 463's K-FAC
    training): a literal count of 1 (mpirun(1): -c, -n, --n, -np all give the number of processes)."""
    launchers = [c for c in shell.commands if c.name.rsplit("/", 1)[-1] in MPI_LAUNCHERS]
    return bool(launchers) and all(_mpi_count(c) == "1" for c in launchers)


def _mpi_count(command) -> str | None:
    """The literal process count of `mpirun -np N` (`-n N`, `--np=N`, `-c N`), else None."""
    args = command.args
    for i, arg in enumerate(args):
        name, equals, value = (arg.value or "").partition("=")
        if name in _MPI_COUNT:
            return value if equals else (args[i + 1].value if i + 1 < len(args) else None)
    return None


def _one_process(script) -> bool:
    """A job of one process on at most one GPU (the module docstring). Whatever the script does not show
    plainly counts against it: a launcher or a `deepspeed` anywhere in its code, a command run through a
    variable (`$LAUNCHER train.py`, set perhaps by a sourced file), a heterogeneous job, any task option but a count
    of 1, a GPU request of more than one or of a form not read here."""
    parsed = script.parsed
    if any(option.component for option in parsed.options):
        return False  # a heterogeneous job: `srun --het-group=0,1` runs in every component
    if parsed.value("nodes") not in (None, "1", "1-1"):
        return False
    if any(option.value != "1" for name in _TASK_OPTIONS for option in parsed.get(name)):
        return False
    for name in _GPU_OPTIONS:
        for option in parsed.get(name):
            items = (option.value or "").split(",")
            counts = [gres_gpus(i) for i in items if i.split(":", 1)[0] in ("gpu", "gres/gpu")] if name == "gres" \
                else [as_int(i.rsplit(":", 1)[-1]) for i in items]  # --gpus*=[type:]count
            if any(count not in (0, 1) for count in counts):
                return False
    code = "\n".join(line for line in script.lines if not line.lstrip().startswith("#"))
    if any(found.group(0) not in MPI_LAUNCHERS for found in _MANY_PROCESSES.finditer(code)) \
            or _MANY_PROCESSES.search(code) and not _mpi_single(script.shell):
        return False
    if any(c.name.startswith("$") for c in script.shell.commands):  # `$LAUNCHER train.py`: it may be one
        return False
    for command in srun_commands(script.shell):  # a step of several tasks: `srun -n 4 python train.py`
        _, options = read_options(command, script.shell)
        if any(option in _SRUN_TASKS and (word is None or word.value not in ("1", "1-1")) for option, word in options):
            return False
    return True


def _default_port(command) -> bool:
    """A launcher that binds torchrun's default port, 29500: the static rendezvous (the default backend) of more than
    one node at master_addr:master_port, where no option of torchrun's (read as its parser reads them:
    validator/rules/torchrun.py) names a port, an endpoint, a backend other than static, or --standalone, and no word
    where an option may stand is an expansion (options the text does not show).
    With at most one node (--nnodes unsaid: "1:1") and no port or endpoint, run() switches the static rendezvous to
    c10d at localhost:0, a free port (torch/distributed/run.py at torch 2.13.0, run(): `if max_nodes == 1`), and
    binds no fixed port. The caller checks that no PET_ variable is named (argparse_util.env reads PET_MASTER_PORT)."""
    line = torchrun.read([a.value or a.raw for a in command.args], torchrun.start_of(command))
    given = line.options
    if line.unseen or torchrun.AMBIGUOUS in given or given.get("rdzv_backend", "static") != "static" \
            or any(name in given for name in ("master_port", "rdzv_endpoint", "standalone")):
        return False
    top = given.get("nnodes", "1").rsplit(":", 1)[-1]  # one node when unsaid: c10d at localhost:0
    return top.isascii() and top.isdigit() and int(top) > 1


def _findings(script, exported_ignored: bool = False):
    """exported_ignored: a MASTER_PORT the script sets is not reported (a job of one process: check())."""
    shell = script.shell
    launchers = list(launcher_commands(shell))
    # $MASTER_PORT read only as the --master-port of launchers that are all elastic: never used
    reads = [e for e in shell.expansions if e.name == "MASTER_PORT"]
    unread = bool(reads) and bool(launchers) and all(_elastic(c, shell) for c in launchers) and all(
        _AS_MASTER_PORT.search(script.lines[e.line - 1][:max(0, e.col - 1)]) for e in reads
        if 0 < e.line <= len(script.lines))
    # a read only by echo or printf to the log prints the port; nothing binds it (round thirty-nine: an
    # unexported MASTER_PORT=29500 echoed beside torchrun's own --master_port)
    used = {e.name for e in shell.expansions if not _logged(e.node)}
    # exported but read by nothing when torchrun is the only launcher: torchrun takes its port from
    # --master-port or PET_MASTER_PORT (env() in torch/distributed/argparse_util.py at torch 2.13.0:
    # "Get argument values from PET_{dest}"),
    # default 29500, and sets each worker's MASTER_PORT itself (round ninety-seven)
    # (read also where the parse sees no expansion: `$MASTER_PORT` in a single-quoted `bash -c` payload)
    code = "\n".join(line for line in script.lines if not line.lstrip().startswith("#"))
    # (torch.distributed.launch is torchrun with the same parser and run(): torch/distributed/launch.py at torch
    # 2.13.0; its workers get MASTER_PORT from the agent too, local_elastic_agent.py's _start_workers; round 546)
    every = list(launcher_commands(shell, legacy=True))
    dead_export = bool(every) and "MASTER_PORT" not in used \
        and not _OTHER_READER.search(code) \
        and not read_beyond_parse(script, "MASTER_PORT")
    defaulted = []  # launchers that bind their default port while the script exports one they never read
    for a in shell.assignments:
        # a literal, or the default of ${MASTER_PORT:-29500}; the text of another expansion is no port
        message = _literal_port(a.value) if is_decimal(a.value) or "$" not in a.raw else None
        if dead_export and message and (message.startswith(_FIXED) or _EPHEMERAL in message):
            if a.name == "MASTER_PORT" and a.exported and not defaulted:
                defaulted = [c for c in every if not torchrun.pet_named(shell) and _default_port(c)] or [None]
            continue  # a well-formed port nothing binds (a value that is no port at all is still said)
        if a.name == "MASTER_PORT" and message and (a.exported or (a.name in used and not unread)) \
                and not (exported_ignored and (message.startswith(_FIXED) or _EPHEMERAL in message)):
            yield (script.display, a.line, a.col, message)
    for command in (c for c in defaulted if c is not None):
        name = "torch.distributed.launch" if [a.value for a in command.args[:2]] == ["-m", "torch.distributed.launch"] \
            else "torchrun"
        yield (script.display, command.line, command.col,
               f"{_FIXED} 29500, {name}'s default, collides when two jobs share a node (the exported MASTER_PORT "
               f"is never read: {name} takes --master-port or PET_MASTER_PORT); pass --master-port derived from "
               "SLURM_JOB_ID")
    for command in launchers:
        if _elastic(command, shell):
            continue
        word = torchrun.option(command, "master_port")
        message = _literal_port(word.value) if word is not None else None
        if message:
            yield (script.display, word.line, word.col, message)
    for command in launchers:
        word = torchrun.option(command, "rdzv_endpoint")
        if word is not None and word.value and _PORT.search(word.value) and not _LOCAL_ANY_PORT.match(word.value):
            yield (script.display, word.line, word.col, _judge(_PORT.search(word.value).group(1)))
