"""detect-topology: look at this node and say which preset fits, why, and the settings it would use.

    scripts/detect-topology [--json] [--preset presets/NAME]       (python -m validator.detect_topology)

Reads: the CPU arch; GPUs from nvidia-smi; RDMA devices, port states and link layers (InfiniBand,
or Ethernet for RoCE) from /sys/class/infiniband; network interfaces (link-local ones marked);
enroot and pyxis; the NCCL library version. It recommends the most specific preset under presets/
that fits the node (arch, GPU model, active ports of the preset's fabric), with its settings. What
it cannot see it says, and it still recommends. With --preset it lists every mismatch between this
node and the manifest's assumptions (exit 1 when there is one). Exit 2: unusable input (a recorded
file that cannot be read or parsed, a preset that does not load), said with file:line:col.
Recorded inputs for tests: --sys-root (a copy of /sys), --nvidia-smi-output FILE, --ip-output FILE.
"""
from __future__ import annotations

import argparse
import glob
import ipaddress
import json
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

from validator.catalog import LINK_LAYER, RDMA_FABRICS, CatalogError, load_manifest, manifests, normal_arch
from validator.output import escape

# The repository whose presets are compared: the one scripts/detect-topology sits in (it passes it),
# else the one this module was loaded from.
ROOT = os.environ.get("SMOKE_ROOT") or os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
SMI_QUERY = ["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"]
RECORDED_MAX_BYTES = 4 * 2**20  # `ip -j addr` of a node with hundreds of interfaces is well under this
_MIB = re.compile(r"[0-9]{1,9}(\.[0-9]{1,6})?", re.ASCII)  # memory.total in MiB, nounits
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


class BadInput(Exception):
    """A recorded input that cannot be used: exit 2 (not 1, which means a mismatch)."""


def read_input(path: str, max_bytes: int = RECORDED_MAX_BYTES, optional: bool = False) -> str:
    """A recorded tool output or a sysfs attribute, read as the validator reads its input: a regular
    file only (a FIFO is refused, never waited on), bounded, UTF-8; an empty file is empty output.
    optional: an absent or unreadable file is "" (the kernel hides some attributes)."""
    from validator.source import read_source
    source = read_source(Path(path), Path("/"), max_bytes)  # any folder: the user named it
    if source.usable:
        return source.text
    first = source.problems[0]
    if first.rule == "input-empty" or (optional and first.rule == "input-unreadable"):
        return ""
    raise BadInput(f"{first.path}:{first.line}:{first.col}: {first.message}")


def run(cmd: list[str]) -> str | None:
    if not shutil.which(cmd[0]):
        return None
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=20, check=True).stdout
    except (subprocess.SubprocessError, OSError):
        return None


def parse_gpus(text: str | None, source: str = "nvidia-smi") -> list[dict] | None:
    """`name, memory MiB` rows; a bracketed memory (`[N/A]`) is nvidia-smi's own unknown: skipped."""
    if text is None:
        return None
    gpus = []
    for number, row in enumerate(text.split("\n"), 1):
        parts = [p.strip() for p in row.rstrip("\r").split(",")]
        if parts == [""] or (len(parts) == 2 and parts[1].startswith("[")):
            continue
        bad = _CONTROL.search(row.rstrip("\r"))
        if bad:
            raise BadInput(f"{source}:{number}:{bad.start() + 1}: control character in nvidia-smi output")
        if len(parts) != 2 or not parts[0] or not _MIB.fullmatch(parts[1]):
            raise BadInput(f"{source}:{number}:1: not a 'GPU name, memory MiB' row of {' '.join(SMI_QUERY)}")
        gpus.append({"name": parts[0][:200], "memory_gib": round(float(parts[1]) / 1024, 1)})
    return gpus


def read_ib(sys_root: str) -> list[dict] | None:
    root = os.path.join(sys_root, "class", "infiniband")
    if not os.path.isdir(root):
        return None
    try:
        devices = sorted(os.listdir(root))
    except OSError as exc:
        raise BadInput(f"{root}: cannot list: {exc.strerror}") from None
    ports = []
    for dev in devices:
        for port in sorted(glob.glob(os.path.join(root, dev, "ports", "*"))):
            def read(name):
                return read_input(os.path.join(port, name), 4096, optional=True).strip()
            state = read("state")  # e.g. "4: ACTIVE"
            ports.append({"device": dev, "port": os.path.basename(port), "state": state.split(":")[-1].strip(),
                          "rate": read("rate"), "link_layer": read("link_layer") or "InfiniBand"})
    return ports


def parse_interfaces(ip_json: str | None, sys_root: str = "/sys", source: str = "ip -j addr") -> list[dict]:
    if ip_json is None:  # no iproute2: names from the kernel, state from sysfs, no addresses
        import socket
        out = []
        for _, name in socket.if_nameindex():
            state = read_input(os.path.join(sys_root, "class", "net", name, "operstate"), 4096, True).strip().upper() or None
            out.append({"name": name, "addresses": [], "state": state, "link_local_only": False, "loopback": name == "lo"})
        return out
    try:
        links = json.loads(ip_json)
    except json.JSONDecodeError as exc:
        raise BadInput(f"{source}:{exc.lineno}:{exc.colno}: not `ip -j addr` output: {exc.msg}") from None
    except RecursionError:
        raise BadInput(f"{source}:1:1: not `ip -j addr` output: nested too deeply") from None
    if not isinstance(links, list):
        raise BadInput(f"{source}:1:1: not `ip -j addr` output: a JSON list of interfaces expected")
    out = []
    for number, link in enumerate(links, 1):
        where = f"{source}: interface {number}"
        if not isinstance(link, dict):
            raise BadInput(f"{where}: not a JSON object")
        name, addr_info, flags = link.get("ifname"), link.get("addr_info", []), link.get("flags", [])
        state = link.get("operstate")
        if not isinstance(name, str) or not name or len(name) > 64 or _CONTROL.search(name) or " " in name:
            raise BadInput(f"{where}: 'ifname' is not an interface name")
        if not isinstance(addr_info, list) or not all(isinstance(a, dict) for a in addr_info):
            raise BadInput(f"{where} ({name}): 'addr_info' is not a list of objects")
        if not isinstance(flags, list) or not (state is None or isinstance(state, str)):
            raise BadInput(f"{where} ({name}): 'flags' is not a list or 'operstate' not a string")
        addrs = [a["local"] for a in addr_info if "local" in a]
        try:
            parsed = [ipaddress.ip_address(a) for a in addrs]
        except ValueError:
            raise BadInput(f"{where} ({name}): an 'addr_info' 'local' is not an IP address") from None
        v4 = [a for a in parsed if a.version == 4]
        link_local = bool(v4) and all(a.is_link_local for a in v4)
        out.append({"name": name, "addresses": [str(a) for a in parsed], "state": state,
                    "link_local_only": link_local, "loopback": "LOOPBACK" in flags})
    return out


def nccl_version() -> str | None:
    listing = run(["ldconfig", "-p"]) or ""
    for line in listing.splitlines():
        if "libnccl.so" in line and "=>" in line:
            real = os.path.realpath(line.split("=>")[1].strip())
            match = re.search(r"libnccl\.so\.(\d+\.\d+\.\d+)", real)
            if match:
                return match.group(1)
    for path in glob.glob("/usr/lib/*/libnccl.so.*.*.*") + glob.glob("/usr/local/cuda*/lib*/libnccl.so.*.*.*"):
        return re.search(r"libnccl\.so\.(\d+\.\d+\.\d+)", path).group(1)
    return None


def pyxis_present() -> bool:
    for conf in ["/etc/slurm/plugstack.conf", *glob.glob("/etc/slurm/plugstack.conf.d/*")]:
        try:
            with open(conf, encoding="utf-8") as handle:
                if "pyxis" in handle.read():
                    return True
        except OSError:
            continue
    return False


def observe(args) -> dict:
    smi = read_input(args.nvidia_smi_output) if args.nvidia_smi_output else run(SMI_QUERY)
    ip_out = read_input(args.ip_output) if args.ip_output else run(["ip", "-j", "addr"])
    return {
        "arch": normal_arch(args.arch or platform.machine()),
        "gpus": parse_gpus(smi, args.nvidia_smi_output or "nvidia-smi"),
        "ib_ports": read_ib(args.sys_root),
        "interfaces": parse_interfaces(ip_out, args.sys_root, args.ip_output or "ip -j addr"),
        "enroot": shutil.which("enroot") is not None,
        "pyxis": pyxis_present(),
        "nccl": nccl_version(),
    }


FABRIC_LABEL = {f: name + ("" if LINK_LAYER[f] == name else f" (link layer {LINK_LAYER[f]})")
                for f, name in RDMA_FABRICS.items()}


def rdma_ports(facts: dict, fabric: str) -> list[dict]:
    """Active ports of the fabric's link layer (RoCE ports show link_layer Ethernet)."""
    layer = LINK_LAYER.get(fabric)
    return [p for p in facts["ib_ports"] or [] if p["state"] == "ACTIVE" and p["link_layer"] == layer]


def is_any_gpu(model: str) -> bool:
    return model.lower() == "any" or model.lower().startswith("any ")


def fit_problems(facts: dict, manifest: dict) -> list[str]:
    """Why this node does not fit a preset: arch, GPU model, RDMA ports of the right link layer."""
    topo = manifest.get("topology", {})
    problems = []
    if facts["arch"] != topo.get("arch"):
        problems.append(f"arch: node is {facts['arch']}, preset assumes {topo.get('arch')}")
    model = topo.get("gpu", {}).get("model", "")
    if not is_any_gpu(model):
        names = [g["name"] for g in facts["gpus"] or []]
        if not names or not all(model.split()[0] in n for n in names):
            problems.append(f"GPU model: node has {names[0] if names else 'no visible GPU'}, preset assumes {model}")
    net = topo.get("network", {})
    fabric, want = net.get("fabric"), net.get("ib_ports_per_node", 0)
    if fabric in LINK_LAYER:
        have = len(rdma_ports(facts, fabric))
        if have < max(want, 1):
            problems.append(f"{FABRIC_LABEL[fabric]}: {have} active port(s), preset assumes {want}")
    return problems


def specificity(manifest: dict) -> tuple:
    """Among presets that fit, the most specific wins: an RDMA fabric, more ports, a named GPU."""
    topo = manifest["topology"]
    return (topo["network"]["fabric"] in LINK_LAYER, topo["network"]["ib_ports_per_node"],
            not is_any_gpu(topo["gpu"]["model"]))


def recommend(facts: dict, presets: dict[str, dict]) -> dict:
    notes, unseen = [], []
    gpus = facts["gpus"]
    if gpus is None:
        unseen.append("GPUs (no nvidia-smi)")
    ports = facts["ib_ports"]
    if ports is None:
        unseen.append("InfiniBand/RoCE (no /sys/class/infiniband)")
    virtual = ("ib", "docker", "veth", "virbr", "ifb", "dummy", "bond-slave", "tun", "tap")
    candidates = [i for i in facts["interfaces"] if not i["loopback"] and not i["link_local_only"]
                  and i.get("state", "UP") in ("UP", "UNKNOWN", None) and not i["name"].startswith(virtual)]
    candidates.sort(key=lambda i: not i["addresses"])  # an interface with an address first
    ifname = candidates[0]["name"] if candidates else None
    problems = {name: fit_problems(facts, m) for name, m in presets.items()}
    fitting = sorted((n for n in presets if not problems[n]), key=lambda n: specificity(presets[n]), reverse=True)
    if fitting:
        preset = fitting[0]
    else:  # nothing fits: the least specific preset closest to this node is the safe start
        preset = min(presets, key=lambda n: (len(problems[n]), specificity(presets[n])))
        notes.append(f"no preset fits exactly; {preset} is the closest start: copy it with "
                     f"`python -m validator new-preset NAME --from {preset}` and adapt it")
        notes.extend(f"{preset}: {p}" for p in problems[preset])
    manifest = presets[preset]
    topo = manifest["topology"]
    fabric = topo["network"]["fabric"]
    settings = {name: str(entry.get("value")) for name, entry in (manifest.get("environment") or {}).items()
                if isinstance(entry, dict) and "when" not in entry}
    settings["NCCL_SOCKET_IFNAME"] = ifname or "(none found)"
    if fitting:
        seen = ", ".join(sorted({g["name"] for g in gpus or []})) or "GPUs not visible"
        notes.append(f"fits {preset}: {facts['arch']}, {seen}, fabric {fabric}")
    active = rdma_ports(facts, fabric)
    if fabric in LINK_LAYER and active:
        notes.append(f"{len(active)} active {FABRIC_LABEL[fabric]} port(s)")
        if fabric == "roce":  # exact names: a RoCE front-end NIC is often of the same family (mlx5_8, a bond)
            settings["NCCL_IB_HCA"] = "=" + ",".join(sorted({p["device"] for p in active}))
        else:
            prefix = os.path.commonprefix([p["device"] for p in active]).rstrip("0123456789") or active[0]["device"]
            settings["NCCL_IB_HCA"] = prefix
    elif fabric not in LINK_LAYER:
        rdma = [p for p in facts["ib_ports"] or [] if p["state"] == "ACTIVE"]
        notes.append(f"{len(rdma)} active RDMA port(s) that no preset here uses: NCCL will use TCP sockets"
                     if rdma else "no active InfiniBand or RoCE port: NCCL will use TCP sockets")
    settings["--gpus-per-node"] = str(len(gpus or []) or topo["gpu"]["per_node"])
    link_local = [i["name"] for i in facts["interfaces"] if i["link_local_only"]]
    if link_local:
        notes.append(f"link-local only interfaces {', '.join(link_local)} must not be NCCL_SOCKET_IFNAME")
    if not facts["pyxis"]:
        notes.append("pyxis not found in plugstack.conf: run with SMOKE_MODE=functional or install pyxis/enroot")
    if facts["nccl"] is None:
        unseen.append("NCCL version (no libnccl in the linker cache; the container brings its own)")
    return {"preset": preset, "why": notes, "settings": settings, "could_not_see": unseen}


def compare(facts: dict, manifest: dict) -> list[str]:
    """Every mismatch between this node and a preset's assumptions."""
    topo = manifest.get("topology", {})
    # RDMA ports that cannot be seen are not a mismatch here: --preset compares what is visible.
    problems = [p for p in fit_problems(facts, manifest) if not p.startswith("GPU model")
                and (facts["ib_ports"] is not None or p.startswith("arch"))]
    gpu = topo.get("gpu", {})
    if facts["gpus"] is not None:
        if len(facts["gpus"]) != gpu.get("per_node"):
            problems.append(f"GPUs: node has {len(facts['gpus'])}, preset assumes {gpu.get('per_node')} per node")
        for g in facts["gpus"][:1]:
            if not is_any_gpu(gpu.get("model", "any")) and gpu.get("model", "").split()[0] not in g["name"]:
                problems.append(f"GPU model: node has {g['name']}, preset assumes {gpu.get('model')}")
            if g["memory_gib"] < 0.95 * gpu.get("memory_gib", 0):  # nvidia-smi shows usable MiB, a little under the label
                problems.append(f"GPU memory: {g['memory_gib']} GiB < the preset's {gpu.get('memory_gib')} GiB")
    net = topo.get("network", {})
    names = [i["name"] for i in facts["interfaces"]]
    if net.get("socket_ifname") and net["socket_ifname"] not in names:
        problems.append(f"interface {net['socket_ifname']} (NCCL_SOCKET_IFNAME) does not exist here (have {', '.join(names)})")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--preset", help="a preset folder to compare this node with")
    parser.add_argument("--sys-root", default="/sys")
    parser.add_argument("--nvidia-smi-output")
    parser.add_argument("--ip-output")
    parser.add_argument("--arch")
    args = parser.parse_args(argv)
    try:
        facts = observe(args)
        presets = manifests(ROOT)
        preset = load_manifest(args.preset) if args.preset else None
    except (CatalogError, BadInput) as exc:
        print(f"detect-topology: {escape(str(exc))}", file=sys.stderr)
        return 2
    except ImportError as exc:  # the manifests are YAML: PyYAML comes with the validator's .venv
        print(f"detect-topology: {exc}; run it with the Python of `make validate` (.venv/bin/python)", file=sys.stderr)
        return 2
    if not presets:
        print(f"detect-topology: no presets under {os.path.normpath(os.path.join(ROOT, 'presets'))}", file=sys.stderr)
        return 2
    advice = recommend(facts, presets)
    report = {"node": facts, "recommendation": advice}
    mismatches = None
    if preset is not None:
        mismatches = compare(facts, preset)
        report["mismatches"] = mismatches
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        def say(line: str) -> None:  # names and values from the node (or a doctored --sys-root): one line each
            print(escape(line))
        gpus = facts["gpus"]
        say(f"arch        {facts['arch']}")
        say("GPUs        " + ("not visible (no nvidia-smi)" if gpus is None else
                              f"{len(gpus)} x {gpus[0]['name']} ({gpus[0]['memory_gib']} GiB)" if gpus else "none"))
        ports = facts["ib_ports"]
        say("RDMA ports  " + ("not visible (no /sys/class/infiniband)" if ports is None else
                              ", ".join(f"{p['device']}/{p['port']} {p['state']} {p['link_layer']} {p['rate']}"
                                        for p in ports) or "no ports"))
        say("interfaces  " + ", ".join(i["name"] + (" (link-local only)" if i["link_local_only"] else "")
                                       for i in facts["interfaces"]))
        say(f"containers  enroot {'yes' if facts['enroot'] else 'no'}, pyxis {'yes' if facts['pyxis'] else 'no'}")
        say(f"NCCL        {facts['nccl'] or 'not visible'}")
        say(f"recommend   presets/{advice['preset']}")
        for note in advice["why"]:
            say(f"  because   {note}")
        for key, value in advice["settings"].items():
            say(f"  setting   {key}={value}")
        for item in advice["could_not_see"]:
            say(f"  unseen    {item}")
        for problem in mismatches or []:
            say(f"mismatch    {problem}")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
