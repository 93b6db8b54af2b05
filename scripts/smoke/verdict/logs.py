"""Readers of what the real programs print: Megatron's iteration lines, NCCL's INFO lines, torchrun's
failure summary, pyxis' errors.

Every reader walks the log line by line, each line cut at MAX_LINE characters, and runs only
patterns anchored at a fixed place of the line (or str.find), so its time is linear in the log's
size whatever the log holds (bench/bench_verdict_logs.py times hostile logs). The formats:
- Megatron-LM core_v0.13.0 `megatron/training/training.py`, training_log(): ` [time] iteration N/
  M | key: value | ... |`; a loss is printed only when its average is > 0, so a NaN loss
  disappears from the line, and `number of nan iterations: K` says why (field notes §12).
- NCCL 2.x: `host:pid:tid [dev] NCCL INFO Using network NAME` (NAME may hold a space: `AWS
  Libfabric`), `NCCL INFO Channel ... via NET/NAME/IDX[/GDRDMA]`; srun --label puts `N: ` before.
- torchrun (torch.distributed.elastic), ChildFailedError's summary: `Root Cause (first observed
  failure):` then `host : H`, `rank : R (local_rank: L)`, `exitcode : C (pid: P)` and, for a
  signal, `(SIGNAME)` or `traceback : Signal N (SIGNAME) received by PID P`.
- pyxis: `slurmstepd: error: pyxis: MESSAGE` (slurmstepd-HOST on some builds).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

MAX_LINE = 4096  # characters of a line read; Megatron's longest line is about 600


def lines(text: str) -> list[str]:
    """Every line, cut at MAX_LINE characters."""
    return [line[:MAX_LINE] for line in text.split("\n")]


_LABEL = re.compile(r"\s{0,8}\d{1,6}: ")  # srun --label


def unlabel(line: str) -> str:
    match = _LABEL.match(line)
    return line[match.end():] if match else line


# --- Training -----------------------------------------------------------------------------------
_ITERATION = re.compile(r"iteration\s{1,40}(\d{1,9})/\s{0,40}(\d{1,9})\s{0,4}\|")


def _number(text: str) -> float | None:
    try:
        return float(text.strip())
    except ValueError:
        return None


@dataclass
class Iteration:
    step: int
    loss: float | None = None  # None: not printed (non-finite, or every micro-batch skipped)
    tflops: float | None = None
    skipped: int = 0
    nan: int = 0


@dataclass
class TrainingLog:
    iterations: list[Iteration] = field(default_factory=list)

    @property
    def losses(self) -> list[float]:
        return [i.loss for i in self.iterations if i.loss is not None]

    @property
    def tflops(self) -> list[float]:
        return [i.tflops for i in self.iterations if i.tflops is not None]


def parse_training_log(text: str) -> TrainingLog:
    """Megatron's (or the functional loop's) iteration lines, by step (a repeated step: its last line)."""
    by_step: dict[int, Iteration] = {}
    for line in lines(text):
        at = line.find("iteration")
        if at < 0:
            continue
        match = _ITERATION.match(line, at)
        while match is None:
            at = line.find("iteration", at + 1)
            if at < 0:
                break
            match = _ITERATION.match(line, at)
        if match is None:
            continue
        it = Iteration(int(match.group(1)))
        for part in line[match.end():].split("|"):
            key, _, value = part.rpartition(":")
            key = key.strip()
            if key == "lm loss":
                it.loss = _number(value)
            elif key == "throughput per GPU (TFLOP/s/GPU)":
                it.tflops = _number(value)
            elif key in ("number of skipped iterations", "number of nan iterations"):
                count = value.strip()
                count = int(count) if count.isascii() and count.isdigit() and len(count) < 10 else 0
                if key == "number of skipped iterations":
                    it.skipped = count
                else:
                    it.nan = count
        by_step[it.step] = it
    return TrainingLog([by_step[k] for k in sorted(by_step)])


# --- NCCL ---------------------------------------------------------------------------------------
# NCCL's own IB transport is "IB" (src/transport/net_ib/common.cc); the RDMA/SHARP plugin
# (Mellanox/nccl-rdma-sharp-plugins src/ib_plugin.c) names the same transport IBext_v6..IBext_v11,
# older builds "IBext".
IB_FAMILY = re.compile(r"IB(?:ext(?:_v\d+)?)?")
_USING = "NCCL INFO Using network "
_VIA = "via NET/"
_NET_TAIL = re.compile(r"([^/]{1,64})/\d{1,4}(?:\(\d{1,4}\))?(/GDRDMA)?")
_NCCL_HOST = re.compile(r"([A-Za-z0-9_-]{1,200}):\d{1,10}:\d{1,10} \[\d{1,4}\] ")


def _network_name(text: str) -> str:
    return text.strip()[:64]


def nccl_networks(log_text: str) -> set[str]:
    """The network transports NCCL reported in its INFO output (IB, Socket, a plugin's name)."""
    found = set()
    for line in lines(log_text):
        at = line.find(_USING)
        if at >= 0:
            name = _network_name(line[at + len(_USING):])
            if name:
                found.add(name)
            continue
        if "NCCL INFO" in line:
            at = line.find(_VIA)
            if at >= 0:
                match = _NET_TAIL.match(line, at + len(_VIA))
                if match:
                    found.add(match.group(1))
    return found


def network_channels(log_text: str) -> list[bool]:
    """NCCL's network channel lines: True for each that runs GPUDirect RDMA (`/GDRDMA`)."""
    out = []
    for line in lines(log_text):
        if "NCCL INFO Channel " not in line:
            continue
        at = line.find(_VIA)
        match = _NET_TAIL.match(line, at + len(_VIA)) if at >= 0 else None
        if match:
            out.append(match.group(2) is not None)
    return out


def networks_by_host(log_text: str) -> dict[str, set[str]]:
    """NCCL's host name (cut at its first dot, as NCCL prints it) -> the networks its ranks chose."""
    by_host: dict[str, set[str]] = {}
    for line in lines(log_text):
        line = unlabel(line)
        match = _NCCL_HOST.match(line)
        if not match or not line.startswith(_USING, match.end()):
            continue
        name = _network_name(line[match.end() + len(_USING):])
        if name:
            by_host.setdefault(match.group(1), set()).add(name)
    return by_host


def nccl_fallback(log_text: str, host_names, known: set | None = None) -> tuple[list[str], list[str], int]:
    """(IB-family transports any node used, the nodes that used none of them, how many nodes NCCL
    reported from): the nodes whose NCCL fell back to sockets while their peers ran over IB.
    host_names maps NCCL's host names to Slurm node names; with `known`, only those nodes count."""
    names = host_names if isinstance(host_names, dict) else {}
    by_node: dict[str, set] = {}
    for host, nets in networks_by_host(log_text).items():
        node = str(names.get(host, host))
        if known is None or node in known:
            by_node.setdefault(node, set()).update(nets)
    ib = sorted({n for nets in by_node.values() for n in nets if IB_FAMILY.fullmatch(n)})
    fell_back = sorted(node for node, nets in by_node.items() if not any(IB_FAMILY.fullmatch(n) for n in nets))
    return ib, fell_back, len(by_node)


# --- Why a stage failed -------------------------------------------------------------------------
_PYXIS = "error: pyxis: "
_PYXIS_NOISE = re.compile(r"child \d+ failed|printing enroot log")
_ROOT_CAUSE = "Root Cause (first observed failure):"
MAX_SUMMARIES = 64
_FIELD = re.compile(r"\s{0,8}(host|rank|exitcode)\s{0,12}: (\S{1,200})(.*)")
_SIGNAL = re.compile(r".{0,80}\((SIG[A-Z0-9]{1,10})\)\s*$")


def _pyxis_error(line: str) -> tuple[str | None, str] | None:
    line = unlabel(line)
    at = line.find(_PYXIS)
    if at < 0 or not line.startswith("slurmstepd"):
        return None
    head = line[:at].rstrip()
    if not head.endswith(":"):
        return None
    head = head[:-1]
    host = head[len("slurmstepd-"):] if head.startswith("slurmstepd-") else None
    if head != "slurmstepd" and (host is None or " " in host):
        return None
    message = line[at + len(_PYXIS):]
    if _PYXIS_NOISE.match(message):
        return None
    return host, message


def _root_cause(log_lines: list[str], start: int) -> tuple[str, str, str, str | None] | None:
    """host, rank, exit code and signal from the summary that starts at log_lines[start]."""
    found: dict[str, tuple[str, str]] = {}
    for line in log_lines[start + 1:start + 16]:
        match = _FIELD.match(unlabel(line))
        if match and match.group(1) not in found:
            found[match.group(1)] = (match.group(2), match.group(3))
    if not all(k in found for k in ("host", "rank", "exitcode")):
        return None
    code, rest = found["exitcode"]
    if not re.fullmatch(r"-?\d{1,4}", code) or not found["rank"][0].isdigit():
        return None
    signal = _SIGNAL.match(rest)
    return found["host"][0], found["rank"][0], code, signal.group(1) if signal else None


def failure_cause(log_text: str) -> str | None:
    """Why a stage's torchrun failed, in one line, from its log; None when the log does not say."""
    log_lines = lines(log_text)
    for line in log_lines:
        if _PYXIS in line:
            found = _pyxis_error(line)
            if found:
                host, message = found
                return (f"the container did not start on {host or 'a node'} (pyxis: {message.strip()[:300]}); the "
                        "image (SMOKE_IMAGE or the preset's) may be broken or not a root filesystem: enroot's own "
                        "lines follow pyxis' in this stage's log")
    if "RendezvousTimeoutError" in log_text:
        timeout = os.environ.get("SMOKE_RDZV_TIMEOUT", "300")
        return (f"the rendezvous did not form: not every node's torchrun joined within SMOKE_RDZV_TIMEOUT "
                f"({timeout} s); look for a node that hung or could not reach MASTER_ADDR:MASTER_PORT")
    headers = [i for i, line in enumerate(log_lines) if _ROOT_CAUSE in line]
    for i in headers[:MAX_SUMMARIES]:  # one per node's torchrun: more is not torchrun's output
        found = _root_cause(log_lines, i)
        if found:
            host, rank, code, signal = found
            how = f"was killed by {signal}" if signal and int(code) < 0 else f"exited with code {code}"
            return f"rank {rank} on {host} {how} first; the other ranks were stopped after it"
    return None
