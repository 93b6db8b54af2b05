"""Fabric settings that contradict the manifest's fabric (ethernet, infiniband, roce).

Premise: settings for one fabric (IB HCAs, socket interfaces) contradict a manifest that declares
another. Holds for: every Slurm release (no Slurm behaviour involved). A policy of our presets, not
a defect elsewhere: strict profile only.
"""
from validator.catalog import RDMA_FABRICS
from validator.rules.base import manifest_of, setting_value, topology_settings

ID = "policy-fabric"
SEVERITY = "error"
SCOPE = "preset"
PROFILE = "strict"  # our presets' bar, not a defect in somebody else's job
DESCRIPTION = ('IB settings (NCCL_IB_HCA, IB devices in UCX_NET_DEVICES) on an Ethernet topology, which must set '
               'NCCL_IB_DISABLE=1; NCCL_IB_DISABLE=1 on an InfiniBand or RoCE topology; NCCL_IB_GID_INDEX on RoCE '
               'where NCCL (>= 2.21) selects the GID itself.')
GOOD = {"preset.yaml": None}
BAD = {"train.sbatch": ("replace", "export NCCL_IB_DISABLE=1\n", "export NCCL_IB_HCA=mlx5_\n")}


import re

_IB_DEVICE = re.compile(r"(^|[,=^])(mlx[0-9]*_|ibp|ib[0-9]|hfi|bnxt_re)")


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
    elif fabric in RDMA_FABRICS:
        for a in settings.get("NCCL_IB_DISABLE", []):
            if setting_value(a) == "1":
                yield (script.display, a.line, a.col,
                       f"NCCL_IB_DISABLE=1 on an {RDMA_FABRICS[fabric]} topology: traffic falls back to sockets")
    if fabric == "roce" and _version(((manifest.get("software") or {}).get("nccl_min"))) >= (2, 21):
        for a in settings.get("NCCL_IB_GID_INDEX", []):
            yield (script.display, a.line, a.col,
                   "NCCL_IB_GID_INDEX on RoCE with NCCL >= 2.21: NCCL picks the RoCE v2 GID itself "
                   "(NCCL_IB_ROCE_VERSION_NUM, NCCL_IB_ADDR_FAMILY/RANGE steer it); a forced index breaks "
                   "where GID tables differ")


def _version(text) -> tuple:
    try:
        return tuple(int(p) for p in str(text).split(".")[:2])
    except ValueError:
        return ()
