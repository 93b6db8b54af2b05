"""A repository's own settings: `[tool.preset-validator]` in pyproject.toml or a `.validator.toml`.

    strict = true                 # every script gets the strict profile (what presets get)
    slurm-version = "24.05"       # the Slurm release the repository's scripts are written for
    spank = ["pyxis", "shifter"]  # SPANK plugins its cluster loads (their sbatch options are valid)
    spank-options = ["my-flag"]   # options of a site plugin the validator does not know

The nearest folder (from the input upwards to the repository root) with either file wins;
`.validator.toml` before pyproject.toml.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

TOOL_NAME = "preset-validator"
CONFIG_NAME = ".validator.toml"
KEYS = {"strict": bool, "slurm-version": str, "spank": list, "spank-options": list}


class ConfigError(Exception):
    """A config file that cannot be used: a usage error (exit 2) naming the file."""


@dataclass(frozen=True)
class Config:
    path: str | None = None
    strict: bool = False
    slurm_version: str | None = None
    spank: tuple[str, ...] = ()
    spank_options: tuple[str, ...] = ()


def _read_toml(path: Path, root: Path) -> dict:
    try:
        import tomllib
    except ImportError as exc:  # Python < 3.11
        raise ConfigError(f"{path}: reading TOML needs Python 3.11 or newer") from exc
    from validator.source import read_source

    src = read_source(path, root)  # the validator's one reader: size bound, inside the repository
    if not src.usable:
        raise ConfigError(f"{path}: " + "; ".join(p.message for p in src.problems))
    try:
        return tomllib.loads(src.text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from exc


@lru_cache(maxsize=64)
def load_config(folder: Path, root: Path) -> Config:
    """The config that applies to a file in `folder` of the repository at `root`."""
    # Paths as written, not resolved: a linked folder must not lead the search out of the repository.
    here = Path(os.path.abspath(folder))
    stop = Path(os.path.abspath(root))
    for current in (here, *here.parents):
        if _is_file(current / CONFIG_NAME):
            return _parse(_read_toml(current / CONFIG_NAME, root), current / CONFIG_NAME)
        pyproject = current / "pyproject.toml"
        if _is_file(pyproject):
            table = _read_toml(pyproject, root).get("tool", {}).get(TOOL_NAME)
            if table is not None:
                return _parse(table, pyproject)
        if current == stop:
            break
    return Config()


def _is_file(path: Path) -> bool:
    """A config file is there. Something else under that name (a FIFO, a folder, a broken link) is a
    usage error: skipping it would validate with defaults the repository did not ask for."""
    try:
        if path.is_file():
            return True
        if os.path.lexists(path):
            raise ConfigError(f"{path}: not a regular file (a link to nowhere, a folder or a pipe): "
                              f"make it a TOML file or remove it")
    except OSError:  # a name too long for the file system, a permission error: no config there
        pass
    return False


def _parse(table, path: Path) -> Config:
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.{TOOL_NAME}] must be a table")
    for key, value in table.items():
        if key not in KEYS:
            raise ConfigError(f"{path}: unknown key '{key}' (known: {', '.join(KEYS)})")
        if not isinstance(value, KEYS[key]):
            raise ConfigError(f"{path}: '{key}' must be a {KEYS[key].__name__}")
    version = table.get("slurm-version")
    if version is not None:
        from validator.sbatch import releases
        if version not in releases():
            raise ConfigError(f"{path}: slurm-version '{version}' is not one of {', '.join(releases())}")
    return Config(str(path), table.get("strict", False), version,
                  tuple(str(x) for x in table.get("spank", [])),
                  tuple(str(x) for x in table.get("spank-options", [])))
