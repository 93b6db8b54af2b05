"""An HCA or UCX device list of 8 IB ports outside a preset whose manifest declares 8 IB ports per node.

Premise: an 8-port device list on a topology that has fewer ports names devices that do not exist
there. Holds for: every Slurm release (no Slurm behaviour involved). A policy of our presets, not a
defect elsewhere: strict profile only.
"""
from validator.rules.base import GOOD_BATCH, bad_batch, manifest_of, setting_value

ID = "policy-8port-list"
SEVERITY = "error"
SCOPE = "script"
PROFILE = "strict"  # our presets' bar, not a defect in somebody else's job
DESCRIPTION = 'An HCA or UCX device list of 8 IB ports outside a preset whose manifest declares 8 IB ports per node.'
GOOD = {"run.sbatch": GOOD_BATCH}
BAD = bad_batch("export SLURM_EXPORT_ENV=ALL\n", "export SLURM_EXPORT_ENV=ALL\nexport UCX_NET_DEVICES=ibp0:1,ibp1:1,ibp2:1,ibp3:1,ibp4:1,ibp5:1,ibp6:1,ibp7:1\n")


import re

_IB_DEVICE = re.compile(r"^\^?=?(mlx[0-9]*_[0-9]+|ibp[0-9]+|ib[0-9]+)(:[0-9]+)?$")


def check(target):
    manifest = manifest_of(target)
    ports = (((manifest or {}).get("topology") or {}).get("network") or {}).get("ib_ports_per_node")
    if ports == 8:
        return
    for name in ("NCCL_IB_HCA", "UCX_NET_DEVICES"):
        for a in target.script.shell.assigned(name):
            entries = [e for e in setting_value(a).split(",") if e]
            if len(entries) >= 8 and all(_IB_DEVICE.match(e) for e in entries):
                where = f"a topology with {ports} IB port(s)" if ports is not None else "a script without a manifest"
                yield (target.script.display, a.line, a.col, f"{name} lists {len(entries)} IB ports in {where}")
