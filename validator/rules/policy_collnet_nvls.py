"""NCCL_COLLNET_ENABLE=0 or NCCL_NVLS_ENABLE=0 set unconditionally: costs bandwidth everywhere to work around one site.

Premise: turning CollNet/NVLS off everywhere costs bandwidth on clusters that have them. Holds for:
every Slurm release (no Slurm behaviour involved). A policy of our presets, not a defect elsewhere:
strict profile only.
"""
from validator.rules.base import GOOD_BATCH, bad_batch

ID = "policy-collnet-nvls"
SEVERITY = "error"
SCOPE = "script"
PROFILE = "strict"  # our presets' bar, not a defect in somebody else's job
DESCRIPTION = 'NCCL_COLLNET_ENABLE=0 or NCCL_NVLS_ENABLE=0 set unconditionally: costs bandwidth everywhere to work around one site.'
GOOD = {"run.sbatch": GOOD_BATCH}
BAD = bad_batch("export SLURM_EXPORT_ENV=ALL\n", "export SLURM_EXPORT_ENV=ALL\nexport NCCL_NVLS_ENABLE=0\n")


def check(target):
    for a in target.script.shell.assignments:
        if a.name in ("NCCL_COLLNET_ENABLE", "NCCL_NVLS_ENABLE") and a.value == "0" and not a.conditional:
            yield (target.script.display, a.line, a.col,
                   f"{a.name}=0 unconditionally: NCCL picks these only where they help; disable them for a named reason, conditionally")
