"""SHARP/CollNet settings only on a topology whose manifest offers SHARP as an opt-in, and only under that opt-in.

Premise: SHARP/CollNet only where the manifest offers it, and only under its opt-in. Holds for:
every Slurm release (no Slurm behaviour involved). A policy of our presets, not a defect elsewhere:
strict profile only.
"""
from validator.rules.base import manifest_of

ID = "policy-sharp"
SEVERITY = "error"
SCOPE = "preset"
PROFILE = "strict"  # our presets' bar, not a defect in somebody else's job
DESCRIPTION = 'SHARP/CollNet settings only on a topology whose manifest offers SHARP as an opt-in, and only under that opt-in.'
GOOD = {"preset.yaml": None}
BAD = {"train.sbatch": ("replace", "export NCCL_NET_PLUGIN=none\n", "export NCCL_NET_PLUGIN=none\nexport NCCL_COLLNET_ENABLE=1\n")}


def _is_sharp(a):
    return (a.name == "NCCL_COLLNET_ENABLE" and a.value == "1") or a.name.startswith(("SHARP_", "NCCL_SHARP_"))


def check(target):
    manifest, script = manifest_of(target), target.script
    if not manifest or script is None:
        return
    sharp = ((manifest.get("topology") or {}).get("network") or {}).get("sharp", "none")
    for a in script.shell.assignments:
        if not _is_sharp(a):
            continue
        if sharp != "opt-in":
            yield (script.display, a.line, a.col, f"{a.name}: SHARP setting on a topology without SHARP (manifest sharp: {sharp})")
        elif not a.conditional:
            yield (script.display, a.line, a.col, f"{a.name}: SHARP is an opt-in here; set it only under the opt-in")
