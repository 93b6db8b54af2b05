"""The preset matrix as data: which presets exist, their manifests, the README table, new presets.

A preset is one folder under presets/ holding preset.yaml; everything that lists presets (the
end-to-end tests, scripts/detect-topology, the calibration tests, the README matrix) asks this module,
so a new preset needs no edit outside its folder. Importing it loads nothing beyond the standard
library.
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

# The job's vocabulary (architectures, fabrics, link layers) is the in-job package's, named here
# for the rules and tools that list presets.
from smoke.vocab import ARCHES, LINK_LAYER, RDMA_FABRICS, normal_arch  # noqa: F401

MANIFEST = "preset.yaml"
README = "README.md"

NAME = re.compile(r"[a-z0-9][a-z0-9-]*")  # the schema's name pattern, matched whole: a folder and job name
# A preset name is a folder name and, as smoke-NAME, the job name: short enough to read in a queue
# listing and far below the file system's 255-byte limit on one name (NAME_MAX).
NAME_MAX = 64


class CatalogError(Exception):
    """A preset that cannot be listed or copied, said with its path."""


def is_preset_name(name: str) -> bool:
    return len(name) <= NAME_MAX and NAME.fullmatch(name) is not None


def _inside(path: Path, root: Path) -> bool:
    from validator.source import inside
    return inside(path, root)


def preset_dirs(root: Path) -> list[Path]:
    """Every preset folder under root/presets/, sorted by name. A folder (or presets/ itself) linked
    from outside the repository, or a link to nowhere where a preset folder would be, is refused as
    the validator refuses it: listing it would copy or tabulate what the validator never read."""
    folder = Path(root) / "presets"
    if not folder.is_dir():
        return []
    if not _inside(folder, root):
        raise CatalogError(f"{folder}: symbolic link leaves the repository; refusing to list it")
    try:
        entries = sorted(p for p in folder.iterdir() if not p.name.startswith("."))
    except OSError as exc:
        raise CatalogError(f"{folder}: cannot list: {exc.strerror or exc}") from None
    found = []
    for entry in entries:
        if entry.is_symlink() and not entry.exists():
            raise CatalogError(f"{entry}: dangling symbolic link (or a link loop) where a preset folder would be")
        if not entry.is_dir():
            continue
        manifest = entry / MANIFEST
        if os.path.lexists(manifest) and not manifest.is_file():
            raise CatalogError(f"{manifest}: not a regular file (a link to nowhere, a folder or a pipe)")
        if not manifest.is_file():
            continue
        if not _inside(entry / MANIFEST, root):
            raise CatalogError(f"{entry}: symbolic link leaves the repository (points to "
                               f"{os.path.realpath(entry / MANIFEST)}); refusing it, as the validator does")
        found.append(entry)
    return found


def preset_names(root: Path) -> list[str]:
    return [p.name for p in preset_dirs(root)]


def _manifest_document(folder: Path, root: Path | None):
    """(path, Document) of a preset's manifest, read as strictly as the validator reads it (inside
    the repository at `root`, by default the one holding `folder` as written); CatalogError when it
    is not a clean mapping (the validator says exactly why)."""
    from validator.source import read_source
    from validator.yamlload import load_yaml

    path = Path(folder) / MANIFEST
    if root is None:
        from validator.engine import find_root
        root = find_root(Path(folder))
    source = read_source(path, Path(root))
    if not source.usable:
        first = source.problems[0] if source.problems else None
        raise CatalogError(f"{path}: cannot read: {first.message if first else 'unreadable'}")
    doc = load_yaml(source.text, str(path))
    if doc.problems or not isinstance(doc.data, dict):
        first = doc.problems[0] if doc.problems else None
        where = f":{first.line}:{first.col}: {first.message}" if first else ": not a mapping"
        raise CatalogError(f"{path}{where} (run the validator on it)")
    return path, doc


def load_manifest(folder: Path, root: Path | None = None) -> dict:
    """A preset's manifest as a clean mapping (not yet checked against the schema)."""
    return _manifest_document(folder, root)[1].data


def checked_manifest(folder: Path, root: Path | None = None) -> dict:
    """A manifest that also passes the schema: what tables and recommendations index into."""
    from types import SimpleNamespace

    from validator.schema_check import schema_problems

    path, doc = _manifest_document(folder, root)
    first = next(iter(schema_problems(SimpleNamespace(document=doc))), None)
    if first is not None:
        line, col, message = first
        raise CatalogError(f"{path}:{line}:{col}: {message} (run the validator on it)")
    return doc.data


def manifests(root: Path) -> dict[str, dict]:
    """Every preset's manifest, each one read and checked against the schema as the validator does."""
    found = {}
    for folder in preset_dirs(root):
        if not is_preset_name(folder.name):
            raise CatalogError(f"{folder}: the folder name is not a preset name (lower-case letters, digits "
                               f"and '-', at most {NAME_MAX} characters)")
        found[folder.name] = checked_manifest(folder, root)
    return found


# --- the README matrix ------------------------------------------------------------------------
# The table sits between a line starting `<!-- matrix:begin` and ending `-->`, and `<!-- matrix:end -->`.
MATRIX_BEGIN, MATRIX_END = "<!-- matrix:begin", "<!-- matrix:end -->"
MATRIX_HEAD = ("| preset | arch | GPUs/node | GPU memory | fabric | RDMA ports | nodes | image |\n"
               "|---|---|---|---|---|---|---|---|\n")


def matrix_table(root: Path) -> str:
    """The README's table, one row per preset, from manifests that passed the schema."""
    rows = []
    for name, m in manifests(root).items():
        t = m["topology"]
        images = ", ".join(f"`{v}`" for v in m["container"]["images"].values())
        cells = (f"[{name}](presets/{name}/)", t["arch"], t["gpu"]["per_node"], f"{t['gpu']['memory_gib']} GiB",
                 t["network"]["fabric"], t["network"]["ib_ports_per_node"], f"{m['nodes']['min']}-{m['nodes']['max']}",
                 images)
        rows.append("| " + " | ".join(_cell(c) for c in cells) + " |\n")
    return MATRIX_HEAD + "".join(rows)


def _cell(text: str) -> str:
    """A table cell: no value can end the cell, the row or the table (the schema already bounds
    them; this keeps it so if the schema ever allows more)."""
    from validator.output import escape
    return escape(str(text)).replace("|", "\\|")


def matrix_span(text: str) -> tuple[int, int] | None:
    """(start, end) of the table between the markers, or None; linear in the text (a regular
    expression here backtracks over every begin marker of a long line)."""
    at = 0
    while (begin := text.find(MATRIX_BEGIN, at)) >= 0:
        line_end = text.find("\n", begin)
        if line_end < 0:
            return None
        if text[:line_end].endswith("-->"):
            end = text.find(MATRIX_END, line_end + 1)
            return (line_end + 1, end) if end >= 0 else None
        at = line_end + 1  # another begin marker on this line ends the same way
    return None


def readme_with_matrix(root: Path) -> tuple[str, str]:
    """(README.md as it is, README.md with the matrix regenerated), README.md read as the validator
    reads every input: a regular file inside the repository, bounded, UTF-8."""
    from validator.source import read_source

    path = Path(root) / README
    source = read_source(path, Path(root))
    if not source.usable and source.problems[0].rule != "input-empty":
        first = source.problems[0]
        raise CatalogError(f"{first.path}:{first.line}:{first.col}: {first.message}")
    text = ("\ufeff" if source.bom else "") + (source.text or "")
    span = matrix_span(text)
    if span is None:
        raise CatalogError(f"{path}: no '{MATRIX_BEGIN} -->' ... '{MATRIX_END}' block for the matrix")
    table = matrix_table(root)
    return text, text[:span[0]] + table + text[span[1]:]


def replace_file(path: Path, text: str) -> None:
    """Write `text` to `path` by a temporary file in the same folder and a rename: never through a
    link (a link at `path` is refused, not followed or replaced), never half-written."""
    path = Path(path)
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise CatalogError(f"{path}: cannot write: {exc.strerror or exc}") from None
    if info is not None and not stat.S_ISREG(info.st_mode):
        kind = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a regular file"
        raise CatalogError(f"{path}: {kind}; refusing to write through it")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise CatalogError(f"{path.parent}: cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            if info is not None:
                os.fchmod(handle.fileno(), stat.S_IMODE(info.st_mode))
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise CatalogError(f"{path}: cannot write: {exc.strerror or exc}") from None
        raise


# --- a new preset -----------------------------------------------------------------------------
_NOT_LONGER = r"(?![\w-]|\.\w)"  # the name ends here: not roce-b, gh200x or roce.old
# What names the preset in its files, and only that: a value such as `fabric: roce` is hardware,
# not the name, and stays (the author edits hardware; new-preset only renames).
_NAMING = (
    r"(?m)(^name:[ \t]*['\"]?)NAME(?=['\"]?[ \t]*(?:#.*)?\r?$)",  # the manifest's name
    r"((?<![\w.-])smoke-)NAME(?![\w]|-[a-z0-9])",  # the job name (and smoke-NAME-<job id>.out)
    r"((?<![\w.-])presets/)NAME" + _NOT_LONGER,  # its folder in paths and commands
    r"((?<![\w-])smoke_init[ \t]+['\"]?)NAME(?=['\"]?(?:\s|$))",  # the script's first call
    r"((?<![\w-])--from[ \t=]+)NAME" + _NOT_LONGER,  # `new-preset ... --from NAME` in its README
    r"(?m)(^#[ \t]+)NAME(?=[ \t]*\r?$)",  # the README's title
)
_MANIFEST_NAME = 0  # the rule that must have matched, else nothing was renamed
MAX_FILES = 256  # a preset folder holds a handful of files


def _renamed(text: str, old: str, new: str) -> tuple[str, list[int]]:
    """The text with the preset's name replaced where it names the preset; how often each rule hit."""
    counts = []
    for rule in _NAMING:
        text, n = re.subn(rule.replace("NAME", re.escape(old)), lambda m: m.group(1) + new, text)
        counts.append(n)
    return text, counts


def source_name(root: Path, given: str) -> str:
    """--from as a preset name (`gh200`, `gh200/`) or a path to a folder directly under presets/
    (`presets/gh200`, `../presets/gh200` from a subfolder), as written: links are not followed."""
    stripped = given.rstrip("/") or given
    if is_preset_name(stripped):
        return stripped
    path = Path(os.path.normpath(os.path.abspath(stripped)))
    if path.parent == Path(os.path.abspath(root)) / "presets" and is_preset_name(path.name):
        return path.name
    raise CatalogError(f"--from '{_short(given)}': not a preset name nor a folder directly under "
                       f"{Path(root) / 'presets'}")


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[:limit] + f"... ({len(text)} characters)"


def _preset_files(src: Path, root: Path) -> list[tuple[Path, str, int]]:
    """(path relative to the folder, text, mode) of every file in a preset folder, each read through
    the validator's reader: a file linked from outside the repository, a FIFO, a binary or an
    oversized file is refused, as the validator refuses it. Links to folders are not followed."""
    from validator.source import read_source

    found, pending = [], [Path()]
    while pending:
        rel = pending.pop()
        try:
            names = sorted(os.listdir(src / rel))
        except OSError as exc:
            raise CatalogError(f"{src / rel}: cannot list: {exc.strerror or exc}") from None
        for entry in names:
            path = src / rel / entry
            info = os.lstat(path)
            if stat.S_ISDIR(info.st_mode):
                pending.append(rel / entry)
                continue
            if stat.S_ISLNK(info.st_mode) and os.path.isdir(path):
                raise CatalogError(f"{path}: a symbolic link to a folder; new-preset copies files and plain folders")
            source = read_source(path, root)
            if not source.usable and source.problems[0].rule != "input-empty":
                first = source.problems[0]
                raise CatalogError(f"{first.path}:{first.line}:{first.col}: {first.message} "
                                   f"(new-preset copies text files the validator can read)")
            text = ("\ufeff" if source.bom else "") + (source.text or "")
            found.append((rel / entry, text, stat.S_IMODE(os.stat(path).st_mode)))
            if len(found) > MAX_FILES:
                raise CatalogError(f"{src}: more than {MAX_FILES} files: not a preset folder")
    return found


def new_preset(root: Path, name: str, source: str) -> Path:
    """presets/<name>/ as a copy of presets/<source>/ with the preset's name replaced where it names
    the preset (manifest name, job name, smoke_init, paths, README title), built in a temporary
    folder and renamed into place, so a failure leaves nothing half-made."""
    root = Path(root)
    presets = root / "presets"
    if not is_preset_name(name):
        raise CatalogError(f"'{_short(name)}' is not a preset name: lower-case letters, digits and '-' "
                           f"(not first), at most {NAME_MAX} characters")
    source = source_name(root, source)
    if not presets.is_dir():
        raise CatalogError(f"{presets}: no such folder (run it inside a preset repository)")
    src, dst = presets / source, presets / name
    if not (src / MANIFEST).is_file():
        known = ", ".join(preset_names(root)) or "none"
        raise CatalogError(f"{src}: no such preset (have: {known})")
    if not _inside(src, root):
        raise CatalogError(f"{src}: symbolic link leaves the repository (points to {os.path.realpath(src)}); "
                           f"refusing it, as the validator does")
    written = load_manifest(src, root).get("name")
    if written != source:
        raise CatalogError(f"{src / MANIFEST}: its name is {written!r}, not '{source}': "
                           f"fix the preset (run the validator on it) before copying it")
    if os.path.lexists(dst):
        kind = " (a symbolic link)" if os.path.islink(dst) else ""
        raise CatalogError(f"{dst} already exists{kind}")
    files = []
    for rel, text, mode in _preset_files(src, root):
        new, counts = _renamed(text, source, name)
        if rel == Path(MANIFEST) and counts[_MANIFEST_NAME] != 1:
            raise CatalogError(f"{src / MANIFEST}: no top-level 'name: {source}' line to rename")
        files.append((rel, new, mode))
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".tmp", dir=presets))
    except OSError as exc:
        raise CatalogError(f"{presets}: cannot create a folder: {exc.strerror or exc}") from None
    try:
        for rel, text, mode in files:
            (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
            with open(tmp / rel, "x", encoding="utf-8", newline="") as handle:
                handle.write(text)
            os.chmod(tmp / rel, mode)
        os.chmod(tmp, 0o777 & ~_umask())
        if os.path.lexists(dst):  # made meanwhile: never replace it
            raise CatalogError(f"{dst} already exists")
        os.rename(tmp, dst)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise CatalogError(f"{dst}: cannot create: {exc.strerror or exc}") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return dst


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
