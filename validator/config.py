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
import re
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


def _read_toml(path: Path, root: Path) -> tuple[dict, str]:
    """(the file's TOML as a dict, its text); an empty file is valid TOML with nothing in it."""
    try:
        import tomllib
    except ImportError as exc:  # Python < 3.11
        raise ConfigError(f"{path}: reading TOML needs Python 3.11 or newer") from exc
    from validator.source import read_source

    src = read_source(path, root)  # the validator's one reader: size bound, inside the repository
    if not src.usable:
        if [p.rule for p in src.problems] == ["input-empty"]:
            return {}, ""
        first = src.problems[0]
        where = f":{first.line}:{first.col}" if first.rule in _POSITIONED else ""
        raise ConfigError(f"{path}{where}: " + "; ".join(p.message for p in src.problems))
    try:
        return tomllib.loads(src.text), src.text
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        at = _AT.search(message)
        if at:
            message = message[:at.start()]
            line, col = (int(at.group(1)), int(at.group(2))) if at.group(1) else (src.text.count("\n") + 1, 1)
            raise ConfigError(f"{path}:{line}:{col}: {message}") from None
        raise ConfigError(f"{path}: {message}") from None


_POSITIONED = ("input-binary", "input-encoding")  # the reader's findings that point into the file
_AT = re.compile(r" \((?:at line (\d+), column (\d+)|at end of document)\)\Z")  # tomllib's position


@lru_cache(maxsize=64)
def load_config(folder: Path, root: Path) -> Config:
    """The config that applies to a file in `folder` of the repository at `root`."""
    # Paths as written, not resolved: a linked folder must not lead the search out of the repository.
    here = Path(os.path.abspath(folder))
    stop = Path(os.path.abspath(root))
    for current in (here, *here.parents):
        if _is_file(current / CONFIG_NAME):
            data, text = _read_toml(current / CONFIG_NAME, root)
            return _parse(data, _Where(current / CONFIG_NAME, text, ()))
        pyproject = current / "pyproject.toml"
        if _is_file(pyproject):
            data, text = _read_toml(pyproject, root)
            where = _Where(pyproject, text, ())
            tool = data.get("tool", {})
            if not isinstance(tool, dict):
                raise where.error(("tool",), f"'tool' must be a table ([tool.{TOOL_NAME}]), not {_kind(tool)}")
            table = tool.get(TOOL_NAME)
            if table is not None:
                if not isinstance(table, dict):
                    raise where.error(("tool", TOOL_NAME), f"[tool.{TOOL_NAME}] must be a table, not {_kind(table)}")
                return _parse(table, _Where(pyproject, text, ("tool", TOOL_NAME)))
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


# A plugin or option name as Slurm's SPANK plugins spell them (`pyxis`, `container-image`): an
# option is written without its leading `--`.
SPANK_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_KINDS = ((bool, "true or false"), (str, "a string"), (int, "an integer"), (float, "a number"),
          (list, "a list"), (dict, "a table"))


def _kind(value) -> str:
    return next((name for cls, name in _KINDS if isinstance(value, cls)), "a date or time")


@dataclass(frozen=True)
class _Where:
    """A config file's text and the table being read, to say where a key is wrong."""
    path: Path
    text: str
    table: tuple[str, ...]

    def error(self, key: tuple[str, ...], message: str, at_key: bool = False) -> ConfigError:
        line, col = _position(self.text, self.table + key, at_key)
        return ConfigError(f"{self.path}:{line}:{col}: {message}")


def _dotted(text: str) -> tuple[str, ...]:
    """A TOML key as its parts (quotes dropped); close enough to find a line, never to read a value."""
    return tuple(part.strip().strip("\"'") for part in text.split("."))


def _position(text: str, key: tuple[str, ...], at_key: bool = False) -> tuple[int, int]:
    """(line, column) of a key's value (or the key), or of its table's header: tomllib keeps none.
    String operations only, so any line length costs linear time."""
    table: tuple[str, ...] = ()
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("["):
            table = _dotted(stripped.strip("[").split("]", 1)[0])
            if table == key:
                return number, line.index("[") + 1
            continue
        name, equals, value = line.partition("=")
        if equals and name.strip() and not stripped.startswith("#") and table + _dotted(name) == key:
            if at_key:
                return number, len(name) - len(name.lstrip()) + 1
            return number, len(name) + 1 + (len(value) - len(value.lstrip())) + 1
    return 1, 1


def _parse(table: dict, where: _Where) -> Config:
    for key, value in table.items():
        if key not in KEYS:
            known = ", ".join(KEYS)
            shown = key if len(key) <= 60 else key[:60] + "..."
            raise where.error((key,), f"unknown key '{shown}' (known: {known})", at_key=True)
        if not isinstance(value, KEYS[key]):
            raise where.error((key,), f"'{key}' must be {_kind(KEYS[key]())}, not {_kind(value)}")
        if KEYS[key] is list:
            for number, item in enumerate(value, 1):
                if not isinstance(item, str):
                    raise where.error((key,), f"'{key}' must be a list of names; item {number} is {_kind(item)}")
                if not SPANK_NAME.fullmatch(item):
                    shown = item if len(item) <= 60 else item[:60] + "..."
                    raise where.error((key,), f"'{key}' item {number}: '{shown}' is not a plugin or option name "
                                              "(letters, digits, '_', '.', '-', not first; an option without "
                                              "its leading '--')")
    version = table.get("slurm-version")
    if version is not None:
        from validator.sbatch import releases
        if version not in releases():
            raise where.error(("slurm-version",),
                              f"slurm-version '{version[:60]}' is not one of {', '.join(releases())}")
    return Config(str(where.path), table.get("strict", False), version,
                  tuple(table.get("spank", [])), tuple(table.get("spank-options", [])))
