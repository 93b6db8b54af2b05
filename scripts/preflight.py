"""Preflight, the first stage of every preset: run once per node inside the job, bounded.

Checks what must hold before training is worth starting, and names the node and the check that
failed. GPU checks are skipped (and say so) in functional mode, where the GPUs are fake GRES.
Exit 0 when every check passes or is skipped, 1 otherwise.
"""
from __future__ import annotations

import json
import os
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from validator.catalog import normal_arch  # noqa: E402  (standard library only)


def check_arch(expected: str, functional: bool):
    if functional:
        return None, f"skipped in functional mode: no {expected} image runs, the host's Python does"
    machine = normal_arch(platform.machine())
    return machine == expected, f"CPU arch {machine}, preset expects {expected}"


def check_gpus(expected_model: str, functional: bool):
    allocated = int(os.environ.get("SLURM_GPUS_ON_NODE", "0") or 0)
    if functional:
        return None, f"skipped in functional mode ({allocated} fake GPU(s) allocated)"
    if not shutil.which("nvidia-smi"):
        return False, "nvidia-smi not found: no NVIDIA driver visible"
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,ecc.errors.uncorrected.volatile.total",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=15, check=True).stdout
    except (subprocess.SubprocessError, OSError) as exc:
        return False, f"nvidia-smi failed: {exc}"
    rows = [r.split(", ") for r in out.strip().splitlines() if r.strip()]
    if len(rows) != allocated:
        return False, f"{len(rows)} GPU(s) visible, Slurm allocated {allocated}"
    wrong = [r[0] for r in rows if expected_model.lower() not in r[0].lower()]
    if wrong:
        return False, f"GPU model {wrong[0]}, preset expects {expected_model}"
    bad = [r for r in rows if len(r) > 1 and r[1].strip().isdigit() and int(r[1]) > 0]
    if bad:
        return False, f"{len(bad)} GPU(s) report uncorrected ECC errors"
    return True, f"{len(rows)} x {rows[0][0] if rows else '?'}"


def check_interface(name: str):
    if not name:
        return None, "no NCCL_SOCKET_IFNAME set"
    names = [n for _, n in socket.if_nameindex()]
    # NCCL treats the value as a prefix list; '^' excludes, '=' asks for an exact name.
    wanted = [w for w in name.split(",") if w and not w.startswith("^")]
    if not wanted:
        return True, f"exclusion list {name}"
    hits = [n for n in names if any(n == w.lstrip("=") or (not w.startswith("=") and n.startswith(w)) for w in wanted)]
    if not hits:
        return False, f"no interface matches NCCL_SOCKET_IFNAME={name} (have: {', '.join(names)})"
    return True, f"{name} -> {', '.join(hits)}"


def check_ib(ports: int, functional: bool):
    if ports == 0:
        return None, "topology has no InfiniBand"
    if functional:
        return None, "skipped in functional mode"
    root = "/sys/class/infiniband"
    active = 0
    for dev in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        for port in os.listdir(os.path.join(root, dev, "ports")):
            try:
                with open(os.path.join(root, dev, "ports", port, "state"), encoding="utf-8") as handle:
                    active += "ACTIVE" in handle.read()
            except OSError:
                pass
    return active >= ports, f"{active} active InfiniBand port(s), preset expects {ports}"


def check_writable(folder: str):
    try:
        with tempfile.NamedTemporaryFile(dir=folder):
            pass
    except OSError as exc:
        return False, f"{folder} not writable: {exc.strerror}"
    free = shutil.disk_usage(folder).free / 2**30
    return free > 1, f"{folder} writable, {free:.0f} GiB free"


def main() -> int:
    functional = os.environ.get("SMOKE_MODE") == "functional"
    host = socket.gethostname()
    out = os.environ["SMOKE_OUT"]
    checks = {
        "arch": check_arch(os.environ.get("SMOKE_ARCH", platform.machine()), functional),
        "gpus": check_gpus(os.environ.get("SMOKE_GPU_MODEL", ""), functional),
        "socket_interface": check_interface(os.environ.get("NCCL_SOCKET_IFNAME", "")),
        "infiniband": check_ib(int(os.environ.get("SMOKE_IB_PORTS", "0")), functional),
        "output_folder": check_writable(out),
    }
    failed = False
    report = {"host": host, "node_id": os.environ.get("SLURM_NODEID"), "checks": {}}
    for name, (ok, detail) in checks.items():
        state = "SKIP" if ok is None else ("PASS" if ok else "FAIL")
        failed |= ok is False
        report["checks"][name] = {"state": state, "detail": detail}
        print(f"preflight {host}: {name:17} {state}  {detail}", flush=True)
    os.makedirs(os.path.join(out, "preflight"), exist_ok=True)
    path = os.path.join(out, "preflight", f"{host}.json")
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(report, handle, indent=1)
    os.replace(path + ".tmp", path)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
