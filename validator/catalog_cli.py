"""`python -m validator new-preset NAME --from EXISTING` and `python -m validator matrix [--write]`."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from validator.catalog import CatalogError, new_preset, readme_with_matrix
from validator.engine import find_root


def _matrix(root: Path, write: bool) -> int:
    old, new = readme_with_matrix(root)
    if old == new:
        print("README.md matrix is up to date")
        return 0
    if write:
        (root / "README.md").write_text(new, encoding="utf-8")
        print("README.md matrix regenerated from presets/*/preset.yaml")
        return 0
    print("README.md matrix differs from presets/*/preset.yaml: run `python -m validator matrix --write`",
          file=sys.stderr)
    return 1


def main(argv: list[str]) -> int:
    command, rest = argv[0], argv[1:]
    root = find_root(Path.cwd())
    if command == "matrix":
        p = argparse.ArgumentParser(prog="python -m validator matrix",
                                    description="Check (or with --write regenerate) the README's preset matrix.")
        p.add_argument("--write", action="store_true", help="rewrite the table in README.md")
        args = p.parse_args(rest)
    else:
        p = argparse.ArgumentParser(prog="python -m validator new-preset",
                                    description="Copy a preset under a new name; the name is replaced wherever it "
                                                "names the preset. Then edit what differs and validate.")
        p.add_argument("name", help="the new preset's name (its folder under presets/)")
        p.add_argument("--from", dest="source", required=True, metavar="EXISTING", help="the preset to copy")
        args = p.parse_args(rest)
    try:
        if command == "matrix":
            return _matrix(root, args.write)
        folder = new_preset(root, args.name, args.source)
        print(f"created {folder.relative_to(root)}/ from presets/{args.source}/")
        print("next: edit its preset.yaml (summary, topology, nodes, expectations), train.sbatch (settings with "
              "reasons) and README.md; then `python -m validator presets/%s` and "
              "`python -m validator matrix --write`" % args.name)
        return 0
    except CatalogError as exc:
        print(f"validator: error: {exc}", file=sys.stderr)
        return 2
