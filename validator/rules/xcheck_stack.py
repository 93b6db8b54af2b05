"""The manifest's own claims about its software must agree with the image stack it states.

Premise: the in-job software check (smoke.software) holds the image to the manifest's nccl_min and
stack.megatron, and megatron-node's flags to software.megatron's flag list; a manifest whose stack
contradicts its own claims fails every run at start. Issue 25, finding 3: the presets claimed
Megatron core_v0.13.0 and (gh200) NCCL >= 2.26 for an image that holds Megatron 0.12.0rc0 and
NCCL 2.25.1, and nothing noticed. Holds for: every Slurm release (no Slurm behaviour involved).
"""
import re

from smoke.stack import version_key

ID = "xcheck-stack"
SEVERITY = "error"
SCOPE = "manifest"
DESCRIPTION = ("The image stack the manifest states must meet its own claims: stack.nccl >= software.nccl_min, and "
               "software.megatron (the flag list) names stack.megatron's version and commit.")
GOOD = {"preset.yaml": None}
BAD = {"preset.yaml": ("replace", "  nccl: 2.25.1\n", "  nccl: 2.19.3\n")}


def _megatron_mismatch(named: str, megatron: dict) -> str | None:
    """software.megatron is a flag-list name: a release (core_v0.13.0, 0.13.0) or VERSION-COMMIT."""
    version, commit = str(megatron.get("version", "")), str(megatron.get("commit", ""))
    release, _, at = re.sub(r"^core_[rv]", "", named).partition("-")
    if version_key(release) != version_key(version):
        return f"software.megatron is '{named}' but the image's Megatron is {version} (stack.megatron.version)"
    if at and commit and not commit.startswith(at):
        return f"software.megatron names commit {at} but stack.megatron.commit is {commit}"
    return None


def check(target):
    preset = target.preset
    manifest = preset.manifest
    if not isinstance(manifest, dict) or not isinstance(manifest.get("stack"), dict):
        return
    stack, software = manifest["stack"], manifest.get("software") if isinstance(manifest.get("software"), dict) else {}
    doc = preset.document
    have, floor = version_key(str(stack.get("nccl", ""))), version_key(str(software.get("nccl_min", "")))
    if have is not None and floor is not None and have < floor:
        line, col = doc.position(("stack", "nccl"))
        yield (preset.display, line, col,
               f"the image's NCCL {stack['nccl']} is below this preset's software.nccl_min {software['nccl_min']}: "
               "lower nccl_min with the settings that make it true, or pin an image with a newer NCCL")
    if isinstance(stack.get("megatron"), dict) and isinstance(software.get("megatron"), str):
        problem = _megatron_mismatch(software["megatron"], stack["megatron"])
        if problem:
            line, col = doc.position(("software", "megatron"))
            yield (preset.display, line, col, problem)
