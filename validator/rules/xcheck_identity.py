"""The script says which preset it is the way the manifest does: job name, smoke_init's name and node

Premise: job name, node range and hardware in the script must be the manifest's. Holds for: every
Slurm release (no Slurm behaviour involved). Applies to presets only (needs a manifest): the
presets' own consistency, strict by construction.
range, and the hardware facts preflight checks the nodes against: SMOKE_ARCH, SMOKE_GPU_MODEL,
SMOKE_IB_PORTS, SMOKE_NIC_GBPS (the rate the ports must reach) and SMOKE_LINK_LAYER (RoCE's Ethernet).
A copy of a preset whose script still names the original is judged against the wrong expectations.
"""
from smoke.vocab import LINK_LAYER
from validator.rules.base import manifest_of

ID = "xcheck-identity"
SEVERITY = "error"
SCOPE = "preset"
DESCRIPTION = ("The script's identity matches the manifest: --job-name=smoke-NAME, `smoke_init NAME MIN MAX [\"$@\"]` "
               "(name, nodes.min, nodes.max), SMOKE_ARCH (topology.arch), SMOKE_GPU_MODEL (topology.gpu.model, "
               "empty for 'any ...'), SMOKE_IB_PORTS (topology.network.ib_ports_per_node), SMOKE_NIC_GBPS "
               "(topology.network.nic_gbps) and SMOKE_LINK_LAYER (the fabric's link layer) where the ports need them.")
_INIT = "set -euo pipefail\n"
_IDENTITY = 'smoke_init example 1 64\nexport SMOKE_ARCH=x86_64 SMOKE_GPU_MODEL="" SMOKE_IB_PORTS=0\n'
GOOD = {"train.sbatch": ("replace", _INIT, _INIT + _IDENTITY)}
BAD = {"train.sbatch": ("replace", _INIT, _INIT + _IDENTITY.replace("smoke_init example", "smoke_init ethernet-only"))}

# Variables job-lib.sh hands to preflight, and the manifest value each must equal.
_HARDWARE = {
    "SMOKE_ARCH": ("topology.arch", lambda m: m["topology"]["arch"]),
    "SMOKE_GPU_MODEL": ("topology.gpu.model", lambda m: gpu_model_filter(m["topology"]["gpu"]["model"])),
    "SMOKE_IB_PORTS": ("topology.network.ib_ports_per_node", lambda m: m["topology"]["network"]["ib_ports_per_node"]),
    "SMOKE_NIC_GBPS": ("topology.network.nic_gbps", lambda m: m["topology"]["network"]["nic_gbps"]),
    "SMOKE_LINK_LAYER": ("topology.network.fabric's link layer", lambda m: LINK_LAYER[m["topology"]["network"]["fabric"]]),
}


def _needed(variable: str, manifest: dict) -> bool:
    """Whether the script must set it: preflight's rate and link-layer checks run only on RDMA ports,
    and its link layer defaults to InfiniBand (smoke.preflight), so only RoCE must say Ethernet."""
    network = manifest.get("topology", {}).get("network", {}) if isinstance(manifest.get("topology"), dict) else {}
    if variable == "SMOKE_NIC_GBPS":
        return bool(network.get("ib_ports_per_node"))
    if variable == "SMOKE_LINK_LAYER":
        return network.get("fabric") == "roce"
    return True


def gpu_model_filter(model: str) -> str:
    """What preflight matches GPU names against: the model, or '' (any GPU) for 'any ...'."""
    return "" if model.lower().startswith("any ") or model.lower() == "any" else model


def _expected(manifest: dict, getter):
    try:
        return str(getter(manifest))
    except (KeyError, TypeError):
        return None  # the schema rule reports a missing or mistyped field


def check(target):
    manifest, script = manifest_of(target), target.script
    if not isinstance(manifest, dict) or script is None or not isinstance(manifest.get("name"), str):
        return
    name, display = manifest["name"], script.display
    job_names = script.parsed.get("job-name")
    if not job_names:
        yield (display, 1, 1, f"no #SBATCH --job-name: set --job-name=smoke-{name} (the job log is %x-%j.out)")
    for option in job_names:
        if option.value != f"smoke-{name}":
            yield (display, option.line, option.col,
                   f"--job-name={option.value} but preset '{name}' runs as smoke-{name}")
    shell = script.shell
    inits = shell.named("smoke_init")
    sources_lib = any("job-lib.sh" in arg.raw for c in shell.named("source", ".") for arg in c.args)
    if sources_lib and not inits:
        yield (display, 1, 1, f"sources job-lib.sh but never calls `smoke_init {name} MIN MAX`")
    nodes = manifest.get("nodes") if isinstance(manifest.get("nodes"), dict) else {}
    wanted = [("name", name), ("nodes.min", nodes.get("min")), ("nodes.max", nodes.get("max"))]
    for command in inits:
        # NAME MIN MAX, then optionally "$@": the KEY=VALUE settings given after the script
        if len(command.args) != 3 and not (len(command.args) == 4 and command.args[3].raw == '"$@"'):
            yield (display, command.line, command.col,
                   f"smoke_init takes NAME MIN MAX [\"$@\"]: `smoke_init {name} {nodes.get('min')} {nodes.get('max')} \"$@\"`")
            continue
        for arg, (field, value) in zip(command.args, wanted):
            if value is not None and arg.value != str(value):
                yield (display, arg.line, arg.col,
                       f"smoke_init {field} is '{arg.raw}' but preset.yaml says '{value}'")
    for variable, (field, getter) in _HARDWARE.items():
        assignments = shell.assigned(variable)
        if inits and not assignments and _needed(variable, manifest):
            yield (display, inits[0].line, inits[0].col,
                   f"{variable} is not set: preflight would not check {field} ('{_expected(manifest, getter)}')")
        value = _expected(manifest, getter)
        for a in assignments:
            if value is not None and a.value != value:
                yield (display, a.line, a.col, f"{variable}={a.raw} but preset.yaml {field} says '{value}'")
