"""--exclusive without --mem: the job gets every CPU of the node but only the memory it asks for.

Premise: sbatch.1 (at slurm-22-05-0-1 and slurm-26-05-1-1): with --exclusive "the job is allocated
all CPUs and GRES on all nodes in the allocation, but is only allocated as much memory as it
requested". Holds for: 22.05-26.05. Whether a job needs the whole memory is the script's choice: A
policy of our presets, not a defect elsewhere: strict profile only.
"""
from validator.rules.base import GOOD_BATCH, bad_batch

ID = "sbatch-exclusive-memory"
SEVERITY = "warning"
SCOPE = "script"
PROFILE = "strict"  # our presets' bar, not a defect in somebody else's job
DESCRIPTION = ("--exclusive gives all CPUs of a node but only the memory requested (sbatch.1): where a site "
               "sets a default memory per CPU, ranks are OOM-killed. Add --mem=0 (all of the node's memory).")
GOOD = {"run.sbatch": GOOD_BATCH.replace("#SBATCH --time=00:30:00\n", "#SBATCH --time=00:30:00\n#SBATCH --exclusive --mem=0\n", 1)}
BAD = bad_batch("#SBATCH --time=00:30:00\n", "#SBATCH --time=00:30:00\n#SBATCH --exclusive\n")

MEMORY = ("mem", "mem-per-cpu", "mem-per-gpu")


def check(target):
    parsed = target.script.parsed
    exclusive = parsed.get("exclusive")
    if not exclusive or any(parsed.get(name) for name in MEMORY):
        return
    option = exclusive[-1]
    if parsed.value("exclusive"):  # --exclusive=user|mcs|topo: the node is shared, so is its memory
        return
    yield (target.script.display, option.line, option.col,
           "--exclusive gives all CPUs but only the memory requested; add --mem=0 for all of the node's memory")
