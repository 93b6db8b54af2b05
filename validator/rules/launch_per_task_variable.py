"""Per-task variables (SLURM_NODEID, SLURM_PROCID, SLURM_LOCALID, SLURM_GPUS_ON_NODE) expanded in the batch shell, where they describe node 0 only.

Premise: SLURM_NODEID, SLURM_PROCID and SLURM_LOCALID are set per task by slurmstepd (setup_env in
src/common/env.c at slurm-22-05-0-1 and slurm-26-05-1-1), SLURM_GPUS_ON_NODE per node
(gres_common.c); in the batch shell they are node 0's, task 0's. Holds for: 22.05-26.05.
Not reported where node 0's value does no harm:
- a one-node job (--nodes=1) of one task per node (asked for, or by default: no option that sets
  the task count, nor --cpus-per-task, which changes the default; sbatch.1, -n), or SLURM_NODEID /
  SLURM_GPUS_ON_NODE on one node: node 0's value is the only one;
- the value is passed as torchrun's --node_rank with --rdzv_backend c10d: torchrun gives the
  rendezvous the node rank only for the static backend (torch/distributed/run.py at torch 2.13.0, config_from_args:
  `if args.rdzv_backend == "static": rdzv_configs["rank"] = args.node_rank`); the c10d rendezvous
  assigns ranks itself. Without a backend it is static, and reported. accelerate's --machine_rank
  with --rdzv_backend c10d likewise: its multi-GPU launcher and DeepSpeed's "standard" launcher hand
  it to torch.distributed.run as node_rank (prepare_multi_gpu_env, prepare_deepspeed_cmd_env in
  src/accelerate/utils/launch.py, the same lines at the v1.13.0 and v1.14.0 tags and at main
  16cb6eb8), and the pdsh launcher never reads it; only DeepSpeed's "nossh" launcher passes it on
  as the node rank, reported where the words say nossh (round forty's ESM guidance and round two's
  alignment handbook: judged false);
- `CUDA_VISIBLE_DEVICES=$SLURM_LOCALID` (or ROCR_VISIBLE_DEVICES, ZE_AFFINITY_MASK, GPU_DEVICE_ORDINAL) in
  a job that asks for GPUs (`--gres=gpu...`, `--gpus*`, `--ntasks-per-gpu`), reads the name nowhere else and
  runs no GPU program in the batch shell itself (torchrun, mpirun, python there inherit the value as set):
  slurmstepd writes these in every step's environment, the step's GPUs where it has some on the node and
  unset where it has none (gres_common_gpu_set_env in src/plugins/gres/common/gres_common.c at
  slurm-22-05-0-1 and slurm-26-05-1-1: env_array_overwrite or unsetenvp), so the batch shell's value
  never reaches a task (round three hundred and ninety-nine: `--gres=gpu:1` beside 7 tasks). A site whose
  gres.conf says Flags=no_gpu_env sets none: not shown by the script, not modelled. Per task
  where GPUs are bound per task (--ntasks-per-gpu, --gpus-per-task: sbatch.1 at slurm-26-05-3-1);
- a path in a node's own folder (`TRITON_CACHE_DIR=/tmp/triton_cache_${SLURM_PROCID}`, round three hundred
  and ninety-five; /tmp/ or /dev/shm/ as written, not $TMPDIR, which a site or the script may point at a shared
  folder) in a job of one task per node (--ntasks-per-node=1, no heterogeneous component, no SLURM_NTASKS*
  set for srun to read, no MPI launcher in the batch shell, every srun asking for no more): every node's task
  gets its own folder, on its own disk;
- the value is assigned (whole, or as a part: `prof="rank_${SLURM_PROCID}.prof"`) to a variable that nothing
  reads but echo/printf, torchrun's --node_rank
  beside --rdzv_backend c10d, or the value of another variable that nothing reads (and that is not
  exported, or exported in a script whose launcher uses the c10d rendezvous);
- in the default profile, the value is assigned to an exported variable that nothing in the script
  reads: what the step's program makes of it is not in the file; it may take its rank from the
  task's own SLURM_PROCID (round eighty-nine: `export JAX_PROCESS_INDEX=$SLURM_PROCID` beside
  jax.distributed.initialize(), which reads SLURM_PROCID per task) or run a wrapper that exports the
  task's own values again (round eighty-four: OLMo's run_with_environment.sh). Read rounds: 10 such
  findings judged false, none true (the true ones pass the value on the step's command line). Not
  the device lists (CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES,
  ZE_AFFINITY_MASK), which the GPU runtime reads in every process of the step, nor RANK, which
  torch.distributed's env:// rendezvous reads; nor a variable whose `$NAME` stands in text a step's
  shell expands (a single-quoted `bash -c` payload, a quoted heredoc). The strict profile keeps
  them all;
- the expansion is inside a function the script exports (`export -f run_node`, run by
  `srun bash -c run_node`): each task runs the function and expands its own value;
- in a script nobody here wrote (the default profile), anywhere but a launcher's node rank (torchrun's or
  torch.distributed.launch's --node_rank, accelerate's --machine_rank, written after the option or held by a
  variable that is: _node_rank), whose use is in the launcher's source; a program's own --rank, an exported RANK,
  a test in the batch shell are the program's or the author's affair, which the file does not show (programs often
  read their task's own SLURM_PROCID: rounds 412, 434 and 546, five findings judged false; round 511's one true;
  blind read rounds from 411: 1 true, 10 false). The strict profile keeps them all;
- in a script nobody here wrote (the default profile), the value is printed directly by echo or
  printf, also on an echo line of a heredoc the job writes for its steps: a line of the log, not the
  job's work (round twenty: a sanity print of $SLURM_NODEID judged false; round twenty-six: 4 of 4 on
  such heredoc echo lines). Our presets (the strict profile) keep it: a log line that says node 0 for every node misleads.
"""
import re

from validator.rules.base import (GOOD_BATCH, MPI_LAUNCHERS, WORK_PROGRAMS, bad_batch, declared_names, enclosing,
                                  exported_functions, gres_gpus, is_batch_script, launcher_commands, read_beyond_parse,
                                  reads_unseen, srun_option)
from validator.rules.srun import TASK_OPTIONS, own_options
ID = "launch-per-task-variable"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = ('Per-task variables (SLURM_NODEID, SLURM_PROCID, SLURM_LOCALID, SLURM_GPUS_ON_NODE) expanded in the '
               'batch shell, where they describe node 0 only (not on one node, nor as torchrun\'s node rank with c10d).')
GOOD = {"run.sbatch": GOOD_BATCH}
BAD = bad_batch("set -euo pipefail\n", 'set -euo pipefail\nsrun --kill-on-bad-exit=1 torchrun --nnodes="$SLURM_NNODES" '
                '--node_rank="$SLURM_NODEID" --master_addr="$(hostname)" --master_port=29400 prepare.py\n')


PER_TASK = {"SLURM_NODEID", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_GPUS_ON_NODE"}


def _same_on_every_node(parsed) -> bool:
    """Every node gets the same GPU request (--gpus-per-node, --gres=gpu:N, one task per node, or
    --gpus-per-task with --ntasks-per-node): node 0's SLURM_GPUS_ON_NODE is every node's."""
    if parsed.get("gpus-per-node") or any("gpu" in (o.value or "") for o in parsed.get("gres")):
        return True
    return parsed.value("ntasks-per-node") == "1" or (bool(parsed.get("gpus-per-task"))
                                                     and bool(parsed.get("ntasks-per-node")))


_PER_NODE = {"SLURM_NODEID", "SLURM_GPUS_ON_NODE"}
_C10D = re.compile(r"rdzv[_-]backend[= ]+[\"']?c10d\b")
# A launcher's node-rank option just before the value: torchrun's --node-rank (torch.distributed.launch's, the same
# parser), accelerate's --machine_rank (handed to torch.distributed.run as node_rank), argparse's spellings of both,
# and the prefixes torchrun's argparse takes for its own (`--node_`, `--node_r`: the only option strings they start;
# `--node` is ambiguous, torchrun.resolve; a review's probe)
_NODE_RANK_SPELLING = r"--(?:node[_-](?:r(?:a(?:nk?)?)?)?|machine[_-]rank)"
_NODE_RANK_OPTION = re.compile(_NODE_RANK_SPELLING + r"(?:=|[ \t]+)[\"']?$")
_PRINTS = {"echo", "printf"}
# Read in every process of the step whatever the program's code: the device lists by the CUDA, ROCm and
# Level Zero runtimes; RANK by torch.distributed's env:// rendezvous (the default init_method), which
# takes it from the environment when init_process_group is given no rank (_env_rendezvous_handler in
# torch/distributed/rendezvous.py at torch 2.13.0: `rank = int(_get_env_or_raise("RANK"))`)
_READ_BY_RUNTIME = {"CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ZE_AFFINITY_MASK",
                    "RANK"}


# Options that set a job's task count, or change sbatch's default of one task per node ("The default is
# one task per node, but note that the --cpus-per-task option will change this default": sbatch.1, -n,
# at slurm-22-05-0-1 and slurm-26-05-1-1)
_TASK_COUNT_OPTIONS = ("ntasks", "ntasks-per-node", "ntasks-per-socket", "ntasks-per-core",  # and --tasks-per-node
                       "ntasks-per-gpu", "gpus-per-task", "cpus-per-task")


def _one_value(parsed, name: str, shell=None) -> bool:
    """One node, and for per-task names one task on it: asked for, or sbatch's default where no
    directive sets the task count and no srun of the script asks for more tasks itself (round one
    hundred and sixty-three's one-node `srun python task5.py`; `srun -n 4` in an --exclusive job runs
    four). Node 0's value is then the only one."""
    if parsed.value("nodes") not in ("1", "1-1"):
        return False
    if name in _PER_NODE or "1" in (parsed.value("ntasks-per-node"), parsed.value("ntasks")):
        return True
    if any(parsed.get(option) for option in _TASK_COUNT_OPTIONS) or shell is None:
        return False
    return not shell.once("an srun asks for tasks", lambda: any(  # once per script: linear
        srun_option(shell, command, *TASK_OPTIONS) is not None for command in shell.named("srun")))


def _c10d_rank(expansion, data: bytes, seen: dict) -> bool:
    """The expansion is the value of --node_rank/--machine_rank in a command or string that also
    says --rdzv_backend c10d (each scope's text searched once: `seen`)."""
    node = expansion.node
    if node is None:
        return False
    line_start = data.rfind(b"\n", 0, node.start_byte) + 1
    if not _NODE_RANK_OPTION.search(data[line_start:node.start_byte].decode("utf-8", "replace")):
        return False
    scope = enclosing(node, ("string", "raw_string", "command", "program"))
    if scope is not None and scope.type == "string":
        # a quoted argument (`"$SLURM_NODEID"`), also glued to its option (`--node-rank="$SLURM_NODEID"`, a
        # concatenation): the command's other words say the backend (round 321)
        word = scope.parent.parent if scope.parent is not None and scope.parent.type == "concatenation" \
            else scope.parent
        if word is not None and word.type == "command":
            scope = word
    if scope is None:
        return False
    key = (scope.start_byte, scope.end_byte)
    if key not in seen:
        text = scope.text.decode("utf-8", "replace")
        seen[key] = bool(_C10D.search(text)) and "nossh" not in text
    return seen[key]


def _read_beyond_printing(script, names: set, rank_only=lambda expansion: False) -> set:
    """Those of `names` that something other than echo/printf reads (or `rank_only`: torchrun's node
    rank under c10d, which it ignores): one pass over the expansions."""
    out = set()
    for expansion in script.shell.expansions:
        if expansion.name in names and expansion.name not in out and not rank_only(expansion):
            command = enclosing(expansion.node, ("command", "program"))
            called = command.child_by_field_name("name") if command is not None and command.type == "command" else None
            if called is None or called.text.decode("utf-8", "replace") not in _PRINTS:
                out.add(expansion.name)
    return out


def _printed(expansion) -> bool:
    """The expansion is an argument of echo or printf (not inside a $( ) that feeds another command)."""
    command = enclosing(expansion.node, ("command", "program", "command_substitution"))
    called = command.child_by_field_name("name") if command is not None and command.type == "command" else None
    return called is not None and called.text.decode("utf-8", "replace") in _PRINTS


def _printed_in_heredoc(expansion, lines: list[bytes]) -> bool:
    r"""The expansion sits in an unquoted heredoc (a script the job writes for its steps) on a line
    that is an echo or printf of that script, with nothing before it that starts another command
    (`;`, `&&`, `||`, `|`, `$(`): the batch shell's value lands in a log line only (round twenty-six:
    `echo "Task \${SLURM_PROCID}: RANK=${SLURM_PROCID}"` beside the escaped `export RANK=\$SLURM_PROCID`
    that the training reads). `lines` are the script's bytes split at newlines, as tree-sitter counts."""
    if enclosing(expansion.node, ("heredoc_body",)) is None or not 0 < expansion.line <= len(lines):
        return False
    line = lines[expansion.line - 1].decode("utf-8", "replace")
    before = line[:max(0, expansion.col - 1)]
    words = before.split(None, 1)
    return bool(words) and words[0] in _PRINTS and not _NEW_COMMAND.search(before)


_NEW_COMMAND = re.compile(r";|&&|\|\||\||\$\(|`")


def _in_exported_function(node, exported: set) -> bool:
    function = enclosing(node, ("function_definition",))
    name = function.child_by_field_name("name") if function is not None else None
    return name is not None and name.text.decode("utf-8", "replace") in exported


def _part_of_unread(script, expansion, exported: set) -> bool:
    """The expansion is part of the value of a variable (`prof="rank_${SLURM_PROCID}.prof"`) that nothing in the file
    can read: not exported or declared, never expanded, no bare name of it in arithmetic (`$(( offset * 7 ))` reads
    `offset`), and nothing that reads names unseen (base.reads_unseen: allexport, `source`, eval, `${!...}`, a dump of
    every variable; a review's probes)."""
    name = _enclosing_assignment(expansion.node)
    if name is None or name in exported:
        return False
    if reads_unseen(script):
        return False
    return name not in script.shell.once("per-task: readers", lambda: _readers(script.shell, script.parsed.lines))


def _readers(shell, lines) -> set:
    """The names the script reads, read once: expanded, named bare inside arithmetic, or declared (a program the job
    runs may read those)."""
    read = {e.name for e in shell.expansions}
    stack = [shell.root] if shell.root is not None else []
    while stack:
        node = stack.pop()
        if node.type == "variable_name" and node.parent is not None and node.parent.type != "variable_assignment":
            read.add(node.text.decode("utf-8", "replace"))  # `(( offset * 7 ))`, `$(( n + 1 ))`: a bare name read
        stack.extend(node.children)
    return read | (declared_names(shell, lines) or set())


def _assigned_to(node) -> str | None:
    """X when the expansion is the whole value of X=$SLURM_PROCID (or export X=...)."""
    parent = node.parent if node is not None else None
    if parent is not None and parent.type == "string" and parent.named_child_count == 1:
        parent = parent.parent
    if parent is None or parent.type != "variable_assignment":
        return None
    name = parent.child_by_field_name("name")
    return name.text.decode("utf-8", "replace") if name is not None else None


def _enclosing_assignment(node) -> str | None:
    """X when the expansion is anywhere in the value of an assignment X=... (not in a $( ) that runs
    a command: that command reads it)."""
    while node is not None and node.type not in ("variable_assignment", "command_substitution", "command", "program"):
        node = node.parent
    if node is None or node.type != "variable_assignment":
        return None
    name = node.child_by_field_name("name")
    return name.text.decode("utf-8", "replace") if name is not None else None


# the device lists slurmstepd writes or unsets in each step's environment (gres_common_gpu_set_env)
_SET_BY_SLURMSTEPD = {"CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "ZE_AFFINITY_MASK", "GPU_DEVICE_ORDINAL"}
_GPU_OPTIONS = ("gpus", "gpus-per-node", "gpus-per-task", "gpus-per-socket", "ntasks-per-gpu")
# a node's own disk, by its literal path (TMPDIR may name a shared folder: a site's, or the script's own)
_NODE_LOCAL = re.compile(r"[\"']?(?:/tmp/|/dev/shm/)")
# environment srun reads as its task layout (SLURM_NTASKS_PER_NODE is --ntasks-per-node: srun.1, INPUT
# ENVIRONMENT VARIABLES)
_TASK_LAYOUT_ENV = re.compile(r"SLURM_(?:NTASKS\w*|NPROCS|TASKS_PER_NODE|CPUS_PER_TASK|DISTRIBUTION)")


def _asks_for_gpus(parsed) -> bool:
    """A GPU request by the job (`--gres=gpu:2`, `--gres=gpu:a100:1,gpu:v100:1`, `--gpus=4`), not of zero
    (`--gpus=a100:0`)."""
    if any((o.value or "").rsplit(":", 1)[-1] != "0" for name in _GPU_OPTIONS for o in parsed.get(name)):
        return True
    return any(item.split(":", 1)[0] in ("gpu", "gres/gpu") and (gres_gpus(item) or 0) > 0
               for option in parsed.get("gres") for item in (option.value or "").replace(" ", "").split(","))


def _steps_only(shell) -> bool:
    """Every program of the script that may use a GPU runs in an srun step: none in the batch shell itself
    (`torchrun`, `mpirun`, `accelerate launch`, `python eval.py`: base.WORK_PROGRAMS), whose children inherit
    the batch shell's value, which slurmstepd does not rewrite (mpirun's node-0 ranks are its own children)."""
    def none_in_batch_shell() -> bool:
        return not any(c.name.rsplit("/", 1)[-1] in WORK_PROGRAMS or c.name.rsplit("/", 1)[-1].startswith("python")
                       for c in shell.commands)
    return bool(shell.named("srun")) and shell.once("no GPU program in the batch shell", none_in_batch_shell)


def _one_task_per_node(parsed, shell) -> bool:
    """--ntasks-per-node=1, and every srun of the script keeps one task per node: it asks for no task
    count, or for `--ntasks-per-node=1`, or for as many tasks as nodes (`--nodes=$NUM_NODES
    --ntasks=$NUM_NODES`, also through `srun $SRUN_ARGS`: round four hundred and seven's open-r1 fork)."""
    def one_per_node(step) -> bool:
        command = own_options(step, shell)  # srun's own words: not `bash -c` after the program
        if srun_option(shell, command, *TASK_OPTIONS) is None:
            return True
        per_node = srun_option(shell, command, "--ntasks-per-node", "--tasks-per-node")
        if per_node is not None and per_node.value == "1":
            return srun_option(shell, command, "--ntasks", "-n") is None
        tasks, nodes = srun_option(shell, command, "--ntasks", "-n"), srun_option(shell, command, "--nodes", "-N")
        others = srun_option(shell, command, *(o for o in TASK_OPTIONS if o not in ("--ntasks", "-n")))
        return tasks is not None and nodes is not None and others is None and tasks.raw == nodes.raw
    def answer() -> bool:  # once per script: linear in its expansions
        if parsed.value("ntasks-per-node") != "1" or any(option.component for option in parsed.options) \
                or any(_TASK_LAYOUT_ENV.fullmatch(a.name) for a in shell.assignments) \
                or any(c.name.rsplit("/", 1)[-1] in MPI_LAUNCHERS for c in shell.commands):
            # a heterogeneous job's other components, a layout srun reads from the environment, or ranks that
            # an MPI launcher of the batch shell places several to a node (`mpirun --map-by ppr:4:node`)
            return False
        return all(one_per_node(c) for c in shell.named("srun"))
    return shell.once("one task per node", answer)


def _node_local_value(node) -> bool:
    """The expansion is in the value of an assignment that names a path on the node's own disk."""
    while node is not None and node.type not in ("variable_assignment", "command", "program"):
        node = node.parent
    value = node.child_by_field_name("value") if node is not None and node.type == "variable_assignment" else None
    return value is not None and _NODE_LOCAL.match(value.text.decode("utf-8", "replace")) is not None


def _tests_first(expansion) -> bool:
    """`if [ $SLURM_NODEID = 0 ]; then rm -f $outdir/out*.h5; fi` in the batch shell (round 463's SKA I/O test): the
    guard asks "the first node only?", and the batch shell runs once, on node 0, so the guarded work runs once, as
    meant. Only a test against 0 (=, ==, -eq); `!= 0` would skip work meant for the other nodes, and is reported."""
    node = expansion.node
    while node is not None and node.type not in ("test_command", "program"):
        node = node.parent
    if node is None or node.type != "test_command":
        return False
    text = node.text.decode("utf-8", "replace")
    name = re.escape(expansion.name)
    return re.search(r"\$\{?" + name + r"\}?\"?\s*(?:==?|-eq)\s*\"?0\"?(?=[\s\]]|$)"
                     r"|(?<![\w-])\"?0\"?\s*(?:==?|-eq)\s*\"?\$\{?" + name + r"\b", text) is not None


def _node_rank(lines: list[str], expansion, holder: str | None, names: frozenset) -> bool:
    """The batch shell's value becomes a launcher's node rank: written after --node_rank/--machine_rank on its own
    line, or held by a variable that is (`NODE_RANK=$SLURM_NODEID` ... `--node_rank $NODE_RANK`). The launcher's use
    of it is in its source (config_from_args in torch/distributed/run.py: the static rendezvous's rank); a program's
    own --rank, an exported RANK or a test in the batch shell is the program's or the author's affair, which the file
    does not show (programs often read their task's own SLURM_PROCID: rounds 412, 434 and 546, five findings judged
    false; round 511's one judged true): the strict profile keeps those."""
    before = lines[expansion.line - 1][:max(0, expansion.col - 1)] if 0 < expansion.line <= len(lines) else ""
    if _NODE_RANK_OPTION.search(before):
        return True
    # `--node_rank \` and the value on the next line
    if not before.strip() and 1 < expansion.line <= len(lines) + 1 \
            and _NODE_RANK_OPTION.search(lines[expansion.line - 2].rstrip().removesuffix("\\").rstrip() + " "):
        return True
    return holder is not None and holder in names


_NODE_RANK_NAME = re.compile(_NODE_RANK_SPELLING + r"(?:=|[ \t]+|[ \t]*\\\n[ \t]*)[\"']?\$\{?(\w+)")


def _node_rank_names(lines: list[str]) -> frozenset:
    """The names the script writes after a node-rank option (also on the next line after a backslash), read once per
    script (a scan per holder was quadratic)."""
    return frozenset(_NODE_RANK_NAME.findall("\n".join(lines)))


def check(target):
    script = target.script
    if not is_batch_script(script):
        return
    parsed = script.parsed
    uniform = _same_on_every_node(parsed)
    root = script.shell.root
    data = root.text if root is not None else b""
    # the c10d rendezvous named in the script's code (a comment does not count)
    c10d = any(_C10D.search(line.split("#", 1)[0]) for line in data.decode("utf-8", "replace").splitlines()
               if not line.lstrip().startswith("#"))
    candidates, seen, lines = [], {}, data.split(b"\n")
    run_by_steps = exported_functions(script.shell)
    read_names = {e.name for e in script.shell.expansions}
    for expansion in script.shell.expansions:
        if expansion.name not in PER_TASK:
            continue
        if expansion.name == "SLURM_GPUS_ON_NODE" and uniform or _one_value(parsed, expansion.name, script.shell):
            continue
        if c10d and _c10d_rank(expansion, data, seen):
            continue
        holder = _assigned_to(expansion.node)
        if holder in _SET_BY_SLURMSTEPD and holder not in read_names and _asks_for_gpus(parsed) \
                and _steps_only(script.shell):
            continue  # slurmstepd replaces it in every step, and only steps use it
        if _node_local_value(expansion.node) and _one_task_per_node(parsed, script.shell):
            continue
        if not target.strict and (_printed(expansion) or _printed_in_heredoc(expansion, lines)):
            continue
        if run_by_steps and _in_exported_function(expansion.node, run_by_steps):
            continue  # run by the step (`srun bash -c run_node`): each task expands its own value
        if _tests_first(expansion):
            continue
        candidates.append((expansion, _assigned_to(expansion.node)))
    holders = {holder for _, holder in candidates if holder is not None}
    # a holder read only by echo/printf; exported, it may reach a program unless the launcher is c10d
    # (in the default profile only where the file shows a reader: the runtime, or a step's own text)

    # torchrun gives each worker its own RANK (the elastic agent's worker environment:
    # LocalElasticAgent._start_workers in torch/distributed/elastic/agent/server/local_elastic_agent.py
    # at torch 2.13.0),
    # so with torchrun the batch shell's RANK reaches no program (round ninety-seven)
    by_runtime = _READ_BY_RUNTIME - ({"RANK"} if next(launcher_commands(script.shell), None) else set())

    def reaches(name: str) -> bool:
        return target.strict or name in by_runtime or read_beyond_parse(script, name)
    exported = set() if c10d else {a.name for a in script.shell.assignments if a.exported and a.name in holders
                                   and reaches(a.name)}
    # `export NODE_RANK=$SLURM_NODEID` read only as `--node_rank $NODE_RANK` beside --rdzv_backend=c10d
    # (round seventy-three: dolomite-engine): torchrun ignores it, as when the variable is written there
    # a read inside the value of a variable nothing reads (DISTRIBUTED_ARGS="... --node_rank $NODE_RANK"
    # never used: round seventy-three's octopack job) reaches nothing either
    read = {e.name for e in script.shell.expansions}
    declared = declared_names(script.shell, parsed.lines)  # None: `set -a` exports every variable
    exported_names = {a.name for a in script.shell.assignments if a.exported} | (declared or set())

    def unused(expansion) -> bool:
        if c10d and _c10d_rank(expansion, data, seen):
            return True
        assigned = _enclosing_assignment(expansion.node)
        # exported and read by nothing the file shows: as a holder of its own
        hidden = assigned in exported_names and reaches(assigned)
        return declared is not None and assigned is not None and assigned not in read and not hidden

    harmless = holders - _read_beyond_printing(script, holders, unused) - exported
    rank_names = _node_rank_names(script.lines) if not target.strict else frozenset()
    for expansion, holder in candidates:
        if holder in harmless:
            continue
        if holder is None and _part_of_unread(script, expansion, exported_names):
            continue  # part of a value nothing reads (`prof="rank_${SLURM_PROCID}.prof"`, never used: round 516)
        if not target.strict and not _node_rank(script.lines, expansion, holder, rank_names):
            continue  # what the program makes of it is not in the file (it may read its task's own value)
        yield (script.display, expansion.line, expansion.col,
               f"${expansion.name} is expanded by the batch shell (node 0's value for every node); "
               "expand it inside the step: single quotes, \\$, or a script the step runs")
