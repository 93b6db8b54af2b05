"""Per-task variables (SLURM_NODEID, SLURM_PROCID, SLURM_LOCALID, SLURM_GPUS_ON_NODE) expanded in the batch shell, where they describe node 0 only.

Premise: SLURM_NODEID, SLURM_PROCID and SLURM_LOCALID are set per task by slurmstepd (setup_env in
src/common/env.c at slurm-22-05-0-1 and slurm-26-05-1-1), SLURM_GPUS_ON_NODE per node
(gres_common.c); in the batch shell they are node 0's, task 0's. Holds for: 22.05-26.05.
Not a defect where node 0's value is every task's (a job of one node: SLURM_NODEID; of one task per
node on one node: SLURM_PROCID, SLURM_LOCALID), where the value is assigned to a variable nothing
reads, or where it is torchrun's or accelerate's node rank beside a rendezvous backend other than
static: torch/distributed/run.py passes --node-rank to the rendezvous only for the static backend
("node_rank is only used for static rdzv_backend. It will be ignored", torch 2.13).
"""
import re

from validator.rules.base import GOOD_BATCH, bad_batch, is_batch_script
ID = "launch-per-task-variable"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = 'Per-task variables (SLURM_NODEID, SLURM_PROCID, SLURM_LOCALID, SLURM_GPUS_ON_NODE) expanded in the batch shell, where they describe node 0 only.'
GOOD = {"run.sbatch": GOOD_BATCH}
BAD = bad_batch("srun --kill-on-bad-exit=1", 'echo "node $SLURM_NODEID"\nsrun --kill-on-bad-exit=1')


PER_TASK = {"SLURM_NODEID", "SLURM_PROCID", "SLURM_LOCALID", "SLURM_GPUS_ON_NODE"}


def _same_on_every_node(parsed) -> bool:
    """Every node gets the same GPU request (--gpus-per-node, --gres=gpu:N, one task per node, or
    --gpus-per-task with --ntasks-per-node): node 0's SLURM_GPUS_ON_NODE is every node's."""
    if parsed.get("gpus-per-node") or any("gpu" in (o.value or "") for o in parsed.get("gres")):
        return True
    return parsed.value("ntasks-per-node") == "1" or (bool(parsed.get("gpus-per-task"))
                                                     and bool(parsed.get("ntasks-per-node")))


_DYNAMIC_RENDEZVOUS = re.compile(r"--rdzv[_-]backend[= ]+[\"']?(?!static\b)[a-z]")
_NODE_RANK_BEFORE = re.compile(r"--node[_-]rank[= ]+[\"']?$")


def _statement(lines: list[str], number: int) -> str:
    """The physical lines joined by backslash continuations around line `number` (1-based)."""
    start = number
    while start > 1 and lines[start - 2].rstrip().endswith("\\"):
        start -= 1
    end = number
    while end < len(lines) and lines[end - 1].rstrip().endswith("\\"):
        end += 1
    return "\n".join(lines[start - 1:end])


def _one_value(parsed, name: str) -> bool:
    """Node 0's value is every task's: a job of one node (SLURM_NODEID), and of one task (PROCID, LOCALID)."""
    if parsed.value("nodes") != "1":
        return False
    return name == "SLURM_NODEID" or parsed.value("ntasks-per-node") == "1" or parsed.value("ntasks") == "1"


def check(target):
    script = target.script
    if not is_batch_script(script):
        return
    parsed, shell = script.parsed, script.shell
    uniform = _same_on_every_node(parsed)
    read = {e.name for e in shell.expansions}
    unread: dict[int, list[str]] = {}
    for a in shell.assignments:
        if not a.exported and a.name not in read:
            unread.setdefault(a.line, []).append(a.name)
    for expansion in shell.expansions:
        if expansion.name not in PER_TASK or _one_value(parsed, expansion.name):
            continue
        if expansion.name == "SLURM_GPUS_ON_NODE" and uniform:
            continue
        line = parsed.lines[expansion.line - 1] if expansion.line <= len(parsed.lines) else ""
        if any(re.match(rf"\s*{name}=", line) for name in unread.get(expansion.line, ())):
            continue  # NODE_RANK=$SLURM_PROCID that nothing reads
        if _NODE_RANK_BEFORE.search(line[:expansion.col - 1]) \
                and _DYNAMIC_RENDEZVOUS.search(_statement(parsed.lines, expansion.line)):
            continue
        yield (script.display, expansion.line, expansion.col,
               f"${expansion.name} is expanded by the batch shell (node 0's value for every node); "
               "expand it inside the step: single quotes, \\$, or a script the step runs")
