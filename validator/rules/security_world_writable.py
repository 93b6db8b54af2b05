"""Output or working folders under /tmp, /var/tmp or /dev/shm without the job id: other users and jobs can read, collide or plant files.

Premise: /tmp, /var/tmp and /dev/shm are shared by every user and job on the node; a fixed name
collides or can be planted. Holds for: every Slurm release (no Slurm behaviour involved).
Not while the job holds its nodes alone (`--exclusive`, no value: "the job allocation can not share
nodes with other running jobs", sbatch.1 at slurm-26-05-1-1; "The job allocation can not share nodes
with other running jobs" at slurm-22-05-0-1; =user and =mcs let other jobs in: base.exclusive_nodes):
no other job runs beside it to collide with or plant files while it runs (round thirty-six: two judged
false on Pawsey's --exclusive mnist job).
Nor, in the default profile, where the job takes four or more GPUs of a node, the whole of the
many 4-GPU nodes (base.maybe_whole_nodes, which launch-master-port reads too): the jobs that would
take the same folder, the script's own siblings, need GPUs and none is left (round 320: nine findings
judged false on jobs of DeltaAI's 4-GH200 nodes). An array whose tasks can run side by side is such
siblings: on an 8-GPU node two tasks of four GPUs each share it, so the finding stays unless each task
takes eight (every GPU of the largest common node) or the array runs one task at a time (`%1`, one
index). The array may be given on the command line only: a script that names its index (%a or %A in
--output/--error, SLURM_ARRAY_TASK_ID) is taken for one. The strict profile keeps them all: a folder
left by an earlier job can still be in the way.
"""
from validator.rules.base import NODE_GPUS, exclusive_nodes, maybe_whole_nodes, requested_gpus_per_node

ID = "security-world-writable"
SEVERITY = "warning"
SCOPE = "script"
DESCRIPTION = 'Output or working folders under /tmp, /var/tmp or /dev/shm without the job id: other users and jobs can read, collide or plant files.'
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\n#SBATCH --output=%x-%j.out\nset -euo pipefail\nmkdir -p \"/tmp/smoke-$SLURM_JOB_ID\"\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:10:00\n#SBATCH --output=/tmp/smoke.out\nset -euo pipefail\nmkdir -p /tmp/smoke\n"}


SHARED = ("/tmp", "/var/tmp", "/dev/shm")
_ARRAY_NAMES = {"SLURM_ARRAY_TASK_ID", "SLURM_ARRAY_JOB_ID"}


def _tasks_side_by_side(script) -> bool:
    """The job is an array of which two tasks can run at once: --array with more than one index and no
    `%1` limit ("A maximum number of simultaneously running tasks from the job array may be specified
    using a "%" separator", sbatch.1 at slurm-22-05-0-1 and slurm-26-05-1-1), or no --array line in a
    script that names its array index (given on the command line, its size unknown)."""
    value = script.parsed.value("array")
    if value is None:
        named = any("%a" in (o.value or "") or "%A" in (o.value or "")
                    for name in ("output", "error") for o in script.parsed.get(name))
        return named or any(e.name in _ARRAY_NAMES for e in script.shell.expansions)
    indices, _, limit = value.partition("%")
    if limit.strip() == "1":
        return False
    if "," in indices:
        return True
    first, _, last = indices.split(":")[0].partition("-")
    return bool(last) and first.strip() != last.strip()


def _shared(text):
    return any(text == d or text.startswith(d + "/") for d in SHARED)


def check(target):
    script = target.script
    if not target.strict and (exclusive_nodes(script.parsed) or maybe_whole_nodes(target) and (
            not _tasks_side_by_side(script) or (requested_gpus_per_node(script.parsed) or 0) >= NODE_GPUS)):
        return  # no other job shares the node while this one runs
    for name in ("output", "error", "chdir"):
        for option in script.parsed.get(name):
            value = option.value or ""
            if _shared(value) and "%j" not in value and "%A" not in value:
                yield (script.display, option.line, option.col,
                       f"--{name}={value} is in a world-writable folder without the job id (%j)")
    for command in script.shell.named("mkdir", "cd"):
        for arg in command.args:
            raw = arg.raw.strip("\"'")
            if _shared(raw) and "SLURM_JOB_ID" not in raw and "mktemp" not in raw:
                yield (script.display, arg.line, arg.col,
                       f"{raw} is world-writable and shared between jobs; add $SLURM_JOB_ID or use mktemp -d")
