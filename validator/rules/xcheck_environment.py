"""Every NCCL_/UCX_/TORCH_/CUDA_/SHARP_ variable the script sets is declared in the manifest with the same value (conditional ones with 'when'), and the reverse.

Premise: the manifest documents every setting with its reason and source. Holds for: every Slurm
release (no Slurm behaviour involved). Applies to presets only (needs a manifest): the presets' own
consistency, strict by construction.
"""
from validator.rules.base import manifest_of, setting_value, topology_settings

ID = "xcheck-environment"
SEVERITY = "error"
SCOPE = "preset"
DESCRIPTION = "Every NCCL_/UCX_/TORCH_/CUDA_/SHARP_ variable the script sets is declared in the manifest with the same value (conditional ones with 'when'), and the reverse."
GOOD = {"preset.yaml": None}
BAD = {"train.sbatch": ("replace", "export NCCL_SOCKET_NTHREADS=4", "export NCCL_SOCKET_NTHREADS=8")}


def check(target):
    manifest, script = manifest_of(target), target.script
    declared = (manifest or {}).get("environment")
    if not isinstance(declared, dict) or script is None:
        return
    doc = target.preset.document
    settings = topology_settings(script.shell)
    for name, assignments in settings.items():
        entry = declared.get(name)
        for a in assignments:
            if not isinstance(entry, dict):
                yield (script.display, a.line, a.col, f"{name} is set here but not declared (with a reason) in preset.yaml environment")
                break
            if str(entry.get("value")) != setting_value(a):
                yield (script.display, a.line, a.col,
                       f"{name}={setting_value(a)} but preset.yaml declares '{entry.get('value')}'")
            if a.conditional and "when" not in entry:
                yield (script.display, a.line, a.col, f"{name} is set conditionally; declare its condition with 'when' in preset.yaml")
            if not a.conditional and "when" in entry:
                yield (script.display, a.line, a.col, f"{name} is set unconditionally but preset.yaml says only when {entry['when']}")
    for name in declared:
        if name not in settings:
            line, col = doc.key_position(("environment", name))
            yield (target.preset.display, line, col, f"{name} is declared but train.sbatch does not set it")
