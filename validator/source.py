"""Reading input files safely: every refusal becomes a finding, never a traceback."""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from validator.findings import Finding

MAX_BYTES = 256 * 1024  # a preset file is a few KiB; anything this big is a mistake


@dataclass
class Source:
    path: Path  # as given, for messages
    display: str
    text: str | None = None
    problems: list[Finding] = field(default_factory=list)
    bom: bool = False  # a UTF-8 byte order mark was stripped from the start

    @property
    def usable(self) -> bool:
        return self.text is not None


def display_path(path: Path) -> str:
    """The path as the user wrote it, normalised, so findings point where they looked."""
    return os.path.normpath(str(path))


def _unusable(src: Source, rule: str, message: str, line: int = 1, col: int = 1) -> Source:
    src.problems.append(Finding(src.display, line, col, "error", rule, message, unusable=True))
    return src


def read_source(path: Path, root: Path) -> Source:
    src = Source(path=path, display=display_path(path))
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return _unusable(src, "input-unreadable", "no such file")
    except OSError as exc:
        return _unusable(src, "input-unreadable", f"cannot read: {exc.strerror}")
    if stat.S_ISLNK(info.st_mode):
        target = Path(os.path.realpath(path))
        try:
            target.relative_to(os.path.realpath(root))
        except ValueError:
            return _unusable(
                src, "input-symlink-escape",
                f"symbolic link leaves the repository (points to {target}); refusing to read it")
        try:
            info = os.stat(path)
        except OSError:
            return _unusable(src, "input-unreadable", "dangling symbolic link")
    if not stat.S_ISREG(info.st_mode):
        return _unusable(src, "input-not-regular", "not a regular file; refusing to read it")
    if info.st_size > MAX_BYTES:
        return _unusable(src, "input-too-large",
                         f"file is {info.st_size} bytes, over the {MAX_BYTES}-byte bound for a preset file")
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        return _unusable(src, "input-unreadable", f"cannot read: {exc.strerror}")
    if not data.strip():
        return _unusable(src, "input-empty", "file is empty")
    nul = data.find(b"\0")
    if nul >= 0:
        line, col = _position(data, nul)
        return _unusable(src, "input-binary", "NUL byte: this is a binary file, not text", line, col)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, col = _position(data, exc.start)
        return _unusable(src, "input-encoding", f"not UTF-8: byte 0x{data[exc.start]:02x} cannot be decoded",
                         line, col)
    if text.startswith("\ufeff"):
        text = text[1:]
        src.bom = True
    src.text = text
    return src


def _position(data: bytes, offset: int) -> tuple[int, int]:
    line = data.count(b"\n", 0, offset) + 1
    col = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    return line, col
