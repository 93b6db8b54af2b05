"""Hostile inputs for the tools beside the checker (issue 24, items 13-18): `new-preset`, `matrix`,
the repository config, scripts/detect-topology and smoke.rank_bind.

Each case builds a small preset repository (the tracked presets and README.md) or input files in a
temporary folder, with what git cannot hold (links, FIFOs, undecodable bytes) made by its `setup`;
runs the tool in its own process under a timeout (a FIFO that is opened blocks: the timeout is the
hang detector); and asserts the exit code, a part of the message, no traceback and no raw control
character in what is printed. Exit codes: 2 usage or unusable input for every tool; detect-topology
keeps 1 for a mismatch; rank_bind.py runs the rank's program whatever sysfs holds (not binding, and
saying why)."""
from __future__ import annotations

import os
import re
import resource
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from conftest import FIXTURES, ROOT

TIMEOUT_S = 30  # generous on a shared 2-core machine; a hang runs into it and fails the case
MEMORY_BYTES = 2 * 2**30  # unbounded work (a cpulist of 3e9 CPUs) fails here, not the machine


def _bounded() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
RT = FIXTURES / "runtime"
GH200 = "presets/gh200"


def _tracked(*paths: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z", "--", *paths], cwd=ROOT, check=True, capture_output=True,
                         text=True).stdout
    return [p for p in out.split("\0") if p]


@dataclass
class Place:
    repo: Path  # a copy of the tracked presets/ and README.md, with a .git folder
    outside: Path  # a folder outside that repository
    presets_before: list[str] = field(default_factory=list)  # presets/ after the case's setup


@dataclass
class Case:
    tool: str  # "validator", "detect" or "bind"
    args: tuple[str, ...]
    exit: int
    message: str  # a part of stderr (stdout for rank_bind's program)
    setup: Callable[[Place], None] | None = None
    cwd: str = "."  # relative to the repository; "{outside}" for outside it
    env: dict[str, str] = field(default_factory=dict)
    after: Callable[[Place, subprocess.CompletedProcess], None] | None = None


def _write(path: Path, data: bytes | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    if os.path.lexists(path):
        path.unlink()
    path.write_bytes(data)


def _link(path: Path, target: Path | str) -> None:
    if os.path.lexists(path):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, path)


def _fifo(path: Path) -> None:
    if os.path.lexists(path):
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)


def _preset_outside(p: Place, name: str = "linked") -> Path:
    folder = p.outside / name
    shutil.copytree(p.repo / GH200, folder)
    manifest = folder / "preset.yaml"
    manifest.write_text(manifest.read_text().replace("name: gh200\n", f"name: {name}\n"))
    return folder


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


def _presets_unchanged(p: Place, _proc) -> None:
    """A refused new-preset made nothing: no folder, no temporary folder."""
    assert sorted(os.listdir(p.repo / "presets")) == p.presets_before


_TRACKED_PRESETS = sorted({path.split("/")[1] for path in _tracked("presets")})


def _roce_renamed(p: Place, _proc) -> None:
    """Only the name changed: `fabric: roce` is hardware, the validator finds nothing to say."""
    manifest = (p.repo / "presets" / "roce-b" / "preset.yaml").read_text()
    assert "name: roce-b\n" in manifest and "    fabric: roce\n" in manifest and "roce-b-b" not in manifest
    proc = subprocess.run([sys.executable, "-m", "validator", "--no-shellcheck", "presets/roce-b"], cwd=p.repo,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout) == (0, ""), proc.stdout + proc.stderr


def _only_name_changed(p: Place, _proc) -> None:
    new, old = p.repo / "presets" / "gh-b", p.repo / GH200
    assert sorted(os.listdir(new)) == sorted(os.listdir(old))
    assert "name: gh-b\n" in (new / "preset.yaml").read_text()
    assert not list((p.repo / "presets").glob(".*"))  # no temporary folder left


def _readme_outside_untouched(p: Place, _proc) -> None:
    assert (p.outside / "README.md").read_text() == "outside\n<!-- matrix:begin -->\n<!-- matrix:end -->\n"


def _readme_link_kept(p: Place, _proc) -> None:
    assert (p.repo / "README.md").is_symlink()
    assert not [n for n in os.listdir(p.repo) if n.startswith(".README")]


def _drift(p: Place) -> None:
    _edit(p.repo / "README.md", "| [gh200](presets/gh200/)", "| [gh200-old](presets/gh200/)")


def _new_preset_from(source: str) -> Callable[[Place], None]:
    def setup(p: Place) -> None:
        shutil.copytree(p.repo / "presets" / source, p.repo / "presets" / "zz")
        _edit(p.repo / "presets" / "zz" / "preset.yaml", f"name: {source}\n", "name: zz\n")
    return setup


def _no_topology(p: Place) -> None:
    _new_preset_from("gh200")(p)
    manifest = p.repo / "presets" / "zz" / "preset.yaml"
    text = manifest.read_text()
    start, end = text.index("topology:\n"), text.index("\nnodes:\n")
    manifest.write_text(text[:start] + text[end + 1:])


SCRIPT = "#!/bin/bash\n#SBATCH --time=00:10:00\nset -euo pipefail\necho ok\n"


def _config(name: str, data: bytes | str, where: str = ".") -> Callable[[Place], None]:
    def setup(p: Place) -> None:
        _write(p.repo / "jobs" / "job.sbatch", SCRIPT)
        _write(p.repo / where / name, data)
    return setup


def _sysfs(local_cpulist: bytes | None = b"0\n", node1: bytes | None = b"1\n",
           bus_id: str = "00000000:1B:00.0") -> Callable[[Place], None]:
    """Two NUMA nodes with CPUs, one GPU on node 0 (a sysfs tree in the kernel's layout) and a
    stand-in nvidia-smi that prints its bus id as nvidia-smi does."""
    def setup(p: Place) -> None:
        root = p.outside / "sysfs"
        _write(root / "sys/devices/system/node/node0/cpulist", b"0\n")
        if node1 is None:
            _fifo(root / "sys/devices/system/node/node1/cpulist")
        else:
            _write(root / "sys/devices/system/node/node1/cpulist", node1)
        _write(root / "sys/bus/pci/devices/0000:1b:00.0/numa_node", b"0\n")
        if local_cpulist is None:
            _fifo(root / "sys/bus/pci/devices/0000:1b:00.0/local_cpulist")
        else:
            _write(root / "sys/bus/pci/devices/0000:1b:00.0/local_cpulist", local_cpulist)
        smi = p.outside / "bin" / "nvidia-smi"
        _write(smi, f"#!/bin/sh\necho '{bus_id}'\n")
        smi.chmod(0o755)
    return setup


def _ib_port(name: str, data: bytes | None) -> Callable[[Place], None]:
    def setup(p: Place) -> None:
        port = p.outside / "sys" / "class" / "infiniband" / "mlx5_0" / "ports" / "1"
        _write(port / "link_layer", "InfiniBand\n")
        if data is None:
            _fifo(port / name)
        else:
            _write(port / name, data)
    return setup


def _input(name: str, data: bytes | None) -> Callable[[Place], None]:
    def setup(p: Place) -> None:
        if data is None:
            _fifo(p.outside / name)
        else:
            _write(p.outside / name, data)
    return setup


def _config_case(exit: int, message: str, name: str, data: bytes | str, where: str = ".") -> Case:
    return Case("validator", ("--no-shellcheck", "jobs/job.sbatch"), exit, message, setup=_config(name, data, where))


def _ip_case(data: bytes | str | None, message: str) -> Case:
    return Case("detect", ("--ip-output", "{outside}/ip.json"), 2, message, setup=_input("ip.json", data))


def _smi_case(data: bytes | str | None, message: str, exit: int = 2) -> Case:
    return Case("detect", ("--nvidia-smi-output", "{outside}/smi.csv"), exit, message, setup=_input("smi.csv", data))


NOT_A_NAME = "is not a preset name"
LEAVES = "symbolic link leaves the repository"
CASES = {
    # --- 13. new-preset replaces only what names the preset --------------------------------------
    "new-preset-from-roce-keeps-fabric-roce": Case(
        "validator", ("new-preset", "roce-b", "--from", "roce"), 0, "created presets/roce-b/ from presets/roce/",
        after=_roce_renamed),
    # --- 14. names by fullmatch ----------------------------------------------------------------
    "new-preset-name-trailing-newline": Case("validator", ("new-preset", "abc\n", "--from", "gh200"), 2,
                                             "'abc\\n' " + NOT_A_NAME, after=_presets_unchanged),
    "new-preset-name-escape": Case("validator", ("new-preset", "a\x1b[2Jb", "--from", "gh200"), 2,
                                   "'a\\x1b[2Jb' " + NOT_A_NAME, after=_presets_unchanged),
    "new-preset-name-upper": Case("validator", ("new-preset", "Gh200", "--from", "gh200"), 2, NOT_A_NAME,
                                  after=_presets_unchanged),
    "new-preset-name-dot-dot": Case("validator", ("new-preset", "..", "--from", "gh200"), 2, NOT_A_NAME,
                                    after=_presets_unchanged),
    "new-preset-name-slash": Case("validator", ("new-preset", "a/../../b", "--from", "gh200"), 2, NOT_A_NAME,
                                  after=_presets_unchanged),
    "new-preset-from-newline": Case("validator", ("new-preset", "x", "--from", "gh200\n"), 2,
                                    "--from 'gh200\\n': not a preset name", after=_presets_unchanged),
    # --- 15. usage errors: exit 2, one line; paths to the source work or are refused --------------
    "new-preset-name-300-characters": Case("validator", ("new-preset", "a" * 300, "--from", "gh200"), 2,
                                           "(300 characters)' " + NOT_A_NAME, after=_presets_unchanged),
    "new-preset-dangling-link-at-destination": Case(
        "validator", ("new-preset", "dang", "--from", "gh200"), 2, "dang already exists (a symbolic link)",
        setup=lambda p: _link(p.repo / "presets" / "dang", "/nonexistent/folder"), after=_presets_unchanged),
    "new-preset-from-trailing-slash": Case("validator", ("new-preset", "gh-b", "--from", "gh200/"), 0, "",
                                           after=_only_name_changed),
    "new-preset-from-presets-path": Case("validator", ("new-preset", "gh-b", "--from", "presets/gh200"), 0, "",
                                         after=_only_name_changed),
    "new-preset-from-dotdot-in-subfolder": Case("validator", ("new-preset", "gh-b", "--from", "../presets/gh200"),
                                                0, "", cwd="presets", after=_only_name_changed),
    "new-preset-from-dotdot-above-repository": Case(
        "validator", ("new-preset", "gh-b", "--from", "../presets/gh200"), 2,
        "not a preset name nor a folder directly under", after=_presets_unchanged),
    "new-preset-from-absolute-elsewhere": Case("validator", ("new-preset", "gh-b", "--from", "/etc"), 2,
                                               "not a preset name nor a folder directly under",
                                               after=_presets_unchanged),
    "new-preset-from-empty": Case("validator", ("new-preset", "gh-b", "--from", ""), 2,
                                  "--from '': not a preset name", after=_presets_unchanged),
    "new-preset-from-unknown": Case("validator", ("new-preset", "gh-b", "--from", "nope"), 2,
                                    "no such preset (have: " + ", ".join(_TRACKED_PRESETS) + ")",
                                    after=_presets_unchanged),
    "new-preset-outside-a-repository": Case("validator", ("new-preset", "gh-b", "--from", "gh200"), 2,
                                            "not inside a preset repository", cwd="{outside}"),
    # --- 16. never a link out of the repository; the validator's reader for every file -----------
    "new-preset-from-folder-linked-outside": Case(
        "validator", ("new-preset", "gh-b", "--from", "linked"), 2, "presets/linked: " + LEAVES,
        setup=lambda p: _link(p.repo / "presets" / "linked", _preset_outside(p)), after=_presets_unchanged),
    "new-preset-source-file-linked-outside": Case(
        "validator", ("new-preset", "gh-b", "--from", "gh200"), 2, "README.md:1:1: " + LEAVES,
        setup=lambda p: (_write(p.outside / "README.md", "# secret\n"),
                         _link(p.repo / GH200 / "README.md", p.outside / "README.md")),
        after=_presets_unchanged),
    "new-preset-source-folder-link-inside": Case(
        "validator", ("new-preset", "gh-b", "--from", "gh200"), 2, "a symbolic link to a folder",
        setup=lambda p: _link(p.repo / GH200 / "loop", "."), after=_presets_unchanged),
    "new-preset-source-fifo": Case("validator", ("new-preset", "gh-b", "--from", "gh200"), 2,
                                   "notes:1:1: not a regular file", setup=lambda p: _fifo(p.repo / GH200 / "notes"),
                                   after=_presets_unchanged),
    "new-preset-source-binary": Case("validator", ("new-preset", "gh-b", "--from", "gh200"), 2,
                                     "logo.png:1:5: NUL byte",
                                     setup=lambda p: _write(p.repo / GH200 / "logo.png", b"\x89PNG\0\0"),
                                     after=_presets_unchanged),
    "new-preset-source-name-mismatch": Case(
        "validator", ("new-preset", "gh-b", "--from", "gh200"), 2, "its name is 'other', not 'gh200'",
        setup=lambda p: _edit(p.repo / GH200 / "preset.yaml", "name: gh200\n", "name: other\n"),
        after=_presets_unchanged),
    "new-preset-presets-folder-linked-outside": Case(
        "validator", ("new-preset", "gh-b", "--from", "gh200"), 2, LEAVES,
        setup=lambda p: (shutil.move(p.repo / "presets", p.outside / "presets"),
                         _link(p.repo / "presets", p.outside / "presets"))),
    "matrix-readme-linked-outside": Case(
        "validator", ("matrix", "--write"), 2, "README.md:1:1: " + LEAVES,
        setup=lambda p: (_write(p.outside / "README.md", "outside\n<!-- matrix:begin -->\n<!-- matrix:end -->\n"),
                         _link(p.repo / "README.md", p.outside / "README.md")),
        after=_readme_outside_untouched),
    "matrix-readme-missing": Case("validator", ("matrix",), 2, "README.md:1:1: no such file",
                                  setup=lambda p: (p.repo / "README.md").unlink()),
    "matrix-readme-folder": Case("validator", ("matrix",), 2, "README.md:1:1: not a regular file",
                                 setup=lambda p: ((p.repo / "README.md").unlink(), (p.repo / "README.md").mkdir())),
    "matrix-readme-latin1": Case("validator", ("matrix",), 2, "README.md:2:4: not UTF-8: byte 0xe9",
                                 setup=lambda p: _write(p.repo / "README.md", b"# x\ncaf\xe9\n")),
    "matrix-readme-fifo": Case("validator", ("matrix", "--write"), 2, "README.md:1:1: not a regular file",
                               setup=lambda p: _fifo(p.repo / "README.md")),
    "matrix-readme-empty": Case("validator", ("matrix",), 2, "no '<!-- matrix:begin -->'",
                                setup=lambda p: _write(p.repo / "README.md", "")),
    "matrix-readme-begin-markers-without-end": Case(  # linear: a regular expression here backtracked
        "validator", ("matrix",), 2, "no '<!-- matrix:begin -->'",
        setup=lambda p: _write(p.repo / "README.md", "<!-- matrix:begin " * 14000 + "\n")),
    "matrix-readme-too-large": Case("validator", ("matrix",), 2, "over the 262144-byte bound",
                                    setup=lambda p: _write(p.repo / "README.md", "x" * 300_000)),
    "matrix-write-through-a-link-inside": Case(
        "validator", ("matrix", "--write"), 2, "README.md: a symbolic link; refusing to write through it",
        setup=lambda p: (_drift(p), shutil.move(p.repo / "README.md", p.repo / "docs.md"),
                         _link(p.repo / "README.md", "docs.md")),
        after=_readme_link_kept),
    "matrix-outside-a-repository": Case("validator", ("matrix",), 2, "not inside a preset repository",
                                        cwd="{outside}"),
    "matrix-manifest-without-topology": Case("validator", ("matrix",), 2,
                                             "zz/preset.yaml:2:1: top level: missing required key 'topology'",
                                             setup=_no_topology),
    "matrix-manifest-not-yaml": Case("validator", ("matrix",), 2, "zz/preset.yaml",
                                     setup=lambda p: (_new_preset_from("gh200")(p),
                                                      _write(p.repo / "presets" / "zz" / "preset.yaml", "a: [\n"))),
    "matrix-preset-folder-linked-outside": Case(
        "validator", ("matrix",), 2, "presets/linked: " + LEAVES,
        setup=lambda p: _link(p.repo / "presets" / "linked", _preset_outside(p))),
    "matrix-manifest-fifo": Case("validator", ("matrix",), 2, "zz/preset.yaml: not a regular file",
                                 setup=lambda p: _fifo(p.repo / "presets" / "zz" / "preset.yaml")),
    "matrix-preset-dangling-link": Case("validator", ("matrix",), 2, "presets/gone: dangling symbolic link",
                                        setup=lambda p: _link(p.repo / "presets" / "gone", "nowhere")),
    "matrix-folder-name-not-a-name": Case("validator", ("matrix",), 2,
                                          "presets/Bad|Name: the folder name is not a preset name",
                                          setup=lambda p: shutil.copytree(p.repo / GH200, p.repo / "presets" / "Bad|Name")),
    # --- 17. the repository config ---------------------------------------------------------------
    "config-tool-is-an-integer": _config_case(
        2, "pyproject.toml:1:8: 'tool' must be a table", "pyproject.toml", "tool = 5\n"),
    "config-table-is-an-integer": _config_case(
        2, "pyproject.toml:2:20: [tool.preset-validator] must be a table, not an integer",
        "pyproject.toml", "[tool]\npreset-validator = 5\n"),
    "config-empty-pyproject-above": _config_case(0, "", "pyproject.toml", ""),
    "config-blank-validator-toml": _config_case(0, "", ".validator.toml", "\n\n", where="jobs"),
    "config-spank-items-not-names": _config_case(
        2, "pyproject.toml:2:9: 'spank' must be a list of names; item 1 is an integer",
        "pyproject.toml", "[tool.preset-validator]\nspank = [1, {a = 1}]\n"),
    "config-spank-option-with-dashes": _config_case(
        2, "'spank-options' item 1: '--my-flag' is not a plugin or option name",
        ".validator.toml", 'spank-options = ["--my-flag"]\n'),
    "config-strict-is-a-string": _config_case(
        2, ".validator.toml:1:10: 'strict' must be true or false, not a string", ".validator.toml", 'strict = "yes"\n'),
    "config-unknown-key": _config_case(
        2, ".validator.toml:2:1: unknown key 'strikt'", ".validator.toml", "strict = true\nstrikt = true\n"),
    "config-toml-syntax": _config_case(
        2, "pyproject.toml:2:6: Expected ']' at the end of a table declaration", "pyproject.toml", "a = 1\n[tool\n"),
    "config-not-utf8": _config_case(
        2, "pyproject.toml:1:6: not UTF-8: byte 0xff", "pyproject.toml", b'a = "\xff"\n'),
    "config-version-a-number": _config_case(
        2, "'slurm-version' must be a string, not a number", ".validator.toml", "slurm-version = 24.05\n"),
    # --- 18. detect-topology's recorded inputs: exit 2 (1 is a mismatch), never a hang ------------
    "detect-ip-not-json": _ip_case("x", "ip.json:1:1: not `ip -j addr` output"),
    "detect-ip-list-of-numbers": _ip_case("[1]", "ip.json: interface 1: not a JSON object"),
    "detect-ip-object": _ip_case('{"ifname": "eth0"}', "a JSON list of interfaces expected"),
    "detect-ip-no-ifname": _ip_case('[{"operstate": "UP"}]', "'ifname' is not an interface name"),
    "detect-ip-ifname-escape": _ip_case('[{"ifname": "eth0\\u001b[2J"}]', "'ifname' is not an interface name"),
    "detect-ip-bad-address": _ip_case('[{"ifname": "eth0", "addr_info": [{"local": "zz"}]}]',
                                      "interface 1 (eth0): an 'addr_info' 'local' is not an IP address"),
    "detect-ip-addr-info-string": _ip_case('[{"ifname": "eth0", "addr_info": "x"}]',
                                           "'addr_info' is not a list of objects"),
    "detect-ip-deep-nesting": _ip_case("[" * 100_000, "ip.json"),
    "detect-ip-fifo": _ip_case(None, "ip.json:1:1: not a regular file"),
    "detect-smi-fifo": _smi_case(None, "smi.csv:1:1: not a regular file"),
    "detect-smi-missing": Case("detect", ("--nvidia-smi-output", "{outside}/smi.csv"), 2, "smi.csv:1:1: no such file"),
    "detect-smi-folder": Case("detect", ("--nvidia-smi-output", "{outside}"), 2, "not a regular file"),
    "detect-smi-two-dots": _smi_case("NVIDIA H100, 81559\nNVIDIA H100, 1.2.3\n",
                                     "smi.csv:2:1: not a 'GPU name, memory MiB' row"),
    "detect-smi-superscript": _smi_case("NVIDIA H100, 8²\n", "smi.csv:1:1: not a 'GPU name, memory MiB' row"),
    "detect-smi-not-utf8": _smi_case(b"NVIDIA H100, \xff\n", "smi.csv:1:14: not UTF-8: byte 0xff"),
    "detect-smi-escape-in-name": _smi_case("NVIDIA\x1b[2J H100, 81559\n", "smi.csv:1:7: control character"),
    "detect-smi-not-available-is-skipped": _smi_case("NVIDIA H100, [N/A]\n", "", exit=0),
    "detect-sysfs-port-state-fifo": Case("detect", ("--sys-root", "{outside}/sys"), 2,
                                         "ports/1/state:1:1: not a regular file", setup=_ib_port("state", None)),
    "detect-sysfs-port-state-not-utf8": Case("detect", ("--sys-root", "{outside}/sys"), 2,
                                             "ports/1/state:1:4: not UTF-8", setup=_ib_port("state", b"4: \xffACTIVE\n")),
    "detect-preset-linked-outside": Case("detect", ("--preset", "presets/linked"), 2, "presets/linked/preset.yaml",
                                         setup=lambda p: _link(p.repo / "presets" / "linked", _preset_outside(p))),
    # --- 18. rank_bind.py: the rank runs; a doctored sysfs is said and not used -------------------
    "bind-cpulist-three-billion": Case("bind", (), 0, "range '0-3000000000' is reversed or above CPU 65535",
                                       setup=_sysfs(b"0-3000000000\n")),
    "bind-cpulist-reversed": Case("bind", (), 0, "range '5-2' is reversed", setup=_sysfs(b"5-2\n")),
    "bind-cpulist-non-ascii": Case("bind", (), 0, "local_cpulist: byte 0xc3 at offset 3 is not ASCII",
                                   setup=_sysfs("0-1é\n".encode())),
    "bind-cpulist-arabic-digits": Case("bind", (), 0, "is not ASCII", setup=_sysfs("٠-١\n".encode())),
    "bind-cpulist-words": Case("bind", (), 0, "'x' is not a CPU number or range", setup=_sysfs(b"0,x\n")),
    "bind-cpulist-fifo": Case("bind", (), 0, "local_cpulist: not a regular file", setup=_sysfs(None)),
    "bind-node-cpulist-non-ascii": Case("bind", (), 0, "NUMA nodes unreadable", setup=_sysfs(node1=b"1\xff\n")),
    "bind-node-cpulist-fifo": Case("bind", (), 0, "NUMA nodes unreadable", setup=_sysfs(node1=None)),
    "bind-bus-id-leaves-sysfs": Case("bind", (), 0, "not a PCI bus id", setup=_sysfs(bus_id="00000000:../../../../tmp")),
    "bind-local-rank-not-a-number": Case("bind", (), 0, "LOCAL_RANK '١' is not a number: not binding",
                                         setup=_sysfs(), env={"LOCAL_RANK": "١"}),
    "bind-cpulist-many-overlapping-ranges": Case("bind", (), 0, "NUMA node 0: CPUs 0",
                                                 setup=_sysfs(",".join(["0-65535"] * 500).encode() + b"\n")),
}


def run_case(case: Case, tmp_path: Path) -> tuple[Place, subprocess.CompletedProcess]:
    place = Place(tmp_path / "repo", tmp_path / "outside")
    for rel in _tracked("presets", "README.md"):
        (place.repo / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, place.repo / rel)
    (place.repo / ".git").mkdir()
    place.outside.mkdir()
    if case.setup:
        case.setup(place)
    if (place.repo / "presets").is_dir():
        place.presets_before = sorted(os.listdir(place.repo / "presets"))

    def fill(text: str) -> str:
        return text.replace("{outside}", str(place.outside)).replace("{repo}", str(place.repo))

    args = [fill(a) for a in case.args]
    env = {**os.environ, "PYTHON": sys.executable, **{k: fill(v) for k, v in case.env.items()}}
    if case.tool == "validator":
        command = [sys.executable, "-m", "validator", *args]
    elif case.tool == "detect":
        command = [str(ROOT / "scripts" / "detect-topology"), *args]
    else:
        report = "import os; print('program ran on', sorted(os.sched_getaffinity(0))[:4])"
        command = [sys.executable, "-m", "smoke.rank_bind", "-c", report]
        env.update({"SMOKE_SYSFS_ROOT": str(place.outside / "sysfs"), "LOCAL_RANK": "0", "CUDA_VISIBLE_DEVICES": "0",
                    "PATH": f"{place.outside / 'bin'}:{os.environ['PATH']}", **case.env})
    cwd = fill(case.cwd) if case.cwd.startswith("{") else place.repo / case.cwd
    try:
        proc = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S,
                              errors="surrogateescape", preexec_fn=_bounded)
    except subprocess.TimeoutExpired:
        pytest.fail(f"no result within {TIMEOUT_S} s (a FIFO opened, or unbounded work)")
    return place, proc


@pytest.mark.parametrize("name", sorted(CASES))
def test_hostile_tool_input(name, tmp_path):
    case = CASES[name]
    place, proc = run_case(case, tmp_path)
    printed = proc.stdout + proc.stderr
    assert "Traceback" not in printed, printed[-2000:]
    assert (proc.returncode, case.message in printed) == (case.exit, True), printed[-2000:]
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f]", printed), "raw control character printed"
    if case.exit == 2:  # a usage error is one line, said as an error
        assert proc.stderr.count("\n") == 1 and proc.stdout == "", printed
    if case.tool == "bind":
        assert "program ran on" in proc.stdout  # the rank runs whatever sysfs holds
    if case.after:
        case.after(place, proc)


def test_the_corpus_covers_every_item():
    prefixes = {name.split("-")[0] for name in CASES}
    assert prefixes == {"new", "matrix", "config", "detect", "bind"}
    assert len(CASES) >= 60


CPULIST_CHECK = """
from smoke import rank_bind
try:
    rank_bind.parse_cpulist("0-3000000000")
except ValueError as exc:
    assert "above CPU 65535" in str(exc), exc
else:
    raise AssertionError("accepted")
assert rank_bind.parse_cpulist(",".join(["0-65535"] * 500)) == set(range(65536))
assert rank_bind.parse_cpulist("0-3,8,10-11,2,") == {0, 1, 2, 3, 8, 10, 11}
assert rank_bind.parse_cpulist("") == set()
"""


def test_cpulists_are_bounded_and_merged():
    """0-3000000000 is refused before anything is expanded (it ran until killed); overlapping ranges
    are merged first. In its own process under the memory bound: a regression fails, the machine not."""
    proc = subprocess.run([sys.executable, "-c", CPULIST_CHECK], capture_output=True,
                          text=True, timeout=TIMEOUT_S, preexec_fn=_bounded)
    assert proc.returncode == 0, proc.stderr[-2000:]
