"""The run folder: every file's name, one reader and one writer (docs/run-folder.md says who writes
and who reads each file).

Every stage, code inside the image included, has the run folder mounted writable; the verdict and
localization read it on the batch host, and an operator runs the drain.sh written into it. So the
folder is untrusted input:
- reads open regular files only, follow no link (not in the file's name, not in a folder on the
  way), never block (a FIFO is refused), and read a bounded number of bytes;
- writes go to a temporary file of their own in the same folder, then a rename, which replaces a
  link or anything else at the name instead of writing through it.
"""
from __future__ import annotations

import json
import math
import os
import stat
import tempfile

# --- The files ---------------------------------------------------------------------------------
STAGES = "stages.txt"  # "NAME STATUS" a line, one per stage that ran
SIGNALLED = "signalled"  # "SIGTERM STAGE" when Slurm ended the job during a stage
STOPPED_AFTER = "stopped-after"  # the stage SMOKE_STOP_AFTER stopped the job after
CONTAINER = "container.tsv"  # the container the job used and the host checks before any import
IMPORT_LOG = "import.log"
CONTAINER_REMOVE_LOG = "container-remove.log"
PREFLIGHT_DIR = "preflight"  # <node>.json per node
PROBE = "probe.json"
LOCALIZE = "localize.json"
LOCALIZE_LOG = "localize.log"
LOCALIZE_DIR = "localize"  # node/<node>.json per node, group-<n>.json per group step
FUNCTIONAL_DIR = "functional"  # rank-<n>.json per rank (functional modes)
VERDICT = "verdict.json"
EXCLUDE = "exclude.txt"
DRAIN = "drain.sh"
HOME = "home"  # HOME and the compilers' caches inside containers
TENSORBOARD = "tensorboard"
WATCH_DIR = "watch"  # the hang watchdog's folder: watch/<stage>/ per watched stage (smoke.watchdog.layout)
HANG = "hang.json"  # the hang watchdog's decision after a stall


def stage_log(stage: str) -> str:
    """Each stage's output, as job-lib's smoke_stage tees it."""
    return f"{stage}.log"


MAX_READ = 64 * 2**20  # the largest file read whole (a log's tail is what matters for a failure)
MAX_JSON = 16 * 2**20  # a stage's JSON report: no honest one comes near this


class Unreadable(Exception):
    """A file of the run folder that cannot be used as it is: said in a row, never a crash."""


_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _parts(relative: str) -> list[str]:
    parts = [p for p in relative.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise Unreadable(f"{relative}: not a name inside the run folder")
    return parts


def _open_dir(run_dir: str, parts: list[str], name: str) -> int:
    """A descriptor of run_dir/parts..., each folder opened without following a link."""
    try:
        fd = os.open(run_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise Unreadable(f"{name}: the run folder cannot be opened ({exc.strerror})") from None
    for part in parts:
        try:
            child = os.open(part, _DIR_FLAGS, dir_fd=fd)
        except FileNotFoundError:
            os.close(fd)
            raise
        except OSError as exc:
            os.close(fd)
            raise Unreadable(f"{name}: {part} is not a folder of the run folder ({exc.strerror})") from None
        os.close(fd)
        fd = child
    return fd


def _open_file(run_dir: str, relative: str) -> int | None:
    """A descriptor of run_dir/relative when it is a regular file reached without a link; None when
    it does not exist; Unreadable otherwise."""
    parts = _parts(relative)
    try:
        dir_fd = _open_dir(run_dir, parts[:-1], relative)
    except FileNotFoundError:
        return None
    try:
        try:
            fd = os.open(parts[-1], _OPEN_FLAGS, dir_fd=dir_fd)
        except FileNotFoundError:
            return None
        except OSError as exc:  # ELOOP: a link
            raise Unreadable(f"{relative}: cannot read ({'a link' if exc.errno == 40 else exc.strerror})") from None
    finally:
        os.close(dir_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Unreadable(f"{relative}: not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_upto(fd: int, limit: int) -> bytes:
    chunks, size = [], 0
    while size < limit:
        chunk = os.read(fd, limit - size)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)


def read_bytes(run_dir: str, relative: str, limit: int = MAX_READ, tail: bool = True) -> bytes | None:
    """The bytes of run_dir/relative, None when it does not exist. At most `limit` bytes: the last
    ones of a longer file when tail, else Unreadable."""
    fd = _open_file(run_dir, relative)
    if fd is None:
        return None
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            if not tail:
                raise Unreadable(f"{relative}: {size} bytes, more than the {limit} a report may have")
            os.lseek(fd, size - limit, os.SEEK_SET)
        return _read_upto(fd, limit)
    except OSError as exc:
        raise Unreadable(f"{relative}: cannot read ({exc.strerror})") from None
    finally:
        os.close(fd)


def read_from(run_dir: str, relative: str, offset: int, limit: int) -> bytes | None:
    """At most `limit` bytes of run_dir/relative from `offset` on (a log being written: the hang
    watchdog follows a stage's log); None when it does not exist."""
    fd = _open_file(run_dir, relative)
    if fd is None:
        return None
    try:
        os.lseek(fd, offset, os.SEEK_SET)
        return _read_upto(fd, limit)
    except OSError as exc:
        raise Unreadable(f"{relative}: cannot read ({exc.strerror})") from None
    finally:
        os.close(fd)


def read_text(run_dir: str, relative: str, limit: int = MAX_READ) -> str | None:
    """A text file (undecodable bytes replaced), None when it does not exist."""
    data = read_bytes(run_dir, relative, limit)
    return None if data is None else data.decode("utf-8", "replace")


def _finite_only(text: str):
    raise ValueError(f"{text} is not a number JSON allows")


def read_json(run_dir: str, relative: str, missing_ok: bool = False) -> dict | None:
    """A JSON object written by a stage. Missing: None when missing_ok, else Unreadable; truncated,
    foreign, not an object, or holding NaN/Infinity (which Python's json accepts): Unreadable."""
    data = read_bytes(run_dir, relative, MAX_JSON, tail=False)
    if data is None:
        if missing_ok:
            return None
        raise Unreadable(f"{relative}: missing")
    try:
        value = json.loads(data.decode("utf-8", "replace"), parse_constant=_finite_only)
    except (ValueError, RecursionError) as exc:
        raise Unreadable(f"{relative}: not JSON ({str(exc)[:100]}): its writer died mid-write?") from None
    if not isinstance(value, dict):
        raise Unreadable(f"{relative}: not a JSON object")
    return value


def list_dir(run_dir: str, relative: str, suffix: str = "") -> list[str]:
    """The names in a folder of the run folder ending in suffix, sorted; [] when it does not exist."""
    try:
        fd = _open_dir(run_dir, _parts(relative), relative)
    except FileNotFoundError:
        return []
    try:
        return sorted(n for n in os.listdir(fd) if n.endswith(suffix))
    finally:
        os.close(fd)


def exists(run_dir: str, relative: str) -> bool:
    """Whether anything (a link included) stands at the name."""
    return os.path.lexists(os.path.join(run_dir, relative))


def write_text(path: str, text: str, mode: int = 0o644) -> None:
    """path's folder gets a temporary file of its own, then the rename: whatever stood at path (a
    link, a FIFO) is replaced, never written through, and a reader never sees half a file."""
    folder = os.path.dirname(path) or "."
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}-", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_json(path: str, payload) -> None:
    write_text(path, json.dumps(payload, indent=1, allow_nan=False, default=str) + "\n")


def finite(value) -> float | None:
    """A figure as a float when it is a finite number (not a bool), else None: a NaN or a 400-digit
    integer is never averaged in."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) and abs(number) < 1e30 else None


def open_log(path: str):
    """A log the batch host appends to (localize.log): never through a link, never a FIFO."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, 0o644)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path} is not a regular file")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "a", encoding="utf-8")
