"""An InfiniBand preset names its compute HCAs in NCCL_IB_HCA: NCCL's IB transport also takes active RoCE ports.

Premise: NCCL's IB transport also takes active RoCE ports unless NCCL_IB_HCA names the HCAs.
Holds for: every Slurm release (no Slurm behaviour involved). A policy of our presets, not a defect
elsewhere: strict profile only.
"""
from validator.rules.base import manifest_of, topology_settings

ID = "policy-ib-hca"
SEVERITY = "error"
SCOPE = "preset"
PROFILE = "strict"  # our presets' bar, not a defect in somebody else's job
DESCRIPTION = ("An InfiniBand preset sets NCCL_IB_HCA: without it NCCL's IB transport also uses any active RoCE "
               "port, such as the front-end NIC (NVIDIA/nccl src/transport/net_ib/init.cc).")
GOOD = {"preset.yaml": None}
BAD = {"preset.yaml": ("replace", "    fabric: ethernet\n", "    fabric: infiniband\n")}


def check(target):
    manifest, script = manifest_of(target), target.script
    if not manifest or script is None:
        return
    if ((manifest.get("topology") or {}).get("network") or {}).get("fabric") != "infiniband":
        return
    if not any(not a.conditional for a in topology_settings(script.shell).get("NCCL_IB_HCA", [])):
        yield (script.display, script.parsed.first_command_line or 1, 1,
               "InfiniBand preset without NCCL_IB_HCA: NCCL would also put traffic on active RoCE ports "
               "(a front-end NIC); name the compute HCAs")
