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
Every other format read here (Slurm's own lines, CUDA out of memory, the NCCL watchdog, NCCL's IB and
OFI errors, rendezvous, fp16 loss scalers, enroot, GPU errors), with the source file and release each
was checked in, is in docs/verdict-log-formats.md; the real excerpts they were tested on are indexed in
docs/verdict-real-logs.tsv.
"""
from __future__ import annotations

import math
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
    grad_finite: bool = True  # False: "grad norm: nan" (or inf)
    scale: float | None = None  # fp16 loss scale


@dataclass
class TrainingLog:
    iterations: list[Iteration] = field(default_factory=list)
    # lines outside Megatron's iteration line that say how training went
    overflows: int = 0  # fp16 loss-scaler overflows (DeepSpeed, apex)
    overflow_scale: float | None = None  # the lowest loss scale they reduced to
    overflow_rank: str | None = None
    scale_at_minimum: bool = False  # DeepSpeed: "Current loss scale already at minimum"
    nan_check: dict | None = None  # Megatron's own NaN/Inf check fired: rank, node, iteration, what
    progress_losses: list[float] = field(default_factory=list)  # NeMo/Lightning: loss=, reduced_train_loss=

    @property
    def losses(self) -> list[float]:
        return [i.loss for i in self.iterations if i.loss is not None]

    @property
    def tflops(self) -> list[float]:
        return [i.tflops for i in self.iterations if i.tflops is not None]


# fp16 loss scalers: DeepSpeed runtime/fp16/loss_scaler.py ("[deepspeed] OVERFLOW! Rank R Skipping step.
# Attempted loss scale: S, reducing to T"), its older fused_optimizer.py ("[Rank R] Overflow detected.
# Skipping step. Attempted loss scale: S, reducing to T") and apex amp ("Gradient overflow.  Skipping
# step, loss scaler 0 reducing loss scale to T")
_OVERFLOW_MARKS = ("OVERFLOW! Rank ", "Overflow detected. Skipping step", "Gradient overflow.")
_RANK_DIGITS = re.compile(r"(\d{1,9})")
_REDUCING_TO = re.compile(r"([0-9.eE+-]{1,30})")
# Megatron core_v0.13.0 megatron/core/rerun_state_machine.py (validate_result, rerun mode disabled)
_NAN_CHECK = re.compile(r"Rank (\d{1,9}), node ([\w.-]{1,100}), device \d{1,4}, iteration (\d{1,12}): "
                        r"Unexpected result \S{1,40} \(message='found (NaN|Inf) in ([^']{1,200})'\)")
# older Megatron and its forks: "Rank 3: found NaN in local grad norm in backwards pass. Device: 3, node: H"
_NAN_ASSERT = re.compile(r"Rank (\d{1,9}): found (NaN|Inf) in local ([a-z ]{1,60})[.]"
                         r"(?: Device: \d{1,4}, node: ([\w.-]{1,100}))?")
_PROGRESS_LOSS = re.compile(r"(nan|inf|[0-9][0-9.eE+-]{0,29})")


def _first_label(host: str | None) -> str | None:
    """A host as Slurm names nodes: the first label of an FQDN."""
    return host.split(".")[0] if host else None


def _read_other_training_line(line: str, log: TrainingLog) -> None:
    """Loss-scaler, NaN-check and progress-bar lines (not Megatron's iteration line)."""
    for mark in _OVERFLOW_MARKS:
        at = line.find(mark)
        if at < 0:
            continue
        log.overflows += 1
        if mark == "OVERFLOW! Rank ":
            rank = _RANK_DIGITS.match(line, at + len(mark))
        else:
            start = line.rfind("[Rank ", 0, at)
            rank = _RANK_DIGITS.match(line, start + len("[Rank ")) if start >= 0 else None
        log.overflow_rank = log.overflow_rank or (rank.group(1) if rank else None)
        to = line.find("reducing ", at)
        if to >= 0:
            to = line.find("to ", to)
            value = _REDUCING_TO.match(line, to + 3) if to >= 0 else None
            scale = _number(value.group(1)) if value else None
            if scale is not None and (log.overflow_scale is None or scale < log.overflow_scale):
                log.overflow_scale = scale
        break
    if "Current loss scale already at minimum" in line:
        log.scale_at_minimum = True
    if log.nan_check is None and "found " in line and "Rank " in line:
        log.nan_check = nan_check(line)
    for key in ("reduced_train_loss=", " loss="):
        at = line.find(key)
        if at >= 0:
            value = _PROGRESS_LOSS.match(line, at + len(key))
            if value:
                log.progress_losses.append(_number(value.group(1)))


def nan_check(line: str) -> dict | None:
    """Megatron's NaN/Inf check message on this line: rank, node, iteration, what was found."""
    at = line.find("Rank ")
    for _ in range(4):  # a line holds at most a couple of "Rank " words
        if at < 0:
            return None
        match = _NAN_CHECK.match(line, at)
        if match:
            return {"rank": match.group(1), "node": _first_label(match.group(2)), "iteration": match.group(3),
                    "what": f"{match.group(4)} in {match.group(5)}"}
        match = _NAN_ASSERT.match(line, at)
        if match:
            return {"rank": match.group(1), "node": _first_label(match.group(4)), "iteration": None,
                    "what": f"{match.group(2)} in local {match.group(3)}"}
        at = line.find("Rank ", at + 1)
    return None


def parse_training_log(text: str) -> TrainingLog:
    """Megatron's (or the functional loop's) iteration lines, by step (a repeated step: its last line),
    and the loss-scaler, NaN-check and progress-bar lines around them."""
    by_step: dict[int, Iteration] = {}
    log = TrainingLog()
    for line in lines(text):
        at = line.find("iteration")
        match = None
        while at >= 0 and match is None:
            match = _ITERATION.match(line, at)
            if match is None:
                at = line.find("iteration", at + 1)
        if match is None:
            _read_other_training_line(line, log)
            continue
        it = Iteration(int(match.group(1)))
        for part in line[match.end():].split("|"):
            key, _, value = part.rpartition(":")
            key = key.strip()
            if key in ("lm loss", "lm_loss"):  # lm_loss: GPT-NeoX's Megatron fork
                it.loss = _number(value)
            elif key == "throughput per GPU (TFLOP/s/GPU)":
                it.tflops = _number(value)
            elif key == "grad norm":
                norm = _number(value)
                it.grad_finite = norm is None or math.isfinite(norm)
            elif key == "loss scale":
                it.scale = _number(value)
            elif key in ("number of skipped iterations", "number of nan iterations"):
                count = value.strip()
                count = int(count) if count.isascii() and count.isdigit() and len(count) < 10 else 0
                if key == "number of skipped iterations":
                    it.skipped = count
                else:
                    it.nan = count
        by_step[it.step] = it
    log.iterations = [by_step[k] for k in sorted(by_step)]
    return log


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


# What NCCL's net plugins found at init (src/transport/net_ib/init.cc, net_socket.cc): "NET/IB : Using
# [0]mlx5_0:1/IB ..." names IB devices, "NET/IB : No device found." none. "NET/Socket : Using ..." is
# printed at init even when IB is used afterwards: it means sockets only when no IB device was found.
_IB_DEVICES = ("NCCL INFO NET/IB : Using [", "NCCL INFO NET/IB: Using [")
_IB_NONE = "NCCL INFO NET/IB : No device found"
_SOCKET_INIT = ("NCCL INFO NET/Socket : Using", "NCCL INFO NET/Socket: Using")


def _init_networks(log_lines: list[str]) -> set[str]:
    """IB or Socket from the plugins' init lines, for a log without "Using network" or channel lines."""
    ib = none = sockets = False
    for line in log_lines:
        if "NCCL INFO NET/" not in line:
            continue
        ib = ib or any(mark in line for mark in _IB_DEVICES)
        none = none or _IB_NONE in line
        sockets = sockets or any(mark in line for mark in _SOCKET_INIT)
    return {"IB"} if ib else ({"Socket"} if none or sockets else set())


def nccl_networks(log_text: str) -> set[str]:
    """The network transports NCCL reported in its INFO output (IB, Socket, a plugin's name); without
    "Using network" or channel lines, what its plugins found at init."""
    found = set()
    log_lines = lines(log_text)
    for line in log_lines:
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
    return found or _init_networks(log_lines)


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
# One pass over the log collects what each program said (Evidence); the cause readers below turn it
# into Causes, each one sentence with the cause, the node and rank where the log names them, and what
# to do. The strongest evidence wins: a root cause (out of memory, a dead GPU, Slurm's limit) before the
# symptoms it leaves (a SIGKILL, a collective timeout on the ranks that waited, srun's task lines).
_PYXIS = "error: pyxis: "
_PYXIS_NOISE = re.compile(r"child \d+ failed|printing enroot log")
_ROOT_CAUSE = "Root Cause (first observed failure):"
MAX_SUMMARIES = 64
_FIELD = re.compile(r"\s{0,8}(host|rank|exitcode|traceback)\s{0,12}: (\S{1,200})(.{0,300})")
_SIGNAL = re.compile(r".{0,80}\((SIG[A-Z0-9]{1,10})\)\s*$")
_SIGNAL_MESSAGE = re.compile(r"Signal (\d{1,3}) \((SIG[A-Z0-9]{1,10})\) received by PID")
_SIGNAL_NAMES = {"-9": "SIGKILL", "-15": "SIGTERM", "-6": "SIGABRT", "-11": "SIGSEGV", "-7": "SIGBUS", "-2": "SIGINT"}
# Slurm 24.05 src/slurmd/slurmstepd/req.c; Slurm <= 17 wrote "... CANCELLED AT T DUE TO TIME LIMIT on NODE ***"
_CANCELLED = re.compile(r"\*\*\* (?:JOB|STEP) ([0-9_.]{1,30})(?: ON ([\w.-]{1,100}))? CANCELLED AT (\S{1,30})"
                        r"(?: DUE TO ([A-Z]{1,12}(?: [A-Z]{1,12}){0,2}))?(?: on ([\w.-]{1,100}))?")
_OOM_EVENTS = re.compile(r"Detected (\d{1,9}) oom[-_]kill event")  # task_cgroup_memory.c, 20.11 and 24.05 wording
_OVER_LIMIT = re.compile(r"exceeded memory limit \((\d{1,20}) > (\d{1,20})\), being killed")  # jobacct_gather.c
_SRUN_TASK = re.compile(r"([\w.-]{1,100}): (tasks? [0-9,-]{1,200}): (Out Of Memory|Killed|Terminated|Bus error|"
                        r"Segmentation fault|Aborted|Exited with exit code \d{1,3})")  # srun/launch.c
# how telling an srun task end is: Terminated is mostly srun stopping the others after a failure
_TASK_END = {"Out Of Memory": 5, "Killed": 4, "Bus error": 4, "Segmentation fault": 4, "Aborted": 4,
             "Exited": 2, "Terminated": 1}
# c10/cuda/CUDACachingAllocator.cpp: "... Tried to allocate 3.50 GiB. GPU 2 has ..." (torch >= 2.1) or
# "... Tried to allocate 296.00 MiB (GPU 0; ..." (older)
_OOM_SIZE = re.compile(r"([0-9.]{1,12} [KMGT]?i?B)(?:\. GPU (\d{1,3})| \(GPU (\d{1,3}))?")
# torch >= 2.3 puts "[rankN]:" before a rank's lines; mpirun puts "[1,N]<stdout>:"
_RANK_PREFIX = re.compile(r"\[rank(\d{1,9})\]:|\[\d{1,4},(\d{1,9})\]<std(?:out|err)>:")
# ProcessGroupNCCL.cpp WorkNCCL::checkTimeout: "[..Rank R] Watchdog caught collective operation timeout:
# WorkNCCL(SeqNum=S, OpType=OP, [NumelIn=.., NumelOut=.., ]Timeout(ms)=T) ran for M milliseconds before timing out."
_WATCHDOG = "Watchdog caught collective operation timeout: "
_WATCHDOG_RANK = re.compile(r"Rank (\d{1,9})\] $")
_WORK = re.compile(r"WorkNCCL\(SeqNum=(\d{1,15}), OpType=(\w{1,40})")
_DIGITS = re.compile(r"(\d{1,15})")
# NCCL's INFO/WARN prefix (src/debug.cc): host:pid:tid [dev]
_NCCL_WARN_HOST = re.compile(r"([A-Za-z0-9][\w.-]{0,99}):\d{1,10}:\d{1,10} \[\d{1,4}\] ")
_PEER = re.compile(r"(\S{1,80}) with (?:status=|error )([A-Z_]{0,30}\(?-?\d{1,4})")
_VERBS = re.compile(r"(ibv_\w{1,40}) failed with (?:error )?(?:\d{1,4} )?([A-Za-z][A-Za-z ]{1,60})")
_CHILD_FAILED = re.compile(r"(-?\d{1,4})\) local_rank: (\d{1,6})")  # api.py: "failed (exitcode: C) local_rank: L"
_CONNECT_TO = re.compile(r"\(?\[?([^\]\s,()]{1,100})\]?(?:, |:)(\d{1,5})")
# pyxis v0.24.0 enroot.c / common.c, enroot v4.1.2 src/common.sh
_ENROOT_URL = re.compile(r"(\S{1,300}) returned error code: (\d{3})(?: ([A-Za-z ]{1,40}))?")
_NODE_SIDE = ("nvidia-container-cli: ", "cannot create directory", "No space left on device",
              "Can't find a SQUASHFS superblock", "enroot-mount: failed to mount", "Permission denied",
              "operation not permitted", "enroot-nsenter: failed", "seccomp filter failed")
_XID = re.compile(r"([0-9a-fA-F:.]{1,20})\): (\d{1,4}), ([^\r\n]{0,80})")
_GPU_HANDLE = re.compile(r"([0-9A-Fa-f:.]{1,20}): Unknown Error")
_PROMPT = re.compile(r"[\w.-]{1,40}@([\w-]{1,63})[ :~]")  # a shell prompt: user@host


@dataclass(frozen=True)
class Cause:
    """A cause read from a log: its class, the sentence for the verdict, where, how strong."""
    kind: str
    sentence: str
    node: str | None = None
    rank: str | None = None
    weight: int = 0


@dataclass
class Evidence:
    root: dict | None = None  # torchrun's root-cause summary: host, rank, exitcode, signal
    child_failed: tuple | None = None  # (exit code, local rank) from torchrun's "failed (exitcode: ..." line
    death_signal: str | None = None
    cancelled: tuple | None = None  # Slurm: (job, node, when, reason)
    oom_events: str | None = None
    over_limit: tuple | None = None
    job_memory_limit: bool = False
    step_memory_warning: bool = False
    srun_task: tuple | None = None  # (node, "task N", how)
    first_exit: tuple | None = None  # the first task srun saw exit non-zero: (node, "task N", how)
    step_terminated: bool = False  # srun ended the step's other tasks (--kill-on-bad-exit)
    stepd_node: str | None = None
    cuda_oom: tuple | None = None  # (size, device, rank)
    watchdog: tuple | None = None  # (rank, seq, op, timeout ms, ran ms)
    watchdog_seen: bool = False
    ib_error: tuple | None = None  # (what, node)
    ofi_error: tuple | None = None  # (message, node, rank)
    rdzv_unreachable: bool = False
    rdzv_target: tuple | None = None
    rdzv_timeout: bool = False
    nan_check: dict | None = None
    pyxis: list = field(default_factory=list)  # (host, message)
    enroot_errors: list = field(default_factory=list)
    registry: tuple | None = None  # (url, code, status)
    execve: str | None = None
    gpu: tuple | None = None  # (what, rank)
    prompt_host: str | None = None
    nccl_error: tuple | None = None  # (what torch reported, rank)
    cuda_crash: tuple | None = None  # (what, rank)
    node_failure: str | None = None


def _pyxis_error(line: str) -> tuple[str | None, str] | None:
    at = line.find(_PYXIS)
    if at < 0:
        return None
    if not line.startswith("slurmstepd"):  # slurmd's own log: " error: pyxis: ..." with nothing before
        message = line[at + len(_PYXIS):].strip()
        return (None, message) if not line[:at].strip() and not _PYXIS_NOISE.match(message) else None
    head = line[:at].rstrip()
    if not head.endswith(":"):
        return None
    head = head[:-1]
    host = head[len("slurmstepd-"):] if head.startswith("slurmstepd-") else None
    if head != "slurmstepd" and (host is None or " " in host):
        return None
    message = line[at + len(_PYXIS):].strip()
    if _PYXIS_NOISE.match(message):
        return None
    return host, message


def _root_cause(log_lines: list[str], start: int) -> dict | None:
    """host, rank, exit code and signal from the summary that starts at log_lines[start]."""
    found: dict[str, tuple[str, str]] = {}
    for line in log_lines[start + 1:start + 16]:
        match = _FIELD.match(unlabel(line))
        if match and match.group(1) not in found:
            found[match.group(1)] = (match.group(2), match.group(3))
    if not all(k in found for k in ("host", "rank", "exitcode")):
        return None
    code, rest = found["exitcode"]
    if not re.fullmatch(r"-?[0-9]{1,4}", code) or not re.fullmatch(r"[0-9]{1,9}", found["rank"][0]):
        return None
    signal = _SIGNAL.match(rest)
    name = signal.group(1) if signal else None
    if name is None and "traceback" in found:
        message = _SIGNAL_MESSAGE.match(" ".join(found["traceback"]).strip())
        name = message.group(2) if message else None
    if name is None and code.startswith("-"):
        name = _SIGNAL_NAMES.get(code)
    return {"host": found["host"][0], "node": _first_label(found["host"][0]), "rank": found["rank"][0],
            "code": code, "signal": name}


def _rank_prefix(line: str) -> tuple[str | None, str]:
    """The rank a launcher put before the line, and the line without it."""
    if line.startswith("["):
        match = _RANK_PREFIX.match(line)
        if match:
            return match.group(1) or match.group(2), line[match.end():]
    return None, line


# torch's ProcessGroupNCCL raises "NCCL error in: FILE:LINE, <ncclGetErrorString>" (DistBackendError);
# the strings are NCCL's src/init.cc ncclGetErrorString
_NCCL_ERRORS = {
    "remote process exited or there was a network error": "a peer died or the network failed (ncclRemoteError): "
        "look for the rank that failed first and check the links between the nodes (nccl-tests)",
    "unhandled system error": "a system call or the network failed (ncclSystemError): run with NCCL_DEBUG=INFO to "
        "see which; often IB/RoCE setup, /dev/shm or socket interfaces (NCCL_SOCKET_IFNAME)",
    "unhandled cuda error": "a CUDA call failed inside NCCL (ncclUnhandledCudaError): check the GPU (nvidia-smi, "
        "dmesg for Xid) and the driver/CUDA versions",
    "internal error": "NCCL hit an internal error (ncclInternalError): run with NCCL_DEBUG=INFO; often mismatched "
        "NCCL versions or a network plugin problem",
    "invalid usage": "the program or its settings used NCCL wrongly (ncclInvalidUsage): a mismatch of ranks, "
        "devices or NCCL_* variables",
}
_CUDA_CRASHES = ("an illegal memory access was encountered", "unspecified launch failure",
                 "device-side assert triggered", "misaligned address")


def _read_slurm(line: str, ev: Evidence) -> None:
    at = line.find("Node failure on ")
    if at >= 0 and ev.node_failure is None:
        name = line[at + len("Node failure on "):].strip().split(" ")[0][:100]
        ev.node_failure = name or None
    if line.startswith("slurmstepd-") and ev.stepd_node is None:
        end = line.find(":")
        if 11 < end < 112:
            ev.stepd_node = line[11:end]
    at = line.find("*** ")
    if at >= 0:
        match = _CANCELLED.match(line, at)
        if match and (ev.cancelled is None or (match.group(4) and not ev.cancelled[3])):
            ev.cancelled = (match.group(1), match.group(2) or match.group(5) or ev.stepd_node, match.group(3),
                            match.group(4))
    at = line.find("Detected ")
    if at >= 0 and ev.oom_events is None:
        match = _OOM_EVENTS.match(line, at)
        ev.oom_events = match.group(1) if match else None
    at = line.find("exceeded memory limit (")
    if at >= 0 and ev.over_limit is None:
        match = _OVER_LIMIT.match(line, at)
        ev.over_limit = (match.group(1), match.group(2)) if match else None
    if "Exceeded job memory limit" in line:
        ev.job_memory_limit = True
    if "Exceeded step memory limit at some point" in line:
        ev.step_memory_warning = True
    if line.startswith("srun: launch/slurm: _step_signal: Terminating StepId="):
        ev.step_terminated = True
    if line.startswith("srun: error: "):
        match = _SRUN_TASK.match(line, len("srun: error: "))
        if match:
            how = match.group(3)
            if how.startswith("Exited") and ev.first_exit is None:
                ev.first_exit = (match.group(1), match.group(2), how)
            rank = _TASK_END["Exited" if how.startswith("Exited") else how]
            old = ev.srun_task
            if old is None or rank > _TASK_END["Exited" if old[2].startswith("Exited") else old[2]]:
                ev.srun_task = (match.group(1), match.group(2), how)


def _read_nccl_warn(line: str, rank: str | None, ev: Evidence) -> None:
    host = None
    at = line.find(" NCCL WARN ")
    for start in (0, line.find("] ") + 2 if line.startswith("[") else 0):  # after a "[time] " prefix
        match = _NCCL_WARN_HOST.match(line, start)
        if match:
            host = _first_label(match.group(1))
            break
    message = line[at + len(" NCCL WARN "):]
    if ev.ib_error is None:
        peer = message.find("Got completion from peer ")
        if peer >= 0:
            match = _PEER.match(message, peer + len("Got completion from peer "))
            if match:
                ev.ib_error = (f"NCCL's IB transport got a failed completion from peer {match.group(1)} "
                               f"(status {match.group(2)})", host)
        call = message.find("Call to ibv_")
        if call >= 0:
            match = _VERBS.match(message, call + len("Call to "))
            if match:
                ev.ib_error = (f"NCCL's call {match.group(1)} failed ({match.group(2).strip()})", host)
    if ev.ofi_error is None and message.startswith("NET/OFI "):
        ev.ofi_error = (message[len("NET/OFI "):].strip()[:200], host, rank)


def _read_torch(line: str, rank: str | None, ev: Evidence) -> None:
    at = line.find("CUDA out of memory. Tried to allocate ")
    if at >= 0 and ev.cuda_oom is None:
        match = _OOM_SIZE.match(line, at + len("CUDA out of memory. Tried to allocate "))
        if match:
            ev.cuda_oom = (match.group(1), match.group(2) or match.group(3), rank)
    if "CUDA error: out of memory" in line and ev.cuda_oom is None:  # the CUDA runtime's own, not the allocator's
        ev.cuda_oom = ("memory the CUDA runtime needed", None, rank)
    at = line.find("NCCL error")
    if at >= 0 and ev.nccl_error is None:
        for what in _NCCL_ERRORS:
            if what in line:
                ev.nccl_error = (what, rank)
                break
    if ev.cuda_crash is None:
        for what in _CUDA_CRASHES:
            if what in line:
                ev.cuda_crash = (what, rank)
                break
    at = line.find(_WATCHDOG)
    if at >= 0:
        ev.watchdog_seen = True
        work = _WORK.match(line, at + len(_WATCHDOG))
        if work and ev.watchdog is None:
            who = _WATCHDOG_RANK.search(line[max(0, at - 16):at])
            limit = line.find("Timeout(ms)=", work.end())
            ran = line.find(") ran for ", work.end())
            limit = _DIGITS.match(line, limit + len("Timeout(ms)=")) if limit >= 0 else None
            ran = _DIGITS.match(line, ran + len(") ran for ")) if ran >= 0 else None
            ev.watchdog = (who.group(1) if who else rank, work.group(1), work.group(2),
                           limit.group(1) if limit else None, ran.group(1) if ran else None)
    at = line.find("failed (exitcode: ")
    if at >= 0 and ev.child_failed is None:
        match = _CHILD_FAILED.match(line, at + len("failed (exitcode: "))
        ev.child_failed = (match.group(1), match.group(2)) if match else None
    at = line.find("Received ")
    if at >= 0 and ev.death_signal is None and "death signal, shutting down workers" in line:
        match = _DIGITS.match(line, at + len("Received "))
        ev.death_signal = match.group(1) if match else None
    if "RendezvousConnectionError" in line or "connect() timed out. Original timeout was" in line:
        ev.rdzv_unreachable = True
    if "RendezvousTimeoutError" in line:
        ev.rdzv_timeout = True
    for marker in ("while trying to connect to ", "client socket has failed to connect to any network address of ",
                   "client socket has failed to connect to "):
        at = line.find(marker)
        if at >= 0:
            ev.rdzv_unreachable = True
            match = _CONNECT_TO.match(line, at + len(marker))
            if match and ev.rdzv_target is None:
                ev.rdzv_target = (match.group(1), match.group(2))
            break
    if ev.nan_check is None and "found " in line and "Rank " in line:
        ev.nan_check = nan_check(line)


def _read_container(line: str, ev: Evidence) -> None:
    if _PYXIS in line:
        found = _pyxis_error(line)
        if found:
            ev.pyxis.append(found)
    elif line.startswith(("nvidia-container-cli: ", "tar: ")) or line.startswith("[ERROR] ") \
            or "No space left on device" in line:  # enroot run without pyxis
        ev.enroot_errors.append(line.strip()[:300])
    at = line.find("[ERROR] URL ")
    if at >= 0 and ev.registry is None:
        match = _ENROOT_URL.match(line, at + len("[ERROR] URL "))
        ev.registry = match.groups() if match else None
    at = line.find("execve(): ")
    if at >= 0 and ev.execve is None:
        end = line.find(": No such file or directory", at)
        if end > at:
            ev.execve = line[at + len("execve(): "):end][:200]


def _read_gpu(line: str, rank: str | None, ev: Evidence) -> None:
    if ev.gpu is not None:
        return
    if "uncorrectable ECC error" in line or "cudaErrorECCUncorrectable" in line:
        ev.gpu = ("an uncorrectable ECC error", rank)
        return
    at = line.find("NVRM: Xid (PCI:")
    if at >= 0:
        match = _XID.match(line, at + len("NVRM: Xid (PCI:"))
        if match:
            ev.gpu = (f"Xid {match.group(2)} ({match.group(3).strip().rstrip('.')}) on PCI {match.group(1)}", rank)
        return
    at = line.find("Unable to determine the device handle for GPU")
    if at >= 0:
        match = _GPU_HANDLE.match(line, at + len("Unable to determine the device handle for GPU"))
        if match:
            ev.gpu = (f"GPU {match.group(1)} no longer answers (nvidia-smi: Unknown Error)", rank)


# a line none of the readers below would look at is passed over: the markers the whole log holds
# (one C-level search each) make a pattern of literals that each line is scanned with once
_MARKERS = ("Root Cause", "slurmstepd", "srun: ", "NCCL WARN", "CUDA out of", "Watchdog caught", "exitcode",
            "death signal", "Rendezvous", "connect", "found ", "pyxis", "[ERROR]", "nvidia-container", "tar: ",
            "No space", "execve", "ECC", "Xid", "device handle", "@", "CUDA error", "NCCL error", "Node failure")


def evidence(log_text: str) -> Evidence:
    """What the log's lines say, in one pass."""
    ev = Evidence()
    present = [re.escape(mark) for mark in _MARKERS if mark in log_text]
    if not present:
        return ev
    worth_reading = re.compile("|".join(present))
    log_lines = lines(log_text)
    summaries = 0
    for i, raw in enumerate(log_lines):
        if not worth_reading.search(raw):
            continue
        line = unlabel(raw)
        if _ROOT_CAUSE in line and summaries < MAX_SUMMARIES:  # one per node's torchrun: more is not torchrun's
            summaries += 1
            found = _root_cause(log_lines, i)
            if found and ev.root is None:
                ev.root = found
            continue
        rank, line = _rank_prefix(line)
        if "slurmstepd" in line or line.startswith("srun: "):
            _read_slurm(line, ev)
        if " NCCL WARN " in line:
            _read_nccl_warn(line, rank, ev)
        _read_torch(line, rank, ev)
        _read_container(line, ev)
        _read_gpu(line, rank, ev)
        if ev.prompt_host is None and "@" in line[:40]:
            match = _PROMPT.match(line)
            ev.prompt_host = match.group(1) if match else None
    return ev


def _where(node: str | None, rank: str | None, local: bool = False) -> str:
    """' on NODE (rank R)', ' (rank R)', ' on NODE' or ''."""
    word = "local rank" if local else "rank"
    if node and rank is not None:
        return f" on {node} ({word} {rank})"
    if rank is not None:
        return f" ({word} {rank})"
    return f" on {node}" if node else ""


_SIGNAL_ADVICE = {
    "SIGKILL": "killed from outside the program, usually by the kernel's or Slurm's out-of-memory killer (host "
               "memory: look for oom-kill lines, raise --mem) or at a time limit",
    "SIGTERM": "asked to stop: scancel, a time limit or preemption, or torchrun stopping it after another rank failed",
    "SIGABRT": "it aborted itself; with NCCL that is the watchdog taking the process down after a collective timed "
               "out or failed: look for the rank that stalled",
    "SIGSEGV": "it crashed (segmentation fault) in native code; rerun the same image on other nodes",
    "SIGBUS": "it crashed with a bus error: often /dev/shm too small, or a failing node",
}


def _gpu_cause(ev: Evidence) -> Cause | None:
    if not ev.gpu:
        return None
    what, rank = ev.gpu
    node = ev.prompt_host or (ev.root["node"] if ev.root and rank == ev.root["rank"] else None)
    return Cause("gpu-hardware", f"a GPU failed{_where(node, rank)}: {what}; drain that node and have the GPU "
                 "checked (nvidia-smi -q, dmesg), then resubmit without it", node, rank, 100)


def _cuda_oom_cause(ev: Evidence) -> Cause | None:
    if not ev.cuda_oom:
        return None
    size, device, rank = ev.cuda_oom
    root = ev.root or {}
    if rank is None and root.get("code") == "1":
        rank = root.get("rank")
    node = root.get("node") if rank is not None and rank == root.get("rank") else None
    gpu = f", GPU {device}" if device is not None else ""
    return Cause("cuda-oom", f"CUDA out of memory{_where(node, rank)}{gpu}: an allocation of {size} did not fit in "
                 "GPU memory; lower the micro-batch size or sequence length, raise tensor/pipeline parallelism, or "
                 "turn on activation recomputation", node, rank, 95)


def _nan_cause(ev: Evidence) -> Cause | None:
    check = ev.nan_check
    if not check:
        return None
    at = f" at iteration {check['iteration']}" if check["iteration"] else ""
    return Cause("nan-loss", f"Megatron's NaN check stopped the run{at}{_where(check['node'], check['rank'])}: found "
                 f"{check['what']}; the model diverged (lower the learning rate, train in bf16, check the data) or "
                 "that GPU computes wrong results (rerun on other nodes)", check["node"], check["rank"], 92)


def _host_memory_cause(ev: Evidence) -> Cause | None:
    if not (ev.oom_events or ev.over_limit or ev.job_memory_limit):
        return None
    node = (ev.srun_task[0] if ev.srun_task else None) or (ev.cancelled[1] if ev.cancelled else None) or ev.stepd_node
    if ev.oom_events:
        what = f"{ev.oom_events} oom-kill event(s) in the job's cgroup"
    elif ev.over_limit:
        what = f"the step used {ev.over_limit[0]} KB against its {ev.over_limit[1]} KB limit"
    else:
        what = "the job exceeded its memory limit"
    return Cause("slurm-oom", f"Slurm killed processes for host memory{_where(node, None)}: {what}; request more "
                 "with --mem (or --mem-per-gpu), or load less per rank", node, None, 90)


_CANCEL_REASONS = {
    "TIME LIMIT": ("slurm-timelimit", "Slurm cancelled job {job} at its time limit ({when}){where}; raise --time "
                   "or shorten the run"),
    "PREEMPTION": ("slurm-preempt", "Slurm preempted job {job} ({when}){where} for a higher-priority job; resubmit, "
                   "or use a partition or QOS without preemption"),
    "JOB REQUEUE": ("slurm-requeue", "Slurm requeued job {job} ({when}){where}: it starts again from the beginning; "
                    "nothing to fix unless it repeats"),
    "NODE FAILURE": ("slurm-node-failure", "Slurm cancelled job {job} because a node failed ({when}){where}; "
                     "resubmit without that node and tell the operators"),
}


def _slurm_cause(ev: Evidence) -> Cause | None:
    if not ev.cancelled:
        return None
    job, node, when, why = ev.cancelled
    if "." in job and not why:  # a step, not the job: srun's --kill-on-bad-exit ends a step this way
        if ev.first_exit:
            return _first_exit_cause(ev)
        return Cause("slurm-cancelled", f"step {job} was cancelled at {when}{_where(node, None)}: by srun after a task "
                     "failed, by scancel or by an administrator; the lines before say which", node, None, 20)
    kind, text = _CANCEL_REASONS.get((why or "").strip(), ("slurm-cancelled", "job {job} was cancelled at {when}"
                                     "{where} (scancel or an administrator); resubmit if that was not intended"))
    return Cause(kind, text.format(job=job, when=when, where=_where(node, None)), node, None, 85 if why else 40)


def _network_cause(ev: Evidence) -> Cause | None:
    if ev.ib_error:
        what, node = ev.ib_error
        return Cause("nccl-ib-error", f"{what}{_where(node, None)}: an InfiniBand/RoCE link, cable or switch port, or "
                     "a wrong NCCL_IB_HCA / NCCL_IB_GID_INDEX; check the ports (ibstat) and run nccl-tests between "
                     "the nodes involved", node, None, 80)
    if ev.ofi_error:
        message, node, rank = ev.ofi_error
        return Cause("nccl-net-error", f"NCCL's EFA/libfabric plugin (aws-ofi-nccl) failed{_where(node, rank)}: "
                     f"{message}; check that the EFA devices (/dev/infiniband) reach the container and that "
                     "libfabric and aws-ofi-nccl match", node, rank, 80)
    return None


def _nccl_error_cause(ev: Evidence) -> Cause | None:
    if not ev.nccl_error:
        return None
    what, rank = ev.nccl_error
    return Cause("nccl-error", f"NCCL failed{_where(None, rank)} with '{what}': {_NCCL_ERRORS[what]}", None, rank, 78)


def _cuda_crash_cause(ev: Evidence) -> Cause | None:
    if not ev.cuda_crash:
        return None
    what, rank = ev.cuda_crash
    return Cause("cuda-crash", f"a CUDA kernel failed{_where(None, rank)} ('{what}'): a bug in the program or a "
                 "failing GPU; rerun the same image on other nodes, and if it follows the node, drain it", None, rank, 50)


def _node_failure_cause(ev: Evidence) -> Cause | None:
    if not ev.node_failure:
        return None
    node = ev.node_failure
    return Cause("slurm-node-failure", f"Slurm lost node {node} during the job (node failure); resubmit without it "
                 "and tell the operators", node, None, 84)


def _watchdog_cause(ev: Evidence) -> Cause | None:
    if ev.watchdog:
        rank, seq, op, limit, ran = ev.watchdog
        node = ev.root["node"] if ev.root and ev.root["rank"] == rank else None
        waited = f" waited {int(ran) // 1000} s" if ran else ""
        limit = f" (timeout {int(limit) // 1000} s)" if limit else ""
        return Cause("nccl-watchdog", f"an NCCL collective timed out: {op} #{seq}{waited}{limit}, first reported"
                     f"{_where(node, rank)}; the ranks that report it were waiting for one that stalled or died: find "
                     "the rank that did not report, check its node's GPUs and links (nccl-tests), or raise the "
                     "timeout if a step is legitimately slow", node, rank, 75)
    if ev.watchdog_seen:
        return Cause("nccl-watchdog", "an NCCL collective timed out (the watchdog caught it): a rank stalled or "
                     "died; find the rank that did not report and check its node", None, None, 70)
    return None


def _rendezvous_cause(ev: Evidence) -> Cause | None:
    if ev.root or ev.child_failed:  # workers ran, so the rendezvous had formed: a later store error is collateral
        return None
    if ev.rdzv_timeout:
        timeout = os.environ.get("SMOKE_RDZV_TIMEOUT", "300")
        return Cause("rdzv-timeout", f"the rendezvous did not form: not every node's torchrun joined within "
                     f"SMOKE_RDZV_TIMEOUT ({timeout} s); look for a node that hung or could not reach "
                     "MASTER_ADDR:MASTER_PORT", None, None, 72)
    if ev.rdzv_unreachable:
        target = f" at {ev.rdzv_target[0]}:{ev.rdzv_target[1]}" if ev.rdzv_target else ""
        return Cause("rdzv-unreachable", f"torchrun could not reach the rendezvous store{target}: MASTER_ADDR or the "
                     "port is wrong, not listening yet, or blocked between the nodes (firewall, wrong interface); "
                     "check that it resolves and connects from every node", None, None, 70)
    return None


def _container_cause(ev: Evidence) -> Cause | None:
    if not (ev.pyxis or ev.enroot_errors or ev.registry or ev.execve):
        return None
    node = next((h for h, _ in ev.pyxis if h), None) or (ev.srun_task[0] if ev.srun_task else None) or ev.stepd_node
    where = _where(node, None) + (f" (srun {ev.srun_task[1]})" if ev.srun_task else "")
    messages = [m for _, m in ev.pyxis] + ev.enroot_errors
    if ev.registry:
        url, code, status = ev.registry
        advice = {"401": "the registry refused the credentials: check ~/.config/enroot/.credentials (NGC: $oauthtoken "
                         "and a valid key) and the reference (registry#image)",
                  "404": "no such image or tag there (or a manifest format enroot does not read): check the name, "
                         "the tag and registry#path",
                  "429": "the registry's pull rate limit was hit: authenticate, or import the image once to a .sqsh "
                         "file and point the job at it",
                  "400": "the registry rejected the request: check the reference (registry#image:tag) and http/https"}
        return Cause("image-pull", f"the image could not be pulled{where}: {url} answered {code}"
                     f"{' ' + status.strip() if status else ''}; " + advice.get(code, "check the image reference "
                     "and the registry"), node, None, 65)
    if ev.execve:
        return Cause("container-image", f"the container started{where} but {ev.execve} is not in the image: the "
                     "image lacks that command or has it at another path; fix the image or the command",
                     node, None, 60)
    shipped = next((m for m in messages if "load library failed:" in m and "libnvidia" in m
                    and ("/enroot/" in m or "/pyxis_" in m)), None)
    if shipped:  # libnvidia-container loaded a driver library from inside the container: the image ships one
        return Cause("container-image", f"the container's GPU hook failed{where} on a driver library inside the "
                     "image (the image ships its own libnvidia-* or libnvidia-container): rebuild it without them",
                     node, None, 60)
    node_side = next((m for m in messages if any(mark in m for mark in _NODE_SIDE)), None)
    if node_side:
        return Cause("container-node", f"the container runtime failed{where or ' on a node'} ({node_side[:200]}): a "
                     "node problem (its enroot or pyxis setup, the GPU driver hook, free space or permissions), not "
                     "the image; exclude the node and tell its operators", node, None, 60)
    if not ev.pyxis:
        return None
    message = ev.pyxis[0][1]
    return Cause("container", f"the container did not start on {node or 'a node'} (pyxis: {message[:300]}); the image "
                 "(SMOKE_IMAGE or the preset's) may be broken or not a root filesystem: enroot's own lines follow "
                 "pyxis' in this stage's log", node, None, 50)


def _torchrun_cause(ev: Evidence) -> Cause | None:
    root = ev.root
    if root and root["code"].startswith("-") or (not root and ev.child_failed and ev.child_failed[0].startswith("-")):
        if root:
            node, rank, name, local = root["node"], root["rank"], root["signal"] or "a signal", False
        else:
            node, rank, local = None, ev.child_failed[1], True
            name = _SIGNAL_NAMES.get(ev.child_failed[0], f"signal {ev.child_failed[0].lstrip('-')}")
        advice = _SIGNAL_ADVICE.get(name, "a signal from outside the program")
        word = "local rank" if local else "rank"
        return Cause("signal", f"{word} {rank}{' on ' + node if node else ''} was killed by {name} first; the other "
                     f"ranks were stopped after it: {advice}", node, rank, 45)
    if ev.death_signal:
        return Cause("signal", f"torchrun itself received signal {ev.death_signal} and stopped its workers: the job "
                     "was stopped from outside (scancel, a time limit, preemption); see Slurm's lines",
                     ev.stepd_node, None, 35)
    if root or ev.child_failed:
        if root:
            where, node, rank = f"rank {root['rank']} on {root['node']}", root["node"], root["rank"]
            code = root["code"]
        else:
            code, rank = ev.child_failed
            where, node = f"local rank {rank}", None
        return Cause("torchrun-rootcause", f"{where} exited with code {code} first; the other ranks were stopped after "
                     "it: its own error is above torchrun's summary", node, rank, 30)
    return None


def _first_exit_cause(ev: Evidence) -> Cause:
    first, tasks, how = ev.first_exit
    return Cause("srun-task", f"srun {tasks} on {first} {how.lower()} first, and srun then ended the step's other "
                 "tasks (--kill-on-bad-exit): that task's own error is in the lines above", first, None, 32)


def _srun_cause(ev: Evidence) -> Cause | None:
    """A task srun saw die by a signal or out of memory (an exit code alone says nothing of why), or
    the first task to exit non-zero when srun then ended the others."""
    if ev.first_exit and ev.step_terminated:
        return _first_exit_cause(ev)
    if not ev.srun_task or ev.srun_task[2].startswith("Exited"):
        return None
    node, tasks, how = ev.srun_task
    advice = {"Killed": "killed from outside (out of memory, a time limit or scancel): see Slurm's lines",
              "Terminated": "stopped from outside or by srun after another task failed: see the lines before",
              "Out Of Memory": "Slurm's out-of-memory handler killed it: request more --mem",
              "Bus error": "it crashed with a bus error: often /dev/shm too small, or a failing node"}
    return Cause("srun-task", f"srun {tasks} on {node} ended with '{how}': "
                 + advice.get(how, "it crashed: rerun the same image on other nodes to tell the node from the image"),
                 node, None, 55 if how in ("Bus error", "Segmentation fault", "Aborted") else 25)


def _memory_warning_cause(ev: Evidence) -> Cause | None:
    if not ev.step_memory_warning:
        return None
    return Cause("slurm-mem-warning", "Slurm noted the step touched its memory limit at some point (page cache "
                 "counts): a warning, not a failure, unless the job died", None, None, 5)


CAUSE_READERS = (_gpu_cause, _cuda_oom_cause, _nan_cause, _host_memory_cause, _slurm_cause, _node_failure_cause,
                 _network_cause, _nccl_error_cause, _watchdog_cause, _rendezvous_cause, _container_cause,
                 _cuda_crash_cause, _srun_cause, _torchrun_cause, _memory_warning_cause)


def failure_causes(log_text: str) -> list[Cause]:
    """Every cause the log names, the strongest first."""
    ev = evidence(log_text)
    found = [cause for cause in (read(ev) for read in CAUSE_READERS) if cause is not None]
    return sorted(found, key=lambda c: -c.weight)


def failure_cause(log_text: str) -> str | None:
    """Why a stage failed, in one sentence with where and what to do; None when the log does not say."""
    found = failure_causes(log_text)
    return found[0].sentence if found else None
