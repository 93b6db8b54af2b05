"""torchrun's --nproc-per-node must come from SLURM_GPUS_ON_NODE (read in the step), not SLURM_GPUS_PER_NODE (unset with --gpus-per-task), SLURM_NTASKS_PER_NODE (1 here) or a literal.

Premise: SLURM_GPUS_PER_NODE is set only from --gpus-per-node (src/common/env.c at slurm-22-05-0-1
and slurm-26-05-1-1), SLURM_GPUS_ON_NODE by the GPU plugin for each step's node
(src/plugins/gres/common/gres_common.c at slurm-22-05-0-1 and slurm-26-05-1-1); a literal that
differs from the job's own per-node GPU request starts too many or too few processes. Holds for:
22.05-26.05.
Not reported: SLURM_GPUS_PER_NODE in a job that asks --gpus-per-node=N without a type (the variable
is then N on every node); a literal in an --exclusive job that asks no GPU count (the job has every
GPU of its nodes, whose number the script does not say: the literal is the author's statement of it);
`${SLURM_GPUS_PER_NODE:-N}` in a job without --gpus-per-node whose per-node request is N (the
variable is unset there, the default is the right count); a literal equal to what the srun that
runs the launcher asks for its node (`srun --nodes=1 --gres=gpu:4 torchrun --nproc-per-node 4`); a
literal equal to the per-node count of another accelerator the job asks as a generic resource
(--gres=dcu:4), for which no GPU variable is set; a literal in a job that asks zero GPUs
(--gres=gpu:0, round sixty: CPU workers by design, SLURM_GPUS_ON_NODE would be no count of them);
a literal equal to an even split of the job's --gpus total over its --nodes (--gpus=8 --nodes=2 and
--nproc-per-node=4: the author's statement of the nodes' size, round one hundred and twenty-six), or
to the whole --gpus total of a job without --nodes whose launcher says it runs on one node (`-G 2` and
`torchrun --standalone --nproc_per_node=2`, round three hundred and fifty-seven);
a literal in a job that asks no GPU at all (round 111: one evaluation process; round 421: `--nproc_per_node=3` on
TACC's Lonestar6, whose gpu-a100 nodes come whole with their three A100s and no --gres): SLURM_GPUS_ON_NODE is
then unset in every step (gres_common_gpu_set_env: `unsetenvp(..., "SLURM_GPUS_ON_NODE")` where the step holds no
GPU, src/plugins/gres/common/gres_common.c at slurm-22-05-0-1 and slurm-26-05-1-1), so the proposed fix would
read nothing; the count is the author's statement of the node's GPUs (a count above 1 there is reported by the
strict profile, whose scripts should ask for their GPUs and read the step's count);
a literal equal to the number of devices the launcher's own prefix assignment makes visible
(`CUDA_VISIBLE_DEVICES=0,1,2,3 torchrun --nproc_per_node 4` beside a vLLM server on GPUs 4-7 of an
8-GPU node, round one hundred and thirty-four): the CUDA runtime enumerates only the devices that
CUDA_VISIBLE_DEVICES lists (CUDA C++ Programming Guide, "CUDA Environment Variables"; ROCm's
HIP_VISIBLE_DEVICES and ROCR_VISIBLE_DEVICES likewise), and an assignment on the command itself is
made after Slurm set the step's environment, so the literal is the count the processes can see, and
SLURM_GPUS_ON_NODE (the node's count) would be the wrong one.
"""
import bisect
import re

from validator.rules import torchrun
from validator.rules.base import (GOOD_BATCH, always_runs, as_int, asks_gpus, bad_batch, enclosing, exclusive_nodes,
                                  launcher_commands, launcher_steps,
                                  non_ascii_number, requested_gpus_per_node, step_gpus_per_node)
ID = "launch-gpu-count"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = "torchrun's --nproc-per-node must come from SLURM_GPUS_ON_NODE (read in the step), not SLURM_GPUS_PER_NODE (unset with --gpus-per-task), SLURM_NTASKS_PER_NODE (1 here) or a literal."
GOOD = {"run.sbatch": GOOD_BATCH}
BAD = bad_batch('--nproc-per-node="$SLURM_GPUS_ON_NODE"', "--nproc-per-node=$SLURM_GPUS_PER_NODE")


WRONG = {"SLURM_GPUS_PER_NODE": "is unset when the job asks with --gpus-per-task (and may read 'h100:8')",
         "SLURM_NTASKS_PER_NODE": "is the job's --ntasks-per-node (1 with one task per node), not the GPU count",
         "SLURM_GPUS": "counts the whole job's GPUs, not one node's"}
# SLURM_GPUS is "Only set if the -G, --gpus option is specified" (sbatch.1, slurm-26-05-3-1)
_GPUS_UNSET = "is unset unless the job asks with --gpus (sbatch.1: only set with -G/--gpus)"


def _plain_gpus_per_node(parsed) -> bool:
    """--gpus-per-node=N without a type: SLURM_GPUS_PER_NODE reads N."""
    return any(as_int(option.value) is not None for option in parsed.get("gpus-per-node"))


def _default_is_the_request(raw: str, name: str, requested) -> bool:
    """`${SLURM_GPUS_PER_NODE:-2}` in a job that asks 2 GPUs a node and no --gpus-per-node: the
    variable is unset there and its default is the job's own count (round twenty)."""
    found = re.search(r"\$\{" + name + r":?-([0-9]+)\}", raw)
    return found is not None and requested is not None and int(found.group(1)) == requested


def _step_gpus(shell) -> dict:
    """(line, col) of a launcher that an srun runs -> the GPUs that srun asks for its node
    (`srun --nodes=1 --gres=gpu:4 torchrun ...`: one torchrun per node, each step with its own
    request; round twenty-four)."""
    found = {}
    for srun, launcher in launcher_steps(shell):
        gpus = step_gpus_per_node(srun)
        if gpus is not None:
            found[(launcher.line, launcher.col)] = gpus
    return found


def _other_accelerators(parsed) -> set:
    """Per-node counts the job asks of a generic resource that is not 'gpu' (--gres=dcu:4, npu:8):
    SLURM_GPUS_ON_NODE is set by gres_common_gpu_set_env() (src/plugins/gres/common/gres_common.c),
    which only the gpu, mps and shard plugins call (gres_gpu.c, gres_mps.c, gres_shard.c at slurm-22-05-0-1 and
    slurm-26-05-1-1), so for such a
    device the literal is the author's statement of the count (round fifty-six: --gres=dcu:4)."""
    counts = set()
    for option in parsed.get("gres"):
        for item in (option.value or "").split(","):
            parts = item.split(":")
            name = parts[0].split("/")[-1]  # gres/gpu:4 is gpu
            if len(parts) >= 2 and name not in ("gpu", "mps", "shard", "") and as_int(parts[-1]) is not None:
                counts.add(as_int(parts[-1]))
    return counts


def _even_share(parsed):
    """The GPUs a node gets when the job's --gpus total splits evenly over its --nodes (--gpus=a100:8
    --nodes=2: 4), else None. Slurm places a job total where the GPUs are, so the split is the author's
    statement of their nodes' size, as a per-node request is (round one hundred and twenty-six:
    Flatiron's 4-GPU A100 nodes)."""
    total = as_int((parsed.value("gpus") or "").rsplit(":", 1)[-1])
    nodes = as_int(parsed.value("nodes"))
    return total // nodes if total and nodes and nodes > 1 and total % nodes == 0 else None


def _one_node_total(parsed, launcher):
    """The job's --gpus total where the job gives no --nodes, runs one task and the launcher says it runs on one node
    (`torchrun --standalone` or `--nnodes=1`): the literal then names the GPUs the author asked for that node
    (round three hundred and fifty-seven: `#SBATCH -G 2` and `torchrun --standalone --nnodes=1
    --nproc_per_node=2`), else None."""
    if parsed.get("nodes") or as_int(parsed.value("ntasks") or "1") != 1 \
            or as_int(parsed.value("ntasks-per-node") or "1") != 1:
        return None  # several tasks may take the GPUs on several nodes: one launcher per task
    nnodes = torchrun.option(launcher, "nnodes")
    one_node = torchrun.option(launcher, "standalone") is not None \
        or (nnodes is not None and nnodes.value in ("1", "1:1"))
    return as_int((parsed.value("gpus") or "").rsplit(":", 1)[-1]) if one_node else None


_VISIBLE = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES")


def _made_visible(command) -> int | None:
    """The number of devices a prefix assignment on the launcher itself lists (`CUDA_VISIBLE_DEVICES=0,1,2,3
    torchrun ...`), when literal; else None. Not one on `srun` (`CUDA_VISIBLE_DEVICES=0,1 srun torchrun`):
    the GPU plugin sets the step's own list over it (env_array_overwrite of CUDA_VISIBLE_DEVICES and
    ROCR_VISIBLE_DEVICES in gres_common_gpu_set_env(), src/plugins/gres/common/gres_common.c at
    slurm-22-05-0-1 and slurm-26-05-1-1). Nor a list longer than the GPUs the job asks a node: the
    runtime enumerates only devices that exist there."""
    node = command.node
    if node is None:
        return None
    # `CUDA_VISIBLE_DEVICES=0,1 srun torchrun`: srun's prefix; `... nohup|timeout 9h|numactl ... torchrun`
    # passes the environment on to the launcher it execs
    first = command.args[0].node if command.args else None
    end = first.start_byte - node.start_byte if first is not None else len(node.text)
    words = node.text[:max(0, end)].decode("utf-8", "replace").split()  # the prefix, wrappers and launcher
    if any(word.strip("\"'").rsplit("/", 1)[-1] == "srun" for word in words):
        return None
    for child in node.children:
        if child.type != "variable_assignment":
            continue
        name, _, value = child.text.decode("utf-8", "replace").partition("=")
        value = value.strip("\"'")
        items = value.split(",")
        if name in _VISIBLE and value and "$" not in value and all(re.fullmatch(r"[\w-]+", i) for i in items):
            return len(items)
    return None


_ONE_NAME = re.compile(r"\"?\$\{?(\w+)\}?\"?")


def _shown(word, literal: int) -> str:
    """The count as written, and the script's own number behind a variable (`$SLURM_GPUS_PER_NODE` (4))."""
    return word.value if word.value is not None else f"{word.raw} ({literal})"


def _own_numbers(shell, parsed) -> list:
    """`SLURM_GPUS_PER_NODE=8` in the batch shell before the launcher (round one's and round 452's uccl-ep benchmark):
    the launcher reads the author's number, not Slurm's variable, so nothing is unset or typed there; the number is
    judged as a literal is. Only a plain assignment that always runs (the script's top level: not in a branch, a
    function or a list) in a job that does not ask --gpus-per-node, and never exported: sbatch puts
    SLURM_GPUS_PER_NODE in the batch environment only from --gpus-per-node, and srun reads it from there as its
    own --gpus-per-node (env_vars in src/srun/opt.c at slurm-26-05-1-1, src/srun/libsrun/opt.c at
    slurm-22-05-0-1), so an exported or inherited one changes the step's request, not only the launcher's word.
    Sorted (line, col, number) of such assignments and of unsets (number None), read once (a script of 10,000
    assignments stays linear)."""
    def find():
        if parsed.get("gpus-per-node"):
            return []
        mine = [a for a in shell.assignments if a.name == "SLURM_GPUS_PER_NODE"]
        if any(a.exported for a in mine):
            return []
        numbers = [(a.line, a.col, as_int(a.value)) for a in mine if always_runs(a.node) and not a.conditional]
        # `unset SLURM_GPUS_PER_NODE` in the batch shell (a branch may run it; a subshell or a function never called
        # leaves the number set) ends the own number from there on
        gone = [(line, col, None) for name, line, col, node in shell.unsets
                if name == "SLURM_GPUS_PER_NODE" and _unsets_here(node)]
        return sorted(numbers + gone) if numbers else []
    return shell.once("own SLURM_GPUS_PER_NODE", find)


def _unsets_here(node) -> bool:
    """The unset runs in the batch shell itself: not in a subshell, a command substitution or a function."""
    return enclosing(node, ("subshell", "command_substitution", "function_definition", "process_substitution")) is None


def _own_number(own: list, word) -> int | None:
    """The number of the last such assignment before `word`, None where there is none or it is no number."""
    at = bisect.bisect_left(own, (word.line, word.col, -1))
    return own[at - 1][2] if at else None


def check(target):
    parsed = target.script.parsed
    requested = requested_gpus_per_node(parsed)
    per_step = _step_gpus(target.script.shell)
    skip = {"SLURM_GPUS_PER_NODE"} if _plain_gpus_per_node(parsed) else set()
    # --ntasks-per-node equal to the GPUs asked per node: SLURM_NTASKS_PER_NODE reads that count
    if requested is not None and as_int(parsed.value("ntasks-per-node")) == requested:
        skip.add("SLURM_NTASKS_PER_NODE")
    whole_nodes = requested is None and exclusive_nodes(parsed)
    wrong = dict(WRONG)
    if not parsed.get("gpus"):
        wrong["SLURM_GPUS"] = _GPUS_UNSET
    elif parsed.value("nodes") in ("1", "1-1"):
        skip.add("SLURM_GPUS")  # one node: the job's GPUs are the node's
    own = _own_numbers(target.script.shell, parsed)
    for command in launcher_commands(target.script.shell):
        word = torchrun.option(command, "nproc_per_node")
        if word is None:
            continue
        own_number = _own_number(own, word)
        for name, why in wrong.items():
            if _default_is_the_request(word.raw, name, requested) and not parsed.get("gpus-per-node") \
                    or name == "SLURM_GPUS_PER_NODE" and own_number is not None:
                continue
            if name not in skip and f"${name}" in word.raw.replace("{", "") and f"${name}_" not in word.raw.replace("{", ""):
                yield (target.script.display, word.line, word.col, f"--nproc-per-node from {name}, which {why}; use SLURM_GPUS_ON_NODE inside the step")
        # a literal equal to the job's own per-node GPU request says the same thing twice
        odd = non_ascii_number(word.value)
        if odd:
            yield (target.script.display, word.line, word.col, f"--nproc-per-node: {odd}")
        literal = as_int(word.value)
        named = _ONE_NAME.fullmatch(word.raw)
        if literal is None and named is not None and named.group(1) == "SLURM_GPUS_PER_NODE" and own_number is not None:
            literal = own_number  # SLURM_GPUS_PER_NODE=8 then --nproc_per_node=$SLURM_GPUS_PER_NODE
        if literal is not None and requested is None and literal in _other_accelerators(parsed):
            continue  # --gres=dcu:4 and --nproc-per-node=4: the job's own count of a device that is no 'gpu'
        if literal is not None and requested == 0 and per_step.get((command.line, command.col)) is None:
            continue  # --gres=gpu:0: a job of no GPU, whose processes are CPU workers by design
        if literal is not None and requested is None and per_step.get((command.line, command.col)) is None \
                and not asks_gpus(parsed, target.script.shell) and (literal == 1 or not target.strict):
            continue  # a job that asks no GPU at all: SLURM_GPUS_ON_NODE is unset in its steps, no count to read
        if literal is not None and literal == _made_visible(command) and (requested is None or literal <= requested):
            continue  # CUDA_VISIBLE_DEVICES=0,1,2,3 torchrun --nproc_per_node 4: the devices it sees
        if literal is not None and requested is None and literal == _even_share(parsed):
            continue  # --gpus=8 over --nodes=2 and --nproc-per-node=4: the job's GPUs split evenly
        if literal is not None and requested is None and literal == _one_node_total(parsed, command):
            continue  # -G 2 and `torchrun --standalone --nproc_per_node=2`: one node by the launcher's own word
        if literal is not None and literal != per_step.get((command.line, command.col), requested) and not whole_nodes:
            yield (target.script.display, word.line, word.col,
                   f"--nproc-per-node={_shown(word, literal)} is hard-coded; read SLURM_GPUS_ON_NODE inside the step")
