"""IB settings (NCCL_IB_HCA, IB devices in UCX_NET_DEVICES) on an Ethernet topology, which must set NCCL_IB_DISABLE=1; NCCL_IB_DISABLE=1 on an InfiniBand topology."""
from validator.rules.base import manifest_of, setting_value, topology_settings

ID = "policy-fabric"
SEVERITY = "error"
SCOPE = "preset"
PROFILE = "strict"  # our presets' bar, not a defect in somebody else's job
DESCRIPTION = 'IB settings (NCCL_IB_HCA, IB devices in UCX_NET_DEVICES) on an Ethernet topology, which must set NCCL_IB_DISABLE=1; NCCL_IB_DISABLE=1 on an InfiniBand topology.'
GOOD = {"preset.yaml": None}
BAD = {"train.sbatch": ("replace", "export NCCL_IB_DISABLE=1\n", "export NCCL_IB_HCA=mlx5_\n")}


import re

_IB_DEVICE = re.compile(r"(^|[,=^])(mlx\d*_|ibp|ib\d|hfi|bnxt_re)")


def check(target):
    manifest, script = manifest_of(target), target.script
    if not manifest or script is None:
        return
    fabric = ((manifest.get("topology") or {}).get("network") or {}).get("fabric")
    settings = topology_settings(script.shell)
    if fabric == "ethernet":
        for a in settings.get("NCCL_IB_HCA", []):
            yield (script.display, a.line, a.col, "NCCL_IB_HCA on an Ethernet-only topology")
        for a in settings.get("UCX_NET_DEVICES", []):
            if _IB_DEVICE.search(setting_value(a)):
                yield (script.display, a.line, a.col, f"UCX_NET_DEVICES={setting_value(a)} names IB devices on an Ethernet-only topology")
        if not any(setting_value(a) == "1" and not a.conditional for a in settings.get("NCCL_IB_DISABLE", [])):
            yield (script.display, script.parsed.first_command_line or 1, 1,
                   "Ethernet-only topology without NCCL_IB_DISABLE=1: NCCL probes for IB devices")
    elif fabric == "infiniband":
        for a in settings.get("NCCL_IB_DISABLE", []):
            if setting_value(a) == "1":
                yield (script.display, a.line, a.col, "NCCL_IB_DISABLE=1 on an InfiniBand topology: traffic falls back to sockets")
