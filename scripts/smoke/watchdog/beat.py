"""Inside a rank: the heartbeat the loops advance, the stack dump on SIGUSR1, the flight recorder
on request. `start()` is called once by smoke.watchdog.inrank before the rank's program runs;
`beat(step)` by the loops (probe, functional training, localization's steps). Without start()
(a program run by hand) beat() does nothing.

A heartbeat is one line rewritten in place ("STEP EPOCH_SECONDS"), a pwrite of ~30 bytes: its cost
per training step is measured in bench/watchdog_gpu.py (docs/hang-watchdog.md).
"""
from __future__ import annotations

import faulthandler
import json
import os
import signal
import socket
import sys
import threading
import time

from smoke import runfolder
from smoke.slurm import node_name
from smoke.watchdog import layout

_state: dict = {}


def start() -> bool:
    """Install the rank's side of the watchdog when the stage asked for it (SMOKE_WATCH_DIR set by
    job-lib); False when it did not or could not (the rank runs anyway: the watchdog is never the
    reason a healthy run fails)."""
    folder = os.environ.get("SMOKE_WATCH_DIR")
    if not folder or _state:
        return False
    try:
        rank = int(os.environ.get("RANK", "0"))
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        node = node_name()
        os.makedirs(folder, exist_ok=True)
        prefix = os.path.join(folder, f"{node}.rank-{rank}")
        stack = open(f"{prefix}.stack", "a", encoding="utf-8")  # noqa: SIM115 - open for the rank's life
        faulthandler.register(signal.SIGUSR1, file=stack, all_threads=True, chain=False)
        beat_fd = os.open(f"{prefix}.beat", os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
        runfolder.write_json(f"{prefix}.json", {"rank": rank, "local_rank": local_rank, "pid": os.getpid(),
                                                "node": node, "host": socket.gethostname(), "started": time.time()})
    except (OSError, ValueError, RuntimeError) as exc:
        print(f"watchdog: rank side not installed ({exc}); the stage runs without it", file=sys.stderr, flush=True)
        return False
    _state.update(folder=folder, prefix=prefix, stack=stack, beat_fd=beat_fd, rank=rank)
    enable_flight_recorder(os.environ)
    threading.Thread(target=_answer_requests, name="smoke-watchdog", daemon=True).start()
    return True


def beat(step: int | None = None) -> None:
    """Progress: this rank finished step `step` (an iteration), or one more unit of work (None)."""
    fd = _state.get("beat_fd")
    if fd is None:
        return
    step = _state["step"] = _state.get("step", 0) + 1 if step is None else step
    line = f"{step:12d} {time.time():.3f}\n".encode()
    try:
        os.pwrite(fd, line, 0)
    except OSError:
        _state["beat_fd"] = None  # a full disk must not end the run: the watchdog falls back to the log


def _answer_requests() -> None:
    """Poll for the monitor's request once a second; on a new one, write the flight recorder's view
    of this rank's collectives (NCCL only: gloo has none). The stacks come from the agent's signal."""
    request = os.path.join(_state["folder"], layout.REQUEST)
    answered = None
    while True:
        time.sleep(1.0)
        try:
            stamp = os.stat(request).st_mtime_ns
        except OSError:
            continue
        if stamp == answered:
            continue
        answered = stamp
        summary = flight_recorder()
        if summary is not None:
            try:
                runfolder.write_json(f"{_state['prefix']}.fr.json", summary)
            except (OSError, ValueError):
                pass


FLIGHT_RECORDER_ENTRIES = "2000"  # torch's own default where it records by default (PR 142260)


def enable_flight_recorder(env) -> str | None:
    """Turn the NCCL flight recorder on where the rank's torch leaves it off; the name of the variable
    set, or None. Called before the program imports torch: the recorder reads it at process-group
    creation. Torch records 2000 collectives by default since pytorch/pytorch#142260 (Dec 2024, 2.6);
    before that TORCH_NCCL_TRACE_BUFFER_SIZE defaulted to 0 (off). 2.8 renamed it TORCH_FR_BUFFER_SIZE
    and warns on the old name (seen on the H200 with 2.11), so the old name is set only below 2.8
    (the same cut as NVIDIA/nvidia-resiliency-ext#163). A value the user set is kept."""
    if "TORCH_FR_BUFFER_SIZE" in env or "TORCH_NCCL_TRACE_BUFFER_SIZE" in env:
        return None
    try:
        from importlib.metadata import version
        major, minor = (int(part) for part in version("torch").split(".")[:2])
    except Exception:  # noqa: BLE001 - no torch, or a version string of a local build: leave torch's default
        return None
    if (major, minor) >= (2, 8):
        return None
    env["TORCH_NCCL_TRACE_BUFFER_SIZE"] = FLIGHT_RECORDER_ENTRIES
    return "TORCH_NCCL_TRACE_BUFFER_SIZE"


def flight_recorder() -> dict | None:
    """The torch NCCL flight recorder's entries of this rank (enable_flight_recorder), cut
    to what the judge reads: per collective its sequence number, name and state. None without NCCL."""
    try:
        import pickle

        import torch.distributed as dist
        if not dist.is_initialized() or dist.get_backend() != "nccl":
            return None
        from torch._C._distributed_c10d import _dump_nccl_trace
        raw = pickle.loads(_dump_nccl_trace(includeCollectives=True, includeStackTraces=False, onlyActive=False))
    except Exception as exc:  # noqa: BLE001 - a private API that moves between releases: say so and go on
        return {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    entries = []
    for entry in (raw.get("entries") or [])[-64:]:
        entries.append({"seq": entry.get("collective_seq_id"), "op": entry.get("profiling_name"),
                        "state": entry.get("state"), "pg": str(entry.get("process_group", ""))[:64]})
    return {"version": str(raw.get("version", "")), "entries": entries}
