"""Binds one torchrun rank to the CPUs of its GPU's NUMA node, then runs the rank's program.

torchrun starts it for every local rank (torchrun-node, `--no-python`):
    python -m smoke.rank_bind PROGRAM.py|-m MODULE [ARGS...]  ->  exec PYTHON -u PROGRAM|-m MODULE ARGS with this rank's CPU affinity

Why: a preset runs one Slurm task per node and torchrun starts every GPU's rank inside it, so
Slurm's CPU binding (--distribution=block:block) applies to the task, not to each rank: all ranks
float over every CPU of the node and each GPU's host buffers can sit on the far socket. torchrun's
own `--numa-binding` appeared in PyTorch 2.9; the pinned image ships 2.6.

What it binds to: the CPUs of the GPU's PCI device (sysfs `local_cpulist`) that the task may use
(Slurm's cpuset), so a job never widens what Slurm gave it. Nothing is changed, with one line saying
why, where binding means nothing or cannot be done: one NUMA node with CPUs (a VM, one socket,
GH200's single Grace), the GPU's NUMA node unknown (-1), or no overlap with the task's CPUs.
SMOKE_NUMA_BIND=never turns it off. The GPU: the LOCAL_RANK-th entry of CUDA_VISIBLE_DEVICES (Slurm's
allocation) looked up by nvidia-smi, whose order is the PCI bus order CUDA uses for identical GPUs.
Standard library only: it runs before any torch import and costs about 50 ms per rank.
"""
from __future__ import annotations

import glob
import os
import re
import stat
import subprocess
import sys

SYSFS = os.environ.get("SMOKE_SYSFS_ROOT", "") or "/"


# No node this runs on numbers a CPU above this; a cpulist such as `0-3000000000` (a doctored
# SMOKE_SYSFS_ROOT, a corrupt file) would otherwise take minutes and gigabytes to expand.
MAX_CPU = 65535
SYSFS_MAX_BYTES = 4096  # one sysfs attribute is at most one page
_BUS_ID = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]", re.ASCII)
_CPU_RANGE = re.compile(r"([0-9]{1,10})(?:-([0-9]{1,10}))?", re.ASCII)


def parse_cpulist(text: str) -> set[int]:
    """Linux's cpulist format: `0-3,8,10-11`; ValueError for anything else or a CPU above MAX_CPU.
    Ranges are merged before they are expanded, so the work is bounded by MAX_CPU, not the text."""
    ranges = []
    for part in text.strip().split(","):
        if not part:
            continue
        match = _CPU_RANGE.fullmatch(part)
        if not match:
            raise ValueError(f"cpulist {text[:80]!r}: {part[:40]!r} is not a CPU number or range")
        low, high = int(match.group(1)), int(match.group(2) or match.group(1))
        if low > high or high > MAX_CPU:
            raise ValueError(f"cpulist {text[:80]!r}: range {part[:40]!r} is reversed or above CPU {MAX_CPU}")
        ranges.append((low, high))
    cpus: set[int] = set()
    end = -1
    for low, high in sorted(ranges):
        cpus.update(range(max(low, end + 1), high + 1))
        end = max(end, high)
    return cpus


def format_cpulist(cpus: set[int]) -> str:
    ranges, ordered = [], sorted(cpus)
    for cpu in ordered:
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(f"{a}-{b}" if a != b else str(a) for a, b in ranges)


def sysfs(path: str) -> str:
    """A sysfs attribute under SYSFS: a regular file (a FIFO is refused, never waited on), one page
    at most, ASCII; ValueError or OSError otherwise."""
    full = os.path.join(SYSFS, path.lstrip("/"))
    fd = os.open(full, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{full}: not a regular file")
        data = os.read(fd, SYSFS_MAX_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > SYSFS_MAX_BYTES:
        raise ValueError(f"{full}: over {SYSFS_MAX_BYTES} bytes")
    try:
        return data.decode("ascii").strip()
    except UnicodeDecodeError as exc:
        raise ValueError(f"{full}: byte 0x{data[exc.start]:02x} at offset {exc.start} is not ASCII") from None


def numa_nodes_with_cpus() -> int:
    nodes = glob.glob(os.path.join(SYSFS, "sys/devices/system/node/node[0-9]*/cpulist"))
    return sum(1 for path in nodes if sysfs(os.path.relpath(path, SYSFS)))


def gpu_bus_id(local_rank: int) -> str:
    """The sysfs name (`0000:45:00.0`) of this rank's GPU."""
    visible = [v for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    selector = visible[local_rank] if local_rank < len(visible) else str(local_rank)
    out = subprocess.run(["nvidia-smi", "--query-gpu=pci.bus_id", "--format=csv,noheader", "-i", selector.strip()],
                         capture_output=True, text=True, timeout=30, check=True).stdout.strip().splitlines()[0]
    domain, _, rest = out.strip().lower().partition(":")
    bus = f"{domain[-4:]}:{rest}"  # nvidia-smi prints an 8-digit domain, sysfs a 4-digit one
    if not _BUS_ID.fullmatch(bus):  # it becomes a path under sysfs
        raise ValueError(f"nvidia-smi printed {out[:60]!r}, not a PCI bus id")
    return bus


def plan(local_rank: int, allowed: set[int]) -> tuple[set[int] | None, str]:
    """The CPUs to bind this rank to (None: leave it), and a line saying what and why."""
    if os.environ.get("SMOKE_NUMA_BIND", "auto") == "never":
        return None, "SMOKE_NUMA_BIND=never: not binding"
    try:
        if numa_nodes_with_cpus() < 2:
            return None, "one NUMA node with CPUs: nothing to bind"
    except (OSError, ValueError) as exc:
        return None, f"NUMA nodes unreadable ({exc}): not binding"
    try:
        bus = gpu_bus_id(local_rank)
        numa = int(sysfs(f"/sys/bus/pci/devices/{bus}/numa_node"))
        local = parse_cpulist(sysfs(f"/sys/bus/pci/devices/{bus}/local_cpulist"))
    except (OSError, ValueError, IndexError, subprocess.SubprocessError) as exc:
        return None, f"GPU of local rank {local_rank} not found or its sysfs unusable ({exc}): not binding"
    if numa < 0:
        return None, f"GPU {bus}: NUMA node unknown: not binding"
    cpus = local & allowed
    if not cpus:
        return None, (f"GPU {bus} on NUMA node {numa} (CPUs {format_cpulist(local)}) has none of this task's CPUs "
                      f"({format_cpulist(allowed)}): not binding; give the job whole nodes (--exclusive)")
    return cpus, f"GPU {bus} NUMA node {numa}: CPUs {format_cpulist(cpus)}"


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: python -m smoke.rank_bind PROGRAM.py|-m MODULE [ARGS...]", file=sys.stderr)
        return 2
    raw_rank = os.environ.get("LOCAL_RANK", "0")
    if re.fullmatch(r"[0-9]{1,5}", raw_rank, re.ASCII):
        local_rank = int(raw_rank)
        cpus, line = plan(local_rank, os.sched_getaffinity(0))
    else:  # torchrun sets it; anything else is said, and the rank still runs
        local_rank, cpus, line = 0, None, f"LOCAL_RANK {raw_rank[:40]!r} is not a number: not binding"
    if cpus is not None:
        os.sched_setaffinity(0, cpus)
    if local_rank == 0 or cpus is not None:
        print(f"rank-bind: local rank {local_rank}: {line}", file=sys.stderr, flush=True)
    # as torchrun itself starts a rank; through the watchdog's rank side when the stage is watched
    watched = os.environ.get("SMOKE_WATCH_DIR") and os.environ.get("SMOKE_WATCHDOG", "1") != "0"
    os.execv(sys.executable, [sys.executable, "-u"] + (["-m", "smoke.watchdog.inrank"] if watched else []) + argv)
    return 3  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
