"""The preset matrix as data: which presets exist, their manifests, the README table, new presets.

A preset is one folder under presets/ holding preset.yaml; everything that lists presets (the
end-to-end tests, scripts/detect-topology, the calibration tests, the README matrix) asks this module,
so a new preset needs no edit outside its folder. Importing it loads nothing beyond the standard
library.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

# The job's vocabulary (architectures, fabrics, link layers) is the in-job package's, named here
# for the rules and tools that list presets.
from smoke.vocab import ARCHES, LINK_LAYER, RDMA_FABRICS, normal_arch  # noqa: F401

MANIFEST = "preset.yaml"

NAME = re.compile(r"^[a-z0-9][a-z0-9-]*$")  # the schema's name pattern: a folder and job name


class CatalogError(Exception):
    """A preset that cannot be listed or copied, said with its path."""


def preset_dirs(root: Path) -> list[Path]:
    """Every preset folder under root/presets/, sorted by name."""
    folder = Path(root) / "presets"
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".") and (p / MANIFEST).is_file())


def preset_names(root: Path) -> list[str]:
    return [p.name for p in preset_dirs(root)]


def load_manifest(folder: Path) -> dict:
    """A preset's manifest, read as strictly as the validator reads it; CatalogError when it is not
    a clean mapping (the validator says exactly why)."""
    from validator.source import read_source
    from validator.yamlload import load_yaml

    path = Path(folder) / MANIFEST
    source = read_source(path, path.resolve().parents[2] if len(path.resolve().parents) > 2 else Path("/"))
    if not source.usable:
        first = source.problems[0] if source.problems else None
        raise CatalogError(f"{path}: cannot read: {first.message if first else 'unreadable'}")
    doc = load_yaml(source.text, str(path))
    if doc.problems or not isinstance(doc.data, dict):
        first = doc.problems[0] if doc.problems else None
        where = f":{first.line}:{first.col}: {first.message}" if first else ": not a mapping"
        raise CatalogError(f"{path}{where} (run the validator on it)")
    return doc.data


def manifests(root: Path) -> dict[str, dict]:
    return {p.name: load_manifest(p) for p in preset_dirs(root)}


# --- the README matrix ------------------------------------------------------------------------
MATRIX = re.compile(r"(<!-- matrix:begin[^\n]*-->\n)(.*?)(<!-- matrix:end -->)", re.S)
MATRIX_HEAD = ("| preset | arch | GPUs/node | GPU memory | fabric | RDMA ports | nodes | image |\n"
               "|---|---|---|---|---|---|---|---|\n")


def matrix_table(root: Path) -> str:
    rows = []
    for name, m in manifests(root).items():
        t = m["topology"]
        images = ", ".join(f"`{v}`" for v in m["container"]["images"].values())
        rows.append(f"| [{name}](presets/{name}/) | {t['arch']} | {t['gpu']['per_node']} | "
                    f"{t['gpu']['memory_gib']} GiB | {t['network']['fabric']} | {t['network']['ib_ports_per_node']} | "
                    f"{m['nodes']['min']}-{m['nodes']['max']} | {images} |\n")
    return MATRIX_HEAD + "".join(rows)


def readme_with_matrix(root: Path) -> tuple[str, str]:
    """(README.md as it is, README.md with the matrix regenerated)."""
    path = Path(root) / "README.md"
    text = path.read_text(encoding="utf-8")
    if not MATRIX.search(text):
        raise CatalogError(f"{path}: no '<!-- matrix:begin -->' ... '<!-- matrix:end -->' block")
    table = matrix_table(root)
    return text, MATRIX.sub(lambda m: m.group(1) + table + m.group(3), text, count=1)


# --- a new preset -----------------------------------------------------------------------------
def new_preset(root: Path, name: str, source: str) -> Path:
    """presets/<name>/ as a copy of presets/<source>/ with the preset's name replaced wherever it
    names the preset (manifest name, job name, smoke_init, paths, README title)."""
    presets = Path(root) / "presets"
    src, dst = presets / source, presets / name
    if not NAME.match(name):
        raise CatalogError(f"'{name}' is not a preset name: lower-case letters, digits and '-', not first")
    if not (src / MANIFEST).is_file():
        known = ", ".join(preset_names(root)) or "none"
        raise CatalogError(f"{src}: no such preset (have: {known})")
    if dst.exists():
        raise CatalogError(f"{dst} already exists")
    # The old name as a whole token: not inside a longer name, an image tag or an upper-case model.
    token = re.compile(r"(?<![A-Za-z0-9_.-])" + re.escape(source) + r"(?![A-Za-z0-9_-])")
    shutil.copytree(src, dst)
    for path in sorted(dst.rglob("*")):
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        new = token.sub(name, text.replace(f"smoke-{source}", f"smoke-{name}"))
        if new != text:
            path.write_text(new, encoding="utf-8")
    return dst
