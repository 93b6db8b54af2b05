"""The node count must come from the submission: no #SBATCH --nodes in a preset, no literal torchrun --nnodes, no --ntasks beside torchrun.

Premise: torchrun waits at the rendezvous until --nnodes nodes have joined, and srun starts one
torchrun per task; a job of N nodes (sbatch --nodes, src/sbatch/opt.c; SLURM_NNODES in the job,
src/common/env.c, at slurm-22-05-0-1 through slurm-26-05-1-1) with torchrun started once per node
and no --nnodes makes N one-node jobs.
Holds for: every release (22.05-26.05). Defects in any script: torchrun
without --nnodes (or with --standalone) in a job of several nodes, a literal --nnodes that differs
from the job's own --nodes, more tasks than nodes (or more than one a node: --ntasks-per-node=8)
where an srun that sets no task count of its own starts torchrun (it starts one torchrun agent per
task, and each agent starts --nproc-per-node workers), and torchrun with --nnodes above 1 started by
the batch shell itself in a job of several nodes: the batch script runs once, on one node, so
the rendezvous waits for agents nobody starts (round sixty's LLaVA-MORE jobs; not where the script
runs itself as a step, `srun ... "$0"`, nor in a function a step may call); without --nnodes there it runs
on the batch host alone and the job's other nodes sit idle (round 465: the message said each node started
its own job, which only an srun of one task a node does). The strict profile's policy (the
node count given only at submission: no #SBATCH --nodes in a preset, no literal --nnodes, no
--ntasks) is ours; a script that is single-node by design (--nodes=1, torchrun --standalone) keeps
its literal elsewhere.
"""
import re

from validator.rules import torchrun
from validator.rules.base import (GOOD_BATCH, as_int, bad_batch, in_function, is_decimal, is_launcher,
                                  launcher_commands, launcher_steps, non_ascii_number, with_payloads)
from validator.rules.srun import SHORT_WITH_VALUE
ID = "launch-node-count"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = ('The node count must come from the submission: torchrun without --nnodes in a job of several nodes, a '
               'literal --nnodes other than the job\'s --nodes, more tasks than nodes beside torchrun (strict profile: '
               'no #SBATCH --nodes in a preset, no literal --nnodes, no --ntasks).')
GOOD = {"run.sbatch": GOOD_BATCH}
BAD = bad_batch('--nnodes="$SLURM_NNODES"', "--nnodes=2")


_ONE_NODE_STEP = re.compile(r"(?:-N\s*1|--nodes[= ]1)(?![0-9-])")


def _job_nodes(parsed) -> str | None:
    """The job's node count as sbatch settles it: --nodes, less where fewer tasks are asked (`-N 4 -n 1` is one
    node: "can't run 1 processes on 4 nodes, setting nnodes to 1"; a maximum above the task count comes down to
    it: _opt_verify in src/sbatch/opt.c at slurm-22-05-0-1 and slurm-26-05-1-1; round 506's BLIP retrieval job)."""
    value = parsed.value("nodes")
    if value is None:
        return None
    low, _, high = value.partition("-")
    tasks = as_int(parsed.value("ntasks") or "")
    if tasks is None or tasks <= 0:
        return value
    low_n, high_n = as_int(low), as_int(high) if high else None
    if high_n is not None and tasks < high_n:
        high, high_n = str(tasks), tasks
    if low_n is not None and tasks < low_n:
        low, low_n = str(tasks), tasks
    return low if not high or high == low else f"{low}-{high}"


def _several_nodes(parsed) -> str | None:
    """The node count a job asks for when it is more than one (--nodes=4, --nodes=2-4), as sbatch settles it."""
    value = _job_nodes(parsed) or ""
    low = as_int(value.split("-")[0])
    return value if low is not None and low > 1 else None


def _fits(nnodes: str, job_nodes: str) -> bool:
    """A literal --nnodes that the job's node count meets: the same number, or an elastic MIN:MAX range
    around it (torchrun's c10d rendezvous closes with MIN agents once its last call has passed:
    _add_to_participants() sets the last-call deadline when MIN have joined:
    torch/distributed/elastic/rendezvous/dynamic_rendezvous.py, torch 2.13.0), as `--nnodes=1:2` in a
    one-node job."""
    low, _, high = nnodes.partition(":")
    count = as_int(job_nodes)
    if count is None:
        return nnodes.split(":")[-1] == job_nodes
    if not high:
        return as_int(low) == count
    return (as_int(low) or 0) <= count <= (as_int(high) or 0)


def _one_worker(launcher) -> bool:
    """`--nproc-per-node 1`: each agent starts one worker (one agent per task is then the design)."""
    nproc = torchrun.option(launcher, "nproc_per_node")
    return nproc is not None and nproc.value == "1"


def _batch_shell_launchers(shell):
    """torchrun started by the batch shell itself (not by srun, not in a `bash -c` payload, not in a
    function a step may call): it runs once, on one node ("Slurm runs a single copy of the batch
    script on the first node in the set of allocated nodes", sbatch.1 DESCRIPTION at slurm-22-05-0-1;
    "on one of the allocated nodes", typically the first, at slurm-26-05-1-1)."""
    if any(_runs_itself(c) for c in shell.named("srun")):
        return  # `srun ... "$0"`: the script runs itself as a step on every node
    if any(True for _ in launcher_steps(shell)):
        return  # an srun starts torchrun agents too (the other nodes' ranks): the rendezvous can fill
    for command, inside in with_payloads(shell):
        if not inside and is_launcher(command) and command.node is not None and not in_function(command.node):
            yield command


_SELF = re.compile(r'"?\$(0|\{0\}|\{?BASH_SOURCE(\[0\])?\}?)"?$')


def _runs_itself(srun) -> bool:
    """`srun [options] "$0"` or `srun bash "${BASH_SOURCE[0]}"`: the step's program is this script (not
    `srun cp "$0" /tmp/`). The first word that is no option (nor a short option's value) is the program;
    step_program() would read `"$0"` as srun's options in a variable."""
    words, i = [a.raw for a in srun.args], 0
    while i < len(words) and words[i].startswith("-"):
        i += 2 if len(words[i]) == 2 and words[i][1] in SHORT_WITH_VALUE else 1
    if i >= len(words):
        return False
    if _SELF.match(words[i]):
        return True
    return words[i].strip("\"'").rsplit("/", 1)[-1] in ("bash", "sh") and i + 1 < len(words) \
        and _SELF.match(words[i + 1]) is not None


def check(target):
    script = target.script
    if script.in_preset:
        for option in script.parsed.get("nodes"):
            yield (script.display, option.line, option.col,
                   "#SBATCH --nodes hard-codes the node count; give it at submission (sbatch --nodes N)")
    launchers = list(launcher_commands(script.shell))
    batch_shell = {(c.line, c.col) for c in _batch_shell_launchers(script.shell)}
    several = _several_nodes(script.parsed)
    asked_nodes = _job_nodes(script.parsed)
    # torchrun reads PET_NNODES as its --nnodes (action=env in run.py at pytorch/pytorch 010929fd): set to a value
    # other than 1 (an assignment, an export, `--export=...,PET_NNODES=2`), not in a comment or by unset
    pet_nnodes = any(found.group(1).strip("'\"") not in ("1", "1:1")
                     for line in script.parsed.lines if not line.lstrip().startswith("#")
                     for found in re.finditer(r"(?<![\w])PET_NNODES=([^\s;,]*)", line))
    for command in launchers:
        word = torchrun.option(command, "nnodes")
        passed = word or torchrun.hidden_option(script.shell, command, "--nnodes")  # also through an array
        if passed is None and pet_nnodes:
            passed = "PET_NNODES"
        if (passed is None or torchrun.option(command, "standalone") is not None) and several \
                and not _ONE_NODE_STEP.search(command.node.text.decode("utf-8", "replace")):
            if (command.line, command.col) in batch_shell:
                # the batch script runs once, on the batch host (round 465's CLAP training: 2 exclusive nodes idle)
                yield (script.display, command.line, command.col,
                       f"torchrun in the batch shell without --nnodes runs on the batch host alone: the job's other "
                       f"nodes (it asks for {several}) sit idle; start it with srun --ntasks-per-node=1 and "
                       "--nnodes=$SLURM_NNODES, or ask for one node")
            else:
                yield (script.display, command.line, command.col,
                       f"torchrun without --nnodes (or with --standalone) in a job of {several} nodes: each node "
                       "starts its own one-node job; pass --nnodes=$SLURM_NNODES with a rendezvous endpoint")
        if word is not None and (word.value or word.raw) and several and (command.line, command.col) in batch_shell \
                and not _fits(word.value or "", "1") \
                and (word.value is None or word.value.split(":")[0] != "1"):
            yield (script.display, command.line, command.col,
                   f"torchrun in the batch shell runs on one node only (the batch host): its --nnodes={word.raw} rendezvous "
                   "waits for agents that no other node starts, until it times out; start it with "
                   "srun --ntasks-per-node=1")
        if word is not None and non_ascii_number(word.value):
            yield (script.display, word.line, word.col, f"--nnodes: {non_ascii_number(word.value)}")
        if word is not None and word.value is not None and is_decimal(word.value.replace(":", "")) \
                and (target.strict or not _fits(word.value, (asked_nodes or "1").split("-")[-1])):
            yield (script.display, word.line, word.col,
                   f"--nnodes={word.value} is hard-coded; use $SLURM_NNODES")
    # the job's --ntasks reaches torchrun only through an srun that sets no task count of its own
    # (`srun --nodes=1 --ntasks=1 torchrun` per node, or torchrun in the batch shell, starts one each)
    inherits = any(srun.option("--ntasks", "-n", "--ntasks-per-node") is None for srun, _ in launcher_steps(script.shell))
    if (target.strict and launchers) or inherits:
        nodes = as_int((asked_nodes or "").split("-")[-1])
        for option in script.parsed.get("ntasks"):
            tasks = as_int(option.value)
            if target.strict or (tasks is not None and tasks > (nodes or 1)):
                yield (script.display, option.line, option.col,
                       "--ntasks with torchrun fixes the task count; use --ntasks-per-node=1 and let torchrun fan out")
    # `--ntasks-per-node=8` + `srun torchrun`: eight agents a node for one rendezvous (--standalone
    # agents are each their own job: copies on purpose)
    if any(srun.option("--ntasks", "-n", "--ntasks-per-node") is None
           and torchrun.option(launcher, "standalone") is None
           and not _one_worker(launcher) for srun, launcher in launcher_steps(script.shell)):
        # `--ntasks=N` wins over --ntasks-per-node, which is then only a maximum ("the --ntasks option
        # will take precedence and the --ntasks-per-node will be treated as a maximum count of tasks per
        # node", sbatch.1 at slurm-22-05-0-1 and slurm-26-05-1-1): --ntasks=1 is one agent in all
        # (round one hundred and eighteen)
        total = [as_int(o.value) for o in script.parsed.get("ntasks")]
        one_task = bool(total) and total[-1] == 1
        for option in script.parsed.get("ntasks-per-node"):
            per_node = as_int(option.value)
            if per_node is not None and per_node > 1 and not one_task:
                written = option.written.split("=", 1)[0]  # --ntasks-per-node, or --tasks-per-node as written
                yield (script.display, option.line, option.col,
                       f"{written}={per_node} with srun torchrun: srun starts {per_node} torchrun agents on "
                       f"each node, each fanning out to every GPU; use {written}=1")
