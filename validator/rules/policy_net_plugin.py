"""A preset pins NCCL_NET_PLUGIN: otherwise whatever plugin sits on the image's library path (HPC-X SHARP) is loaded by chance.

Premise: an unpinned NCCL_NET_PLUGIN loads whatever plugin sits on the image's library path.
Holds for: every Slurm release (no Slurm behaviour involved). A policy of our presets, not a defect
elsewhere: strict profile only.
"""


ID = "policy-net-plugin"
SEVERITY = "error"
SCOPE = "preset"
PROFILE = "strict"  # our presets' bar, not a defect in somebody else's job
DESCRIPTION = "A preset pins NCCL_NET_PLUGIN: otherwise whatever plugin sits on the image's library path (HPC-X SHARP) is loaded by chance."
GOOD = {"preset.yaml": None}
BAD = {"train.sbatch": ("replace", "export NCCL_NET_PLUGIN=none\n", "")}


def check(target):
    script = target.script
    if script is None or target.preset is None:
        return
    if not any(not a.conditional for a in script.shell.assigned("NCCL_NET_PLUGIN")):
        yield (script.display, script.parsed.first_command_line or 1, 1,
               "NCCL_NET_PLUGIN is not set: pin it ('none' unless the fabric needs a plugin)")
