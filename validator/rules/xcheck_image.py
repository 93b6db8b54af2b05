"""The script's container image is the manifest's image for the preset's arch, the image is published for that arch, and the cached .sqsh name carries the arch.

Premise: the script runs the image the manifest pins, for the preset's architecture. Holds for:
every Slurm release (no Slurm behaviour involved). Applies to presets only (needs a manifest): the
presets' own consistency, strict by construction.
"""
from validator.catalog import ARCHES
from validator.rules.base import image_uses, manifest_of

ID = "xcheck-image"
SEVERITY = "error"
SCOPE = "preset"
DESCRIPTION = "The script's container image is the manifest's image for the preset's arch, the image is published for that arch, and the cached .sqsh name carries the arch."
GOOD = {"preset.yaml": None}
BAD = {"preset.yaml": ("replace", "image_arches: [amd64, arm64]", "image_arches: [arm64]")}


PLATFORM = ARCHES
ARCH_NAMES = {arch: (arch, platform) for arch, platform in ARCHES.items()}


def check(target):
    manifest, script = manifest_of(target), target.script
    if not manifest or script is None:
        return
    container = manifest.get("container") or {}
    arch = (manifest.get("topology") or {}).get("arch")
    images = container.get("images") or {}
    if container.get("runtime") != "pyxis" or arch not in ARCH_NAMES or not isinstance(images, dict):
        return
    doc = target.preset.document
    if arch not in images:
        line, col = doc.key_position(("container", "images"))
        yield (target.preset.display, line, col, f"no image declared for the preset's arch {arch}")
        return
    arches = container.get("image_arches")
    if isinstance(arches, list) and PLATFORM[arch] not in arches:
        line, col = doc.position(("container", "image_arches"))
        yield (target.preset.display, line, col,
               f"the image is not published for {PLATFORM[arch]}: an {arch} node cannot run it")
    uses = list(image_uses(script.shell))
    if not uses:
        yield (script.display, 1, 1, "manifest declares a pyxis image but the script starts no container")
    for word, arch_word in uses:
        if word.value is not None and word.value != images[arch]:
            yield (script.display, word.line, word.col, f"image '{word.value}' differs from preset.yaml's {arch} image")
        if arch_word is not None and arch_word.value is not None and arch_word.value not in ARCH_NAMES[arch]:
            yield (script.display, arch_word.line, arch_word.col,
                   f"image cached as '{arch_word.value}' on a {arch} preset")
    for command in script.shell.named("srun"):
        save = command.option("--container-save")
        if save is not None and not any(name in save.raw for name in ARCH_NAMES[arch]):
            yield (script.display, save.line, save.col, f"cache file name lacks the arch ({arch}): an import from another arch could be reused")
