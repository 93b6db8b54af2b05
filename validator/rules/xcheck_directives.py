"""Every #SBATCH option of the script is declared in the manifest's slurm.directives with the same value, and the reverse.

Premise: the manifest is what the preset claims to ask Slurm for. Holds for: every Slurm release (no
Slurm behaviour involved). Applies to presets only (needs a manifest): the presets' own consistency,
strict by construction.
"""
from validator.rules.base import manifest_of

ID = "xcheck-directives"
SEVERITY = "error"
SCOPE = "preset"
DESCRIPTION = "Every #SBATCH option of the script is declared in the manifest's slurm.directives with the same value, and the reverse."
GOOD = {"preset.yaml": None}
BAD = {"train.sbatch": ("replace", "#SBATCH --time=00:30:00", "#SBATCH --time=02:00:00")}


def check(target):
    manifest, script = manifest_of(target), target.script
    declared = ((manifest or {}).get("slurm") or {}).get("directives")
    if not isinstance(declared, dict) or script is None:
        return
    doc, seen = target.preset.document, set()
    for option in script.parsed.options:
        if option.name is None:
            continue
        seen.add(option.name)
        value = option.value if option.value is not None else ""
        if option.name not in declared:
            yield (script.display, option.line, option.col,
                   f"--{option.name} is not declared in preset.yaml slurm.directives")
        elif str(declared[option.name]) != value:
            yield (script.display, option.line, option.col,
                   f"--{option.name}={value} but preset.yaml declares '{declared[option.name]}'")
    for name in declared:
        if name not in seen:
            line, col = doc.key_position(("slurm", "directives", name))
            yield (target.preset.display, line, col, f"directive '{name}' is declared but train.sbatch does not set it")
