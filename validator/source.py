"""Reading input files safely: every refusal becomes a finding, never a traceback."""
from __future__ import annotations

import errno
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
    """The file could not be used: a finding that no suppression, --select or --ignore hides."""
    src.problems.append(Finding(src.display, line, col, "error", rule, message, unusable=True))
    return src


# Refusals that mean the file could not be read at all: exit code 2. Every other finding about a
# file that was read (binary, not UTF-8, malformed YAML) is a finding like any other: exit code 1.
UNREADABLE = ("input-unreadable", "input-not-regular", "input-symlink-escape", "input-too-large")


def inside(path: str | Path, root: str | Path) -> bool:
    """Whether `path`, with every symbolic link on the way resolved, lies inside `root`."""
    real, top = os.path.realpath(path), os.path.realpath(root)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def read_source(path: Path, root: Path, max_bytes: int = MAX_BYTES) -> Source:
    """The one way the validator reads a file it checks.

    - Only inside the repository: the path with every link resolved (the file's own, a linked
      preset folder's) must stay under `root`; otherwise the file is refused unread.
    - Only regular files, opened without following a last link (the resolved path is opened with
      O_NOFOLLOW, so a link swapped in meanwhile fails) and without blocking on a FIFO.
    - At most `max_bytes`; text must be UTF-8 without NUL bytes.
    Every refusal is a finding, never an exception."""
    src = Source(path=path, display=display_path(path))
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return _unusable(src, "input-unreadable", "no such file")
    except OSError as exc:
        return _unusable(src, "input-unreadable", f"cannot read: {exc.strerror}")
    if not inside(path, root):
        target = os.path.realpath(path)
        return _unusable(
            src, "input-symlink-escape",
            f"symbolic link leaves the repository (points to {target}); refusing to read it")
    if stat.S_ISLNK(info.st_mode) and not os.path.exists(path):
        return _unusable(src, "input-unreadable", "dangling symbolic link (or a link loop)")
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(os.path.realpath(path), flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return _unusable(src, "input-unreadable", "symbolic link loop")
        return _unusable(src, "input-unreadable", f"cannot read: {exc.strerror}")
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return _unusable(src, "input-not-regular", "not a regular file; refusing to read it")
        if info.st_size > max_bytes:
            return _unusable(src, "input-too-large",
                             f"file is {info.st_size} bytes, over the {max_bytes}-byte bound for a preset file")
        chunks, size = [], 0
        while size <= max_bytes:
            chunk = os.read(fd, max_bytes + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
    except OSError as exc:
        return _unusable(src, "input-unreadable", f"cannot read: {exc.strerror}")
    finally:
        os.close(fd)
    if len(data) > max_bytes:  # grew while being read
        return _unusable(src, "input-too-large", f"file is over the {max_bytes}-byte bound for a preset file")
    return decode(src, data)


def decode(src: Source, data: bytes) -> Source:
    """Text of a file's bytes, or the finding why it is not text."""
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
        if not _only_in_comments(data):
            return _unusable(src, "input-encoding", f"not UTF-8: byte 0x{data[exc.start]:02x} cannot be decoded",
                             line, col)
        # bash skips a comment's bytes unread and sbatch passes them through: the job runs as
        # written. The file is read (those bytes replaced) and said once, for the strict profile.
        text = data.decode("utf-8", errors="replace")
        src.problems.append(Finding(src.display, line, col, "error", "input-encoding",
                                    f"{COMMENT_ONLY}: byte 0x{data[exc.start]:02x} cannot be decoded; save the file as UTF-8"))
    if text.startswith("\ufeff"):
        text = text[1:]
        src.bom = True
    src.text = text
    return src


COMMENT_ONLY = "not UTF-8 in a comment only"


def _only_in_comments(data: bytes) -> bool:
    """Every byte that is not UTF-8 sits in a comment line (not '#!'), or in a #SBATCH line after the
    '#' that ends its options: a Latin-1 no-break space or accent in a note to the reader."""
    for raw in data.split(b"\n"):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw.lstrip()
            if not line.startswith(b"#") or line.startswith(b"#!"):
                return False
            if line.startswith(b"#SBATCH") and not _in_directive_comment(raw, exc.start):
                return False
    return True


def _in_directive_comment(raw: bytes, offset: int) -> bool:
    """The byte at `offset` of a #SBATCH line comes after the unquoted, unescaped '#' that ends its
    options: sbatch's get_argument() takes the rest of the line as a comment there ("found an un-escaped
    #, rest of line is a comment", src/sbatch/opt.c at slurm-22-05-0-1 and slurm-26-05-1-1), and bash
    reads the whole line as a comment (round one hundred and fourteen: Spanish notes in Latin-1 after
    `#SBATCH --time=00:10:00   #Tiempo m\\xe1ximo`). The line is split by sbatch.split_arguments, the
    parser's own reading of get_argument, over a Latin-1 decoding (one character a byte)."""
    from validator.sbatch import MAGIC, split_arguments  # the directive parser; imported here, at its use
    line = raw.decode("latin-1")
    start = line.index(MAGIC) + len(MAGIC)
    _, cut, _ = split_arguments(line[start:], start)
    return cut is not None and cut - 1 < offset


def _position(data: bytes, offset: int) -> tuple[int, int]:
    line = data.count(b"\n", 0, offset) + 1
    col = offset - (data.rfind(b"\n", 0, offset) + 1) + 1
    return line, col


def peek(path: Path, root: Path, size: int = 100) -> bytes | None:
    """The first bytes of a regular file inside the repository (for telling scripts apart), or None."""
    if not inside(path, root):
        return None
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(os.path.realpath(path), flags)
    except OSError:
        return None
    try:
        return os.read(fd, size) if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except OSError:
        return None
    finally:
        os.close(fd)
