"""NCCL_NET names the fabric's network: IB (or a plugin's IBext_vN) on InfiniBand, Socket on Ethernet.

Premise: NCCL_NET must name the transport the fabric has. Holds for: every Slurm release (no Slurm
behaviour involved). A policy of our presets, not a defect elsewhere: strict profile only.
"""
import re

from validator.rules.base import manifest_of, setting_value, topology_settings

ID = "policy-net-name"
SEVERITY = "error"
SCOPE = "preset"
PROFILE = "strict"  # our presets' bar, not a defect in somebody else's job
DESCRIPTION = ("NCCL_NET names the fabric's network (NCCL compares it case-insensitively with each network's "
               "name and fails when none matches): IB, IBext or IBext_vN (the RDMA/SHARP plugin) on InfiniBand, "
               "Socket on Ethernet.")
GOOD = {"preset.yaml": None}
BAD = {"train.sbatch": ("replace", "export NCCL_NET_PLUGIN=none\n", "export NCCL_NET_PLUGIN=none\nexport NCCL_NET=IB\n")}

IB_FAMILY = re.compile(r"ib(ext(_v[0-9]+)?)?", re.IGNORECASE)  # NCCL's "IB"; Mellanox/nccl-rdma-sharp-plugins' IBext_v6..v11
EXPECTED = {"infiniband": ("IB", IB_FAMILY.fullmatch), "ethernet": ("Socket", lambda v: v.lower() == "socket")}


def check(target):
    manifest, script = manifest_of(target), target.script
    if not manifest or script is None:
        return
    fabric = ((manifest.get("topology") or {}).get("network") or {}).get("fabric")
    if fabric not in EXPECTED:
        return
    name, fits = EXPECTED[fabric]
    for a in topology_settings(script.shell).get("NCCL_NET", []):
        value = setting_value(a)
        if not fits(value):
            yield (script.display, a.line, a.col,
                   f"NCCL_NET={value} on this {fabric} topology: NCCL would use that network or fail; use {name}")
