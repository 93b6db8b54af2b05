"""`python -m validator new-preset NAME --from EXISTING` and `python -m validator matrix [--write]`.

Exit codes as the validator's: 0 done (or the matrix is up to date), 1 the matrix differs, 2 usage
or unusable input (said on one line, never a traceback)."""
from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from validator.catalog import README, CatalogError, new_preset, readme_with_matrix, replace_file, source_name
from validator.output import escape

EXIT_CLEAN, EXIT_DIFFERS, EXIT_UNUSABLE, EXIT_INTERNAL = 0, 1, 2, 3


def _matrix(root: Path, write: bool) -> int:
    old, new = readme_with_matrix(root)
    if old == new:
        print("README.md matrix is up to date")
        return EXIT_CLEAN
    if write:
        replace_file(root / README, new)
        print("README.md matrix regenerated from presets/*/preset.yaml")
        return EXIT_CLEAN
    print("README.md matrix differs from presets/*/preset.yaml: run `python -m validator matrix --write`",
          file=sys.stderr)
    return EXIT_DIFFERS


def _repository() -> Path:
    """The preset repository this command runs in: the nearest folder above the current one (as
    written, links not followed) that holds presets/."""
    from validator.engine import find_root

    try:
        here = Path.cwd()
    except OSError as exc:  # the current folder was removed
        raise CatalogError(f"cannot tell the current folder: {exc.strerror or exc}") from None
    root = find_root(here)
    if not (root / "presets").is_dir():
        raise CatalogError(f"{here}: not inside a preset repository (no presets/ folder here or above)")
    return root


def _parser(command: str) -> argparse.ArgumentParser:
    if command == "matrix":
        p = argparse.ArgumentParser(prog="python -m validator matrix",
                                    description="Check (or with --write regenerate) the README's preset matrix.")
        p.add_argument("--write", action="store_true", help="rewrite the table in README.md")
        return p
    p = argparse.ArgumentParser(prog="python -m validator new-preset",
                                description="Copy a preset under a new name; the name is replaced where it "
                                            "names the preset. Then edit what differs and validate.")
    p.add_argument("name", help="the new preset's name (its folder under presets/)")
    p.add_argument("--from", dest="source", required=True, metavar="EXISTING",
                   help="the preset to copy: its name or its folder")
    return p


def main(argv: list[str]) -> int:
    command, rest = argv[0], argv[1:]
    args = _parser(command).parse_args(rest)  # argparse's own usage errors exit 2
    try:
        root = _repository()
        if command == "matrix":
            return _matrix(root, args.write)
        folder = new_preset(root, args.name, args.source)
    except CatalogError as exc:
        print(f"validator: error: {escape(str(exc))}", file=sys.stderr)
        return EXIT_UNUSABLE
    except KeyboardInterrupt:
        print("validator: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
    except Exception as exc:  # a bug here must not look like a usage error or a success
        import traceback
        print(f"validator: internal failure ({type(exc).__name__}: {escape(str(exc))}); please report this with:",
              file=sys.stderr)
        traceback.print_exc(limit=-3)
        return EXIT_INTERNAL
    print(f"created {os.path.relpath(folder, root)}/ from presets/{source_name(root, args.source)}/")
    print("next: edit its preset.yaml (summary, topology, nodes, expectations), train.sbatch (settings with "
          "reasons) and README.md; then `python -m validator presets/%s` and "
          "`python -m validator matrix --write`" % args.name)
    return EXIT_CLEAN
