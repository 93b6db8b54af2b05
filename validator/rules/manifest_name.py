"""A manifest's name is its folder's name, so findings and the matrix table agree.

Premise: findings, the matrix table and the job name refer to a preset by its folder. Holds for:
every Slurm release (no Slurm behaviour involved). Applies to presets only (needs a manifest): the
presets' own consistency, strict by construction.
"""
ID = "manifest-name"
SEVERITY = "error"
SCOPE = "manifest"
DESCRIPTION = "The manifest's 'name' must equal the preset folder's name."
GOOD = {"preset.yaml": None}
BAD = {"preset.yaml": ("replace", "name: example\n", "name: other\n")}


def check(target):
    preset = target.preset
    manifest = preset.manifest if preset else None
    if not manifest or not isinstance(manifest.get("name"), str):
        return
    if manifest["name"] != preset.folder.resolve().name:
        line, col = preset.document.position(("name",))
        yield (preset.display, line, col,
               f"name '{manifest['name']}' differs from the folder name '{preset.folder.resolve().name}'")
