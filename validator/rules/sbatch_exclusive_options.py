"""Option pairs that sbatch rejects together or that contradict each other.

Premise: sbatch refuses --mem with --mem-per-cpu or --mem-per-gpu (_validate_memory_options in
src/common/slurm_opt.c at slurm-26-05-1-1) and, from 26.05, --gres=gpu with --gpus-per-node (SchedMD
commit 1a2bc58796, first in slurm-26-05-0-0rc1); the other pairs contradict each other (the last
silently wins); --tasks-per-node is another name of --ntasks-per-node (reported when the values differ). Holds for: 22.05-26.05; the --gres/--gpus-per-node pair only from 26.05
(sbatch.before).
"""
from validator.sbatch import SAME_SETTING, before

ID = "sbatch-exclusive-options"
SEVERITY = "error"
SCOPE = "script"
DESCRIPTION = "Mutually exclusive #SBATCH options (e.g. --mem with --mem-per-gpu, --requeue with --no-requeue)."
GOOD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\nset -euo pipefail\necho ok\n"}
BAD = {"run.sbatch": "#!/bin/bash\n#SBATCH --time=00:05:00\n#SBATCH --mem=0 --mem-per-gpu=80G\necho ok\n"}

# Groups of options of which at most one may be given.
EXCLUSIVE = [
    ("mem", "mem-per-cpu", "mem-per-gpu"),
    ("requeue", "no-requeue"),
    ("exclusive", "oversubscribe"),
    ("nodelist", "nodefile"),
    ("gpus-per-task", "ntasks-per-gpu"),
]
# Two names of one setting: --tasks-per-node is the "Deprecated form of --ntasks-per-node" (its
# slurm_cli_opt_t in src/common/slurm_opt.c, slurm-22-05-0-1 and slurm-26-05-3-1: the same setter).
# Both given: the last one wins, and it matters only when the values differ.
ALIASES = [(name, alias) for alias, name in SAME_SETTING.items()]  # (--ntasks-per-node, --tasks-per-node)


# Slurm 26.05 (SchedMD/slurm 1a2bc58796, _validate_gres_vs_gpus_per_node): sbatch stops with
# "--gpus-per-node and --gres=gpu are mutually exclusive"; earlier releases take both.
GRES_VS_GPUS_PER_NODE_SINCE = "26.05"


def check(target):
    given = {}
    for option in target.script.parsed.options:
        if option.name:
            given.setdefault(option.name, option)
    if "wrap" in given:
        o = given["wrap"]
        yield (target.script.display, o.line, o.col, "--wrap replaces the script body; it has no place in a script")
    gres = given.get("gres")
    if gres is not None and "gpu" in (gres.value or "") and "gpus-per-node" in given \
            and not before(target.script.release or "0", GRES_VS_GPUS_PER_NODE_SINCE):
        later = max(gres, given["gpus-per-node"], key=lambda o: (o.line, o.col))
        yield (target.script.display, later.line, later.col,
               f"--gres=gpu and --gpus-per-node are mutually exclusive in Slurm {target.script.release}; keep one")
    for group in EXCLUSIVE:
        present = [given[name] for name in group if name in given]
        if len(present) > 1:
            later = max(present, key=lambda o: (o.line, o.col))
            names = " and ".join("--" + o.name for o in present)
            yield (target.script.display, later.line, later.col, f"{names} are mutually exclusive")
    for name, alias in ALIASES:
        if name in given and alias in given and given[name].value != given[alias].value:
            later = max(given[name], given[alias], key=lambda o: (o.line, o.col))
            yield (target.script.display, later.line, later.col,
                   f"--{alias} is the deprecated name of --{name}: given both ({given[name].value} and "
                   f"{given[alias].value}), sbatch keeps the last one; keep one")
