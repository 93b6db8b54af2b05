"""The job's vocabulary, once: every other module and the validator take these names from here."""
from __future__ import annotations

# --- Modes -------------------------------------------------------------------------------------
# A mode encodes two facts: whether ranks run on CPU (gloo, the small training loop) and whether
# steps run in a container (pyxis). Code asks the fact, never the spelling.
MODES = ("full", "functional", "container-functional")


def on_cpu(mode: str) -> bool:
    """CPU processes stand in for the GPUs: plumbing is judged, speed is not."""
    return mode in ("functional", "container-functional")


def in_container(mode: str) -> bool:
    """Every step runs in the image under pyxis (full mode runs the real image)."""
    return mode in ("full", "container-functional")


def judged_as(mode: str) -> str:
    """The yardstick a mode's figures are held to: 'full' (GPUs) or 'functional' (CPU)."""
    return "functional" if on_cpu(mode) else "full"


# --- Architectures -----------------------------------------------------------------------------
# The CPU architectures a preset can assume, as `uname -m` names them, and each one's name on
# container platforms (and in image manifests); the other spellings tools print map onto them.
ARCHES = {"x86_64": "amd64", "aarch64": "arm64"}
ARCH_ALIASES = {**{a: a for a in ARCHES}, **{p: a for a, p in ARCHES.items()}}


def normal_arch(machine: str) -> str:
    """`uname -m` or a container platform name, as the manifests spell it (unknown ones unchanged)."""
    return ARCH_ALIASES.get(machine, machine)


# --- Fabrics -----------------------------------------------------------------------------------
# The fabrics NCCL's IB verbs transport runs on (it reports NET/IB on both), each with the link
# layer its ports show in /sys/class/infiniband/*/ports/*/link_layer; "ethernet" is TCP sockets.
RDMA_FABRICS = {"infiniband": "InfiniBand", "roce": "RoCE"}
LINK_LAYER = {"infiniband": "InfiniBand", "roce": "Ethernet"}

# --- Verdict states ----------------------------------------------------------------------------
PASS, WARN, FAIL = "PASS", "WARN", "FAIL"
SEVERITY = {PASS: 0, WARN: 1, FAIL: 2}

# --- Localization layers -----------------------------------------------------------------------
# What a suspect node is suspected of: the names of smoke.localize.layers' table, which says what
# each means, which check names it and what to do (docs/localization.md).
from smoke.localize.layers import TABLE as _LAYER_TABLE  # noqa: E402 - the table is the one place

LAYERS = tuple(_LAYER_TABLE)

# --- Ports -------------------------------------------------------------------------------------
# Derived from the job id so that jobs sharing a node do not collide; below 32768, where the Linux
# ephemeral port range starts. Localization's steps take the ports after the job's own.
PORT_BASE, PORT_SPAN = 20000, 12000


def rendezvous_port(job_id: int) -> int:
    return PORT_BASE + job_id % PORT_SPAN


def step_port(base_port: int, step: int) -> int:
    """The port of localization's step `step` (1, 2, ...) when the job's rendezvous uses base_port."""
    return PORT_BASE + (base_port - PORT_BASE + step) % PORT_SPAN


# --- The probe's all-reduce sizes --------------------------------------------------------------
MIB = 2**20
PROBE_GPU_SIZES = tuple(MIB * 4**k for k in range(7))  # 1 MiB .. 4 GiB
PROBE_CPU_SIZES = tuple(2**16 * 4**k for k in range(3))  # 64 KiB .. 1 MiB: functional modes check plumbing only
# The size the presets' intra_node_busbw_gbs floors are figures for.
PROBE_LARGEST_GPU_BYTES = PROBE_GPU_SIZES[-1]
