"""Preflight, the first stage of every preset: run once per node inside the job, bounded.

Checks what must hold before training is worth starting, and names the node and the check that
failed. GPU checks are skipped (and say so) in functional mode, where the GPUs are fake GRES.
Exit 0 when every check passes or is skipped, 1 otherwise.
"""
from __future__ import annotations

import ipaddress
import os
import platform
import resource
import shutil
import socket
import subprocess
import sys
import tempfile

from smoke import runfolder, software, vocab
from smoke.slurm import node_name


def check_arch(expected: str, functional: bool):
    if functional:
        return None, f"skipped in functional mode: no {expected} image runs, the host's Python does"
    machine = vocab.normal_arch(platform.machine())
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
    bad = [r for r in rows if len(r) > 1 and r[1].strip().isascii() and r[1].strip().isdigit() and int(r[1]) > 0]
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


def hca_filter(spec: str):
    """NCCL_IB_HCA as NCCL reads it (src/transport/net_ib/init.cc, matchIfList): a comma list of
    device[:port]; a device name is a prefix unless the list starts with '=', '^' excludes."""
    exclude, spec = spec.startswith("^"), spec.lstrip("^")
    exact, spec = spec.startswith("="), spec.lstrip("=")
    entries = [(e.partition(":")[0], e.partition(":")[2]) for e in spec.split(",") if e]

    def matches(dev: str, port: str) -> bool:
        if not entries:
            return True
        hit = any((dev == name if exact else dev.startswith(name)) and (not want or want == port)
                  for name, want in entries)
        return hit != exclude
    return matches


def ib_ports(root: str) -> list[dict]:
    """Every port under /sys/class/infiniband: device, port, state, link layer, rate in Gb/s."""
    ports = []
    for dev in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        for port in sorted(os.listdir(os.path.join(root, dev, "ports"))):
            def read(name, default=""):
                try:
                    with open(os.path.join(root, dev, "ports", port, name), encoding="utf-8") as handle:
                        return handle.read().strip()
                except OSError:
                    return default
            rate = read("rate", "0").split()[0]  # "400 Gb/sec (4X NDR)"
            ports.append({"device": dev, "port": port, "active": "ACTIVE" in read("state"),
                          "link_layer": read("link_layer", "InfiniBand"),
                          "gbps": float(rate) if rate.isascii() and rate.replace(".", "", 1).isdigit() else 0.0})
    return ports


def check_ib(ports: int, functional: bool, hca: str = "", nic_gbps: float = 0, link_layer: str = "InfiniBand",
             root: str = "/sys/class/infiniband"):
    """Counts the active RDMA ports of the preset's link layer (InfiniBand; Ethernet for RoCE) that
    NCCL_IB_HCA selects, at the preset's rate or faster. NCCL's IB transport takes active ports of
    either link layer: a port of the other one that the filter lets through fails the check, since
    NCCL would put traffic on it (on an IB node, a RoCE front-end NIC)."""
    if ports == 0:
        return None, "topology has no RDMA ports"
    if functional:
        return None, "skipped in functional mode"
    kind = "InfiniBand" if link_layer == "InfiniBand" else "RoCE"
    selected = [p for p in ib_ports(root) if p["active"] and hca_filter(hca)(p["device"], p["port"])]
    other = [f"{p['device']}:{p['port']} ({p['link_layer']})" for p in selected if p["link_layer"] != link_layer]
    mine = [p for p in selected if p["link_layer"] == link_layer]
    fast = [p for p in mine if p["gbps"] >= nic_gbps]
    slow = [f"{p['device']}:{p['port']} {p['gbps']:g} Gb/s" for p in mine if p["gbps"] < nic_gbps]
    detail = (f"{len(fast)} active {kind} port(s) at >= {nic_gbps:g} Gb/s match NCCL_IB_HCA={hca or '(unset)'}, "
              f"preset expects {ports}")
    if slow:
        detail += f"; slower: {', '.join(slow)}"
    if other:
        detail += f"; port(s) of another link layer NCCL's IB transport would also use: {', '.join(other)} (narrow NCCL_IB_HCA)"
    return len(fast) >= ports and not other, detail


def _gid_family(gid: str) -> str | None:
    """AF_INET for an IPv4-mapped GID (::ffff:a.b.c.d), AF_INET6 for another routable one, None for
    an empty or link-local (fe80::) one."""
    try:
        address = ipaddress.IPv6Address(gid)
    except ValueError:
        return None
    if address.ipv4_mapped is not None:
        return "AF_INET"
    if address.is_unspecified or address.is_link_local:
        return None
    return "AF_INET6"


def roce_gids(root: str, dev: str, port: str) -> list[dict]:
    """A port's GID table: index, address, type ("RoCE v2", "IB/RoCE v1"), as sysfs lists it."""
    base = os.path.join(root, dev, "ports", port)
    out = []
    try:
        names = os.listdir(os.path.join(base, "gids"))
    except OSError:
        return out
    for name in sorted((n for n in names if n.isascii() and n.isdigit()), key=int)[:1024]:
        try:
            with open(os.path.join(base, "gids", name), encoding="ascii") as handle:
                gid = handle.read(100).strip()
            with open(os.path.join(base, "gid_attrs", "types", name), encoding="ascii") as handle:
                kind = handle.read(100).strip()
        except (OSError, UnicodeDecodeError):  # the kernel refuses to read an unused entry's type
            continue
        out.append({"index": int(name), "gid": gid, "type": kind})
    return out


def check_roce_gid(link_layer: str, functional: bool, hca: str = "", family: str = "", addr_range: str = "",
                   gid_index: str = "", root: str = "/sys/class/infiniband"):
    """On RoCE, every port NCCL uses needs a RoCE v2 GID of NCCL_IB_ADDR_FAMILY (default AF_INET),
    inside NCCL_IB_ADDR_RANGE when set: NCCL 2.25.1 starts at GID index 0 and moves only to a
    GID of that family (src/transport/net_ib.cc, ncclIbGetGidIndex); with none, connections fail or
    hang. With NCCL_IB_GID_INDEX, that index must be RoCE v2 (docs/preset-stack-review.md, finding 8)."""
    if link_layer != "Ethernet":
        return None, "not a RoCE topology"
    if functional:
        return None, "skipped in functional mode"
    family = family or "AF_INET"
    if family not in ("AF_INET", "AF_INET6"):
        return False, f"NCCL_IB_ADDR_FAMILY={family[:20]} is not AF_INET or AF_INET6"
    try:
        network = ipaddress.ip_network(addr_range, strict=False) if addr_range else None
    except ValueError:
        return False, f"NCCL_IB_ADDR_RANGE={addr_range[:60]} is not an address range"
    if gid_index and not (gid_index.isascii() and gid_index.isdigit()):
        return False, f"NCCL_IB_GID_INDEX={gid_index[:20]} is not a number"
    ports = [p for p in ib_ports(root) if p["active"] and p["link_layer"] == "Ethernet"
             and hca_filter(hca)(p["device"], p["port"])]
    if not ports:
        return None, "no active RoCE port selected by NCCL_IB_HCA (the infiniband check says why)"
    found, missing = [], []
    for p in ports:
        gids = roce_gids(root, p["device"], p["port"])
        if gid_index:
            good = [g for g in gids if g["index"] == int(gid_index) and g["type"] == "RoCE v2"]
        else:
            good = [g for g in gids if g["type"] == "RoCE v2" and _gid_family(g["gid"]) == family
                    and (network is None or _in_range(g["gid"], network))]
        name = f"{p['device']}:{p['port']}"
        (found if good else missing).append(f"{name} index {good[0]['index']}" if good else name)
    want = f"GID index {gid_index} of type RoCE v2" if gid_index else \
        f"RoCE v2 GID of {family}" + (f" in {addr_range}" if addr_range else "")
    if missing:
        return False, (f"no {want} on {', '.join(missing)}: NCCL would use GID index 0 or a RoCE v1 GID and its "
                       "connections fail or hang; give the port an address of that family (or set "
                       "NCCL_IB_ADDR_FAMILY / NCCL_IB_GID_INDEX to one it has)")
    return True, f"{want}: {', '.join(found)}"


def _in_range(gid: str, network) -> bool:
    address = ipaddress.IPv6Address(gid)
    address = address.ipv4_mapped or address
    return address.version == network.version and address in network


def check_memlock(rdma: bool, functional: bool):
    """RDMA registers GPU and host buffers: the locked-memory limit must be unlimited. Slurm copies the
    submit shell's limits unless --propagate=NONE (slurm.conf PropagateResourceLimits)."""
    if not rdma:
        return None, "no RDMA on this topology"
    soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    if soft == resource.RLIM_INFINITY:
        return True, "locked memory unlimited"
    detail = f"locked memory limited to {soft // 1024} KiB: RDMA registration fails (submit with --propagate=NONE; node limits)"
    return (None, "skipped in functional mode: " + detail) if functional else (False, detail)


def check_writable(folder: str):
    try:
        with tempfile.NamedTemporaryFile(dir=folder):
            pass
    except OSError as exc:
        return False, f"{folder} not writable: {exc.strerror}"
    free = shutil.disk_usage(folder).free / 2**30
    return free > 1, f"{folder} writable, {free:.0f} GiB free"


def check_image_writable(mode: str):
    """In a container: Megatron (core_v0.13.0) compiles its dataset helpers into the image's source
    tree at start, and enroot mounts the image read-only unless pyxis gets --container-writable."""
    if not vocab.in_container(mode):
        return None, "no container in functional mode"
    tree = os.path.join(os.environ.get("MEGATRON_DIR", "/usr/src/app/megatron-lm"), "megatron", "core", "datasets")
    if not os.path.isdir(tree):
        return None, f"{tree} not in this image"
    try:
        with tempfile.NamedTemporaryFile(dir=tree):
            pass
    except OSError as exc:
        return False, (f"cannot write into the image's {tree} ({exc.strerror}): Megatron builds its helpers "
                       "there; start the container writable (pyxis --container-writable)")
    return True, f"{tree} writable"


def main() -> int:
    mode = os.environ.get("SMOKE_MODE", "full")
    functional = vocab.on_cpu(mode)
    host = node_name()  # as Slurm names it: what an operator drains or excludes
    out = os.environ["SMOKE_OUT"]
    checks = {
        "arch": check_arch(os.environ.get("SMOKE_ARCH", platform.machine()), functional),
        "gpus": check_gpus(os.environ.get("SMOKE_GPU_MODEL", ""), functional),
        "socket_interface": check_interface(os.environ.get("NCCL_SOCKET_IFNAME", "")),
        "infiniband": check_ib(int(os.environ.get("SMOKE_IB_PORTS", "0")), functional,
                               os.environ.get("NCCL_IB_HCA", ""), float(os.environ.get("SMOKE_NIC_GBPS", "0")),
                               os.environ.get("SMOKE_LINK_LAYER", "InfiniBand")),
        "roce_gid": check_roce_gid(os.environ.get("SMOKE_LINK_LAYER", "InfiniBand"), functional,
                                   os.environ.get("NCCL_IB_HCA", ""), os.environ.get("NCCL_IB_ADDR_FAMILY", ""),
                                   os.environ.get("NCCL_IB_ADDR_RANGE", ""), os.environ.get("NCCL_IB_GID_INDEX", "")),
        "locked_memory": check_memlock(int(os.environ.get("SMOKE_IB_PORTS", "0")) > 0, functional),
        "output_folder": check_writable(out),
        "image_writable": check_image_writable(mode),
    }
    stack_found, stack_checks = software.run(vocab.in_container(mode))
    checks.update(stack_checks)
    failed = False
    # hostname: what NCCL's log lines start with (the verdict maps them back to this Slurm name)
    report = {"host": host, "hostname": socket.gethostname(), "node_id": os.environ.get("SLURM_NODEID"), "checks": {},
              "software": stack_found}
    for name, (ok, detail) in checks.items():
        state = "SKIP" if ok is None else ("PASS" if ok else "FAIL")
        failed |= ok is False
        report["checks"][name] = {"state": state, "detail": detail}
        print(f"preflight {host}: {name:17} {state}  {detail}", flush=True)
    os.makedirs(os.path.join(out, runfolder.PREFLIGHT_DIR), exist_ok=True)
    runfolder.write_json(os.path.join(out, runfolder.PREFLIGHT_DIR, f"{host}.json"), report)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
