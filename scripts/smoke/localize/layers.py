"""The localization layers as a table: what each suspects, which check names it, what to do.

Adding a layer: a row here (smoke.vocab.LAYERS is its names), the check that names it
(smoke.localize.judge or the search) and its paragraph in docs/localization.md. The verdict prints
`what to do` beside every suspect of the layer. Standard library only: smoke.vocab imports it.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Layer:
    name: str
    suspects: str  # what a node named in this layer is suspected of
    named_by: str  # the check that names it
    what_to_do: str


TABLE = {layer.name: layer for layer in (
    Layer("gpu", "a GPU slower than its peers' (clocks, thermals, a degraded HBM or PCIe link)",
          "per-node step: bf16 GEMM on each GPU, the node's slowest against its peers' median and the floor",
          "check nvidia-smi -q (clocks, throttle reasons, ECC) and run the vendor's diagnostics (dcgmi diag -r 3)"),
    Layer("node-link", "the GPUs of one node talking slowly to each other (NVLink, NVSwitch, PCIe)",
          "per-node step: an all-reduce among the node's own GPUs at the probe's largest size",
          "check nvidia-smi nvlink -s and nvidia-smi topo -m; fabric manager on NVSwitch systems"),
    Layer("network", "the node's network path (NIC, cable, switch port, its link rate)",
          "group steps: all-reduces between disjoint groups, slow groups halved and confirmed in pairs",
          "check the node's ports (ibstat, link rate and errors, ethtool -S) and its switch port"),
    Layer("config", "a setting or device the node differs in (GPU count, NCCL's transport)",
          "per-node step's GPU count against Slurm's; NCCL's transport per node in the probe's log",
          "compare the node's GRES, driver, HCA state and container devices with a healthy node's"),
    Layer("rank", "one rank outside the collective its peers wait in: stuck or spinning in its own code "
                  "(a data loader, a file system call, a loop), so the job stalls",
          "the hang watchdog: the rank's stack (faulthandler) or NCCL's flight recorder against its peers'",
          "read its stack in hang.json; rerun once: the same node again means the node (file system, memory, "
          "CPU), another node means the program"),
    Layer("unresponsive", "no usable result within the step's time limit (hung, dead or garbled), or a rank "
                          "stopped or gone while its peers wait",
          "per-node step: no report, or an unusable one, from the node; the hang watchdog: process states",
          "log in or check slurmd's log on the node; drain it until it answers"),
)}
